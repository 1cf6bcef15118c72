"""Reading the newest WAL frames backwards, from the end of a snapshot's WAL files.

A forward scan reads and checks the whole WAL (up to 32 MiB); a reader that only wants what
was appended since its last call (an agent that records an outcome, then asks for advice)
would pay that every time. Every frame ends with its own size, so the newest frames can be
read from the end: the cost is that of the new events.

Whenever something is not as expected (a torn tail being written, a gap in the seqs, many
frames to read) this gives up, and the caller falls back to the forward scan, which is the
authority on what the WAL holds.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from . import _frames as fr
from ._wal import WalFile, check_header

#: Past this many frames a forward scan is cheaper than reading backwards.
MAX_BACKWARD_FRAMES = 256


def frames_after(wals: Sequence[WalFile], threshold: int) -> tuple[int, list[fr.Frame]] | None:
    """``(head seq, committed frames holding seqs > threshold, oldest first)``, or None.

    None means "scan forward": the tail is being written, or is far away. A WAL without a
    committed frame gives head 0.
    """
    newest: list[fr.Frame] = []  # newest first
    head: int | None = None
    for wal in reversed(wals):
        check_header(os.pread(wal.fd, fr.FILE_HEADER.size, 0), wal.path, wal.base)
        end = wal.size
        while end > fr.FILE_HEADER.size:
            frame = _frame_ending_at(wal, end)
            if frame is None:
                return None  # a torn tail being written: let the forward scan decide
            end -= fr.frame_size(frame)
            if head is None and not frame.end:
                continue  # not committed yet (the rest of its append is still coming)
            if head is None:
                head = frame.last_seq
            if frame.last_seq <= threshold:
                return _checked(head, threshold, newest)
            newest.append(frame)
            if len(newest) > MAX_BACKWARD_FRAMES:
                return None
    if head is None:
        return 0, []  # no committed frame in the WAL
    return None  # the WAL ran out before the threshold: odd, let the forward scan decide


def _frame_ending_at(wal: WalFile, end: int) -> fr.Frame | None:
    if end - fr.FILE_HEADER.size < fr.OVERHEAD:
        return None
    (size,) = fr.FOOTER.unpack(os.pread(wal.fd, fr.FOOTER.size, end - fr.FOOTER.size))
    start = end - size
    if size < fr.OVERHEAD or start < fr.FILE_HEADER.size:
        return None
    frame = fr.parse_at(os.pread(wal.fd, size, start), 0, size)
    return None if frame is None else frame._replace(offset=start)


def _checked(
    head: int, threshold: int, newest: list[fr.Frame]
) -> tuple[int, list[fr.Frame]] | None:
    """The frames, oldest first, if they hold every seq from ``threshold + 1`` to ``head``."""
    frames = newest[::-1]
    if not frames:
        return head, frames
    if frames[0].seq > threshold + 1:
        return None
    expect = frames[0].seq
    for f in frames:
        if f.seq != expect:
            return None
        expect = f.seq + f.n
    return (head, frames) if expect == head + 1 else None
