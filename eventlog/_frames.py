"""WAL framing: checksummed, length-prefixed and length-suffixed records.

A WAL file is a 16-byte header (magic, base seq) followed by frames::

    crc32 u32 | length|END u32 | seq u64 | body (msgpack) | frame size u32

The CRC covers everything after itself. ``END`` marks the last frame of one append call:
recovery keeps only whole appends, so a batch (a dream cycle, an NDJSON import) is atomic.
The trailing size lets a writer find the newest seq by reading the file backwards, so a cold
process appends without scanning the WAL.
"""

from __future__ import annotations

import struct
import zlib
from typing import NamedTuple

MAGIC = b"EVLWAL01"
FILE_HEADER = struct.Struct("<8sQ")
HEADER = struct.Struct("<IIQ")
FOOTER = struct.Struct("<I")
OVERHEAD = HEADER.size + FOOTER.size
END = 1 << 31
LENGTH_MASK = END - 1


def file_header(base_seq: int) -> bytes:
    """The header of a WAL file whose first record will have ``base_seq``."""
    return FILE_HEADER.pack(MAGIC, base_seq)


def read_base(header: bytes) -> int | None:
    """The base seq of a WAL file header, or None if it is not one."""
    if len(header) < FILE_HEADER.size:
        return None
    magic, base = FILE_HEADER.unpack_from(header)
    return int(base) if magic == MAGIC else None


_unpack_header = HEADER.unpack_from
_unpack_footer = FOOTER.unpack_from
_crc32 = zlib.crc32


def encode_frames(items: list[tuple[int, bytes]]) -> bytes:
    """Frame ``(seq, body)`` pairs as one atomic append (END on the last)."""
    out = bytearray()
    last = len(items) - 1
    for i, (seq, body) in enumerate(items):
        word = len(body) | (END if i == last else 0)
        tail = struct.pack("<IQ", word, seq)
        footer = FOOTER.pack(len(body) + OVERHEAD)
        crc = zlib.crc32(footer, zlib.crc32(body, zlib.crc32(tail)))
        out += struct.pack("<I", crc)
        out += tail
        out += body
        out += footer
    return bytes(out)


class Frame(NamedTuple):
    offset: int
    seq: int
    body: bytes
    end: bool


def parse_at(buf: bytes | memoryview, offset: int, limit: int) -> Frame | None:
    """The valid frame starting at ``offset`` (not past ``limit``), or None."""
    if offset + OVERHEAD > limit:
        return None
    crc, word, seq = _unpack_header(buf, offset)
    size = (word & LENGTH_MASK) + OVERHEAD
    end = offset + size
    if end > limit:
        return None
    view = memoryview(buf)
    # Header tail, body and footer are contiguous: one CRC call over one slice, no copies.
    if _crc32(view[offset + 4 : end]) != crc or _unpack_footer(buf, end - 4)[0] != size:
        return None
    return Frame(offset, seq, bytes(view[offset + HEADER.size : end - 4]), bool(word & END))


def frame_size(frame: Frame) -> int:
    return len(frame.body) + OVERHEAD


class ScanResult(NamedTuple):
    frames: list[Frame]  # committed frames only (up to the last END)
    committed_end: int  # byte offset just past the last committed frame
    stopped_at: int  # where the first invalid frame (or EOF) was met


def scan(buf: bytes | memoryview, start: int, limit: int) -> ScanResult:
    """Read valid frames from ``start``; keep whole appends only."""
    committed: list[Frame] = []
    pending: list[Frame] = []
    offset = start
    committed_end = start
    view = memoryview(buf)
    # The hot loop of sealing and replay: parse_at inlined, no per-frame helper calls.
    while offset + OVERHEAD <= limit:
        crc, word, seq = _unpack_header(buf, offset)
        end = offset + (word & LENGTH_MASK) + OVERHEAD
        if end > limit or _crc32(view[offset + 4 : end]) != crc:
            break
        if _unpack_footer(buf, end - 4)[0] != end - offset:
            break
        pending.append(Frame(offset, seq, bytes(view[offset + 16 : end - 4]), word >= END))
        offset = end
        if word & END:
            committed.extend(pending)
            pending.clear()
            committed_end = offset
    return ScanResult(committed, committed_end, offset)


def valid_frame_after(buf: bytes | memoryview, offset: int, limit: int, seq: int) -> int | None:
    """Offset of a valid frame with seq >= ``seq`` somewhere after ``offset``, else None.

    A torn tail is garbage up to EOF. A valid frame *after* a bad one means bytes in the
    middle of the log changed: that is corruption, and must not be cut away silently.
    """
    data = bytes(buf[offset:limit])
    for probe in range(seq, seq + 64):
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
