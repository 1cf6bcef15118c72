"""WAL framing: checksummed, length-prefixed and length-suffixed records.

A WAL file is a 16-byte header (magic, base seq) followed by frames::

    crc32 u32 | length|END u32 | seq u64 | count u32 | body | frame size u32

A frame holds ``count`` events with seqs ``seq .. seq+count-1``; its body is their msgpack
encodings back to back (prefixed with an array header, the body decodes as a list). One
frame per append call, up to :data:`MAX_FRAME_BODY` bytes: per-frame work (a header, a CRC
call, a Python object when reading) is paid per batch, not per event, which is what lets
group commit and sealing run at the speed of msgspec rather than of a Python loop.

The CRC covers everything after itself. ``END`` marks the last frame of one append call:
recovery keeps only whole appends, so a batch too big for one frame (a dream cycle, an
NDJSON import) is still atomic. The trailing size lets a writer find the newest seq by
reading the file backwards, so a cold process appends without scanning the WAL.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from typing import NamedTuple

import msgspec

MAGIC = b"EVLWAL02"
OLD_MAGIC = b"EVLWAL01"  # one event per frame, no count: written by evolog 0.1
FILE_HEADER = struct.Struct("<8sQ")
HEADER = struct.Struct("<IIQI")
FOOTER = struct.Struct("<I")
OVERHEAD = HEADER.size + FOOTER.size
END = 1 << 31
LENGTH_MASK = END - 1
#: Bodies are cut into frames of about this size: big enough that per-frame costs vanish,
#: small enough that a cold writer reads only the last frame to find the newest seq.
MAX_FRAME_BODY = 1 << 20


def file_header(base_seq: int) -> bytes:
    """The header of a WAL file whose first record will have ``base_seq``."""
    return FILE_HEADER.pack(MAGIC, base_seq)


def read_base(header: bytes | memoryview) -> int | None:
    """The base seq of a WAL file header, or None if it is not one."""
    if len(header) < FILE_HEADER.size:
        return None
    magic, base = FILE_HEADER.unpack_from(header)
    return int(base) if magic == MAGIC else None


_unpack_header = HEADER.unpack_from
_unpack_footer = FOOTER.unpack_from
_crc32 = zlib.crc32


def encode_frames(items: list[tuple[int, bytes]]) -> bytes:
    """Frame consecutive ``(seq, body)`` pairs as one atomic append (END on the last frame)."""
    return frame_bodies(items[0][0], [b for _, b in items])


def frame_bodies(seq: int, bodies: list[bytes]) -> bytes:
    """Frame the bodies of events ``seq, seq+1, ...`` as one atomic append."""
    if len(bodies) == 1:
        return _frame(seq, 1, bodies[0], True)
    if sum(map(len, bodies)) <= MAX_FRAME_BODY:  # a group commit: one frame, no per-body loop
        return _frame(seq, len(bodies), b"".join(bodies), True)
    out = bytearray()
    limit = MAX_FRAME_BODY
    start = 0
    while start < len(bodies):
        stop, size = start + 1, len(bodies[start])
        while stop < len(bodies) and size + len(bodies[stop]) <= limit:
            size += len(bodies[stop])
            stop += 1
        body = b"".join(bodies[start:stop])
        out += _frame(seq + start, stop - start, body, stop == len(bodies))
        start = stop
    return bytes(out)


def _frame(seq: int, count: int, body: bytes, last: bool) -> bytes:
    tail = struct.pack("<IQI", len(body) | (END if last else 0), seq, count)
    footer = FOOTER.pack(len(body) + OVERHEAD)
    crc = _crc32(footer, _crc32(body, _crc32(tail)))
    return b"".join((struct.pack("<I", crc), tail, body, footer))


class Frame(NamedTuple):
    offset: int
    seq: int  # of the first event
    body: bytes | memoryview  # ``count`` msgpack encodings back to back
    end: bool
    n: int  # events in it

    @property
    def last_seq(self) -> int:
        return self.seq + self.n - 1


def parse_at(buf: bytes | memoryview, offset: int, limit: int) -> Frame | None:
    """The valid frame starting at ``offset`` (not past ``limit``), or None."""
    if offset + OVERHEAD > limit:
        return None
    crc, word, seq, count = _unpack_header(buf, offset)
    size = (word & LENGTH_MASK) + OVERHEAD
    end = offset + size
    if end > limit or count == 0:
        return None
    view = memoryview(buf)
    # Header tail, body and footer are contiguous: one CRC call over one slice, no copies.
    if _crc32(view[offset + 4 : end]) != crc or _unpack_footer(buf, end - 4)[0] != size:
        return None
    body = bytes(view[offset + HEADER.size : end - 4])
    return Frame(offset, seq, body, bool(word & END), count)


def frame_size(frame: Frame) -> int:
    return len(frame.body) + OVERHEAD


class ScanResult(NamedTuple):
    frames: list[Frame]  # committed frames only (up to the last END)
    committed_end: int  # byte offset just past the last committed frame
    stopped_at: int  # where the first invalid frame (or EOF) was met


def scan(buf: bytes | memoryview, start: int, limit: int, copy: bool = True) -> ScanResult:
    """Read valid frames from ``start``; keep whole appends only. Without ``copy`` the
    frame bodies are views of ``buf``."""
    committed: list[Frame] = []
    pending: list[Frame] = []
    offset = start
    committed_end = start
    view = memoryview(buf)
    # The hot loop of sealing and replay: parse_at inlined, no per-frame helper calls.
    while offset + OVERHEAD <= limit:
        crc, word, seq, count = _unpack_header(buf, offset)
        end = offset + (word & LENGTH_MASK) + OVERHEAD
        if end > limit or count == 0 or _crc32(view[offset + 4 : end]) != crc:
            break
        if _unpack_footer(buf, end - 4)[0] != end - offset:
            break
        body = view[offset + HEADER.size : end - 4]
        pending.append(Frame(offset, seq, bytes(body) if copy else body, word >= END, count))
        offset = end
        if word & END:
            committed.extend(pending)
            pending.clear()
            committed_end = offset
    return ScanResult(committed, committed_end, offset)


def damage(buf: bytes | memoryview, stopped_at: int, limit: int, seq: int) -> str | None:
    """Why the bad bytes at ``stopped_at`` (where :func:`scan` stopped short of ``limit``)
    are damage rather than a torn tail, or None for a torn tail.

    A torn write is a short frame: the file ends inside it. A whole frame that fails its
    checksum, or valid frames after a bad one, mean bytes changed in place: cutting them
    would drop acknowledged events and hand their seqs out again. ``seq``: the seq after
    the last whole frame before ``stopped_at``.
    """
    if _whole_frame_at(buf, stopped_at, limit):
        return f"bad frame at byte {stopped_at}: a whole frame whose checksum does not match"
    after = valid_frame_after(buf, stopped_at + 1, limit, seq)
    if after is not None:
        return f"bad frame at byte {stopped_at} followed by a valid frame at byte {after}"
    return None


def _whole_frame_at(buf: bytes | memoryview, offset: int, limit: int) -> bool:
    """Whether a frame of full length starts at ``offset``, whatever its checksum says."""
    if offset + OVERHEAD > limit:
        return False
    _, word, _, count = _unpack_header(buf, offset)
    end = offset + (word & LENGTH_MASK) + OVERHEAD
    if count and end <= limit and (end == limit or _unpack_footer(buf, end - 4)[0] == end - offset):
        return True  # all its bytes are there: its length ends at EOF or at its own footer
    # Or its length word is the damaged part: the file's last footer points back here.
    return bool(_unpack_footer(buf, limit - 4)[0] == limit - offset)


def valid_frame_after(buf: bytes | memoryview, offset: int, limit: int, seq: int) -> int | None:
    """Offset of a valid frame with seq >= ``seq`` somewhere after ``offset``, else None.

    A torn tail is garbage up to EOF. A valid frame *after* a bad one means bytes in the
    middle of the log changed: that is corruption, and must not be cut away silently.
    Looked for where a following frame would be: at the end of the file (found through the
    last footer), and by its seq, which is ``seq`` plus the bad frame's count when its
    header survived, or a little past ``seq`` otherwise.
    """
    last = last_frame(buf, offset, limit)
    if last is not None and last.offset > offset and last.seq >= seq:
        return last.offset
    probes = list(range(seq, seq + 64))
    if offset - 1 + HEADER.size <= limit:
        _, _, bad_seq, bad_count = _unpack_header(buf, offset - 1)
        if bad_seq == seq and bad_count > 0:
            probes.insert(0, seq + bad_count)
    data = bytes(buf[offset:limit])
    for probe in probes:
        needle = struct.pack("<Q", probe)
        pos = data.find(needle)
        while pos != -1:
            start = offset + pos - 8
            if start > offset and parse_at(buf, start, limit) is not None:
                return start
            pos = data.find(needle, pos + 1)
    return None


def last_frame(buf: bytes | memoryview, start: int, limit: int) -> Frame | None:
    """The frame ending exactly at ``limit``, found through its footer, or None."""
    if limit - start < OVERHEAD:
        return None
    (size,) = FOOTER.unpack_from(buf, limit - FOOTER.size)
    offset = limit - size
    if size < OVERHEAD or offset < start:
        return None
    return parse_at(buf, offset, limit)


def array_header(count: int) -> bytes:
    """A msgpack array header: prefixed to bodies, they decode as one list."""
    return b"\xdd" + count.to_bytes(4, "big")


_raw_list = msgspec.msgpack.Decoder(list[msgspec.Raw])


def events_data(frames: Sequence[Frame], after: int = 0) -> tuple[int, bytes]:
    """``(count, msgpack array)`` of the events with seq > ``after`` in consecutive frames."""
    parts: list[bytes | memoryview] = []
    count = 0
    for f in frames:
        if f.last_seq <= after:
            continue
        if f.seq > after:
            parts.append(f.body)
            count += f.n
            continue
        # ``after`` falls inside this frame: split its body into events (a scan of the
        # msgpack structure, no objects built) and keep the newer ones.
        raws = _raw_list.decode(array_header(f.n) + f.body)[after - f.seq + 1 :]
        parts.extend(bytes(r) for r in raws)
        count += len(raws)
    return count, array_header(count) + b"".join(parts)
