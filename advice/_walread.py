"""The WAL frames past a seq, read backwards from the end of the snapshot's WAL files.

``Snapshot.tail_frames()`` reads and checks the whole WAL (up to 32 MiB, about 100k events)
every time; an agent that appends an outcome and then asks for advice would pay that on
every call. A frame ends with its own size, so the newest frames can be read from the end:
the cost is then proportional to the events appended since the last call. Frames after the
last end-of-append mark are not committed and are skipped, exactly as a forward scan does.

Whenever something is not as expected — a torn tail being written, a gap in the seqs, many
frames to read — this gives up and the caller falls back to the forward scan, which is the
authority. (This reads the snapshot's WAL descriptors, an eventlog internal; a public
``Snapshot.tail_frames(after=...)`` in eventlog would make it unnecessary.)
"""

from __future__ import annotations

import os

from eventlog import Snapshot
from eventlog._frames import FILE_HEADER, FOOTER, OVERHEAD, Frame, parse_at

#: Past this many frames a forward scan of the WAL is cheaper than reading backwards.
MAX_BACKWARD_FRAMES = 2000


def _backward(snap: Snapshot, threshold: int) -> tuple[int, list[Frame]] | None:
    wals = getattr(snap, "_wals", None)
    if wals is None:
        return None
    newest: list[Frame] = []  # newest first
    head: int | None = None
    for wal in reversed(wals):
        end = wal.size
        while end > FILE_HEADER.size:
            if end - FILE_HEADER.size < OVERHEAD:
                return None
            (size,) = FOOTER.unpack(os.pread(wal.fd, FOOTER.size, end - FOOTER.size))
            start = end - size
            if size < OVERHEAD or start < FILE_HEADER.size:
                return None
            frame = parse_at(os.pread(wal.fd, size, start), 0, size)
            if frame is None:
                return None  # a torn tail being written: let the forward scan decide
            end = start
            if head is None and not frame.end:
                continue  # not committed yet (the rest of its append is still coming)
            if head is None:
                head = frame.seq
            if frame.seq <= threshold:
                return head, newest[::-1]
            newest.append(frame)
            if len(newest) > MAX_BACKWARD_FRAMES:
                return None
    if head is None:
        return threshold, []  # no committed frame past the sealed segments
    return None  # ran out of WAL before reaching the threshold: unexpected


def frames_after(snap: Snapshot, after: int) -> tuple[int, list[Frame]]:
    """(head seq, committed WAL frames with seq > ``after``, oldest first) of a snapshot."""
    threshold = max(after, snap.manifest.sealed_seq)
    found = _backward(snap, threshold)
    if found is not None:
        head, frames = found
        if [f.seq for f in frames] == list(range(threshold + 1, head + 1)):
            return head, frames
    frames = [f for f in snap.tail_frames() if f.seq > after]
    return snap.head_seq, frames
