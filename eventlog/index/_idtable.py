"""One table file of the id index: a header, then open-addressing slots (see
:mod:`evolog.eventlog.index._idindex`), checked when mapped and on every probe.

Slot: a 16-byte key (BLAKE2b-128 of the id), then a u64 holding the seq (48 bits) and 16
check bits of key and seq (:func:`slot_check`). A lookup checks each slot it passes, so a
flipped bit on the way to an id is reported (-1) rather than answered. The header carries a
checksum of all its fields, rewritten with them (a few times per 64 appends at most).
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Callable

try:
    # _blake2 directly: importing hashlib initialises OpenSSL, a few ms on every hook call.
    from _blake2 import blake2b as blake2b
except ImportError:  # _blake2 is CPython's private module: PyPy and others have hashlib's
    from hashlib import blake2b as blake2b

from .._errors import CorruptLogError

#: The slot layout written here and by the C insert (check bits above a 48-bit seq).
SLOT_FORMAT = 2

_native_insert: Callable[[mmap.mmap, int, int, list[tuple[bytes | str, int]]], int] | None
_native_key: Callable[[str], bytes] | None
try:  # slot inserts and keys in C, when the extension was built (a small library to load)
    from .._native import INDEX_SLOT_FORMAT as _NATIVE_FORMAT
    from .._native import index_insert as _native_insert
    from .._native import index_key as _native_key
except ImportError:
    _native_insert = _native_key = None
else:
    if _NATIVE_FORMAT != SLOT_FORMAT:  # pragma: no cover - a stale build of the extension
        _native_insert = _native_key = None

MAGIC = b"EVLIDX02"
# magic, ntables, covered_seq, synced_seq, boot_id(16), count (per table), stamp,
# suspect_after + 1 (0: none), checksum (per table); the rest of HEADER_SIZE is zeros.
HEADER = struct.Struct("<8sQQQ16sQ8sQ8s")
HEADER_SIZE = 128
SLOT = 24
FIRST_BITS = 16
#: Tables double in size: past this many the files would not fit on any disk.
MAX_TABLES = 32
MAX_LOAD = 0.7
SEQ_BITS = 48  # the rest of a slot's seq field is its check
_SEQ_MASK = (1 << SEQ_BITS) - 1
_M64 = (1 << 64) - 1
_SEQ = struct.Struct("<Q")
_HALVES = struct.Struct("<QQ").unpack
_HOME = _SEQ.unpack_from  # a key's first 8 bytes pick its home slot
_COUNT_AT = 48
_STAMP_AT = 56  # 8 bytes naming the store this index belongs to (see store_stamp)
_SUSPECT_AT = 64
_CHECK_AT = 72
_ZERO_SEQ = b"\0" * 8


class IndexDamage(CorruptLogError):
    """A table of the index failed its checks (the writer rebuilds the index from the log)."""


def slot_check(key: bytes, seq: int) -> int:
    """The 16 check bits stored above a slot's seq (the C insert computes the same):
    murmur3's finaliser of the key's halves and the seq; never 0, so a filled slot cannot
    read as empty after one flipped bit."""
    a, b = _HALVES(key)
    x = a ^ b ^ seq
    x ^= x >> 33
    x = (x * 0xFF51AFD7ED558CCD) & _M64
    x ^= x >> 33
    x = (x * 0xC4CEB9FE1A85EC53) & _M64
    x ^= x >> 33
    return (x >> 48) or 1


def _field(key: bytes, seq: int) -> bytes:
    if not 0 < seq <= _SEQ_MASK:
        raise ValueError(f"id index: expected 0 < seq < 2**{SEQ_BITS}; got {seq}")
    return _SEQ.pack(seq | slot_check(key, seq) << SEQ_BITS)


def key_of(event_id: str) -> bytes:
    """The 16-byte index key of an id: BLAKE2b-128 of its UTF-8."""
    if _native_key is not None:
        return _native_key(event_id)
    return blake2b(event_id.encode("utf-8", "surrogatepass"), digest_size=16).digest()


_ZEROS = bytes(1 << 20)


def _zero_fill(fd: int, start: int, end: int) -> None:
    while start < end:
        n = os.pwrite(fd, _ZEROS[: min(len(_ZEROS), end - start)], start)
        start += n


def header_checksum(head: bytes) -> bytes:
    """The 8-byte checksum of a table header's first ``_CHECK_AT`` bytes."""
    return blake2b(head[:_CHECK_AT], digest_size=8).digest()


def header_sound(header: bytes) -> bool:
    """Whether ``header`` (a table's first bytes) is of this format and passes its check."""
    return (
        len(header) >= _CHECK_AT + 8
        and header[:8] == MAGIC
        and header[_CHECK_AT : _CHECK_AT + 8] == header_checksum(header)
    )


class _Table:
    def __init__(self, path: str, bits: int, create: bool) -> None:
        """Map one table; ``create`` makes (and zero-fills) a new one, otherwise the file
        must exist at its size. :class:`IndexDamage` if it fails its checks."""
        self.path = path
        self.capacity = 1 << bits
        self.mask = self.capacity - 1
        size = HEADER_SIZE + self.capacity * SLOT
        flags = os.O_RDWR | os.O_CLOEXEC | (os.O_CREAT if create else 0)
        try:
            fd = os.open(path, flags, 0o644)
        except FileNotFoundError:
            raise IndexDamage(f"{path}: a table the header lists is missing") from None
        try:
            self.ino = os.fstat(fd).st_ino
            have = os.fstat(fd).st_size
            if have != size and not (create and have == 0):
                raise IndexDamage(f"{path}: expected {size} bytes; got {have}")
            if have < size:
                # Written with zeros, not sparse: on a full disk, touching a hole of a
                # shared mapping kills the process with SIGBUS, whereas writing fails
                # cleanly (ENOSPC). (Zeros rather than fallocate: no "unwritten" extents.)
                _zero_fill(fd, have, size)
            self.mm = mmap.mmap(fd, size)
        finally:
            os.close(fd)
        magic = self.mm[:8]
        if magic == b"\0" * 8 and create:
            HEADER.pack_into(self.mm, 0, MAGIC, 1, 0, 0, bytes(16), 0, bytes(8), 0, bytes(8))
            self.seal()
        elif magic != MAGIC or not self.header_ok() or self.count > self.capacity:
            self.mm.close()
            what = "its header checksum" if magic == MAGIC else "its format"
            raise IndexDamage(f"{path}: the table fails {what}")

    def _checksum(self) -> bytes:
        return header_checksum(self.mm[:_CHECK_AT])

    def header_ok(self) -> bool:
        return self.mm[_CHECK_AT : _CHECK_AT + 8] == self._checksum()

    def seal(self) -> None:
        """Record the header's checksum after changing it."""
        self.mm[_CHECK_AT : _CHECK_AT + 8] = self._checksum()

    @property
    def count(self) -> int:
        return int(_SEQ.unpack_from(self.mm, _COUNT_AT)[0])

    def set_count(self, count: int) -> None:
        struct.pack_into("<Q", self.mm, _COUNT_AT, count)
        self.seal()

    def lookup(self, key: bytes) -> int:
        """The seq stored for ``key``, 0 if none, -1 if a slot on its way fails its check."""
        mm = self.mm
        i = int.from_bytes(key[:8], "little") & self.mask
        for _ in range(self.capacity):  # the load limit keeps free slots; never loop forever
            off = HEADER_SIZE + i * SLOT
            raw = mm[off + 16 : off + 24]
            if raw == _ZERO_SEQ:
                return 0
            field = int.from_bytes(raw, "little")
            here = mm[off : off + 16]
            seq = field & _SEQ_MASK
            if seq == 0 or field >> SEQ_BITS != slot_check(here, seq):
                return -1
            if here == key:
                return seq
            i = (i + 1) & self.mask
        return 0

    def insert(self, key: bytes, seq: int) -> None:
        mm = self.mm
        field = _field(key, seq)
        i = int.from_bytes(key[:8], "little") & self.mask
        for _ in range(self.capacity):  # a full table is damage, as in insert_many
            off = HEADER_SIZE + i * SLOT
            old = mm[off + 16 : off + 24]
            if old == _ZERO_SEQ or mm[off : off + 16] == key:
                if old == _ZERO_SEQ:
                    self.set_count(self.count + 1)  # counted before written (insert_many)
                mm[off : off + 16] = key
                mm[off + 16 : off + 24] = field
                return
            i = (i + 1) & self.mask
        raise IndexDamage(f"{self.path}: the table is full")

    def insert_many(self, items: list[tuple[str, int]] | list[tuple[bytes, int]]) -> None:
        """:meth:`insert` for many ``(key, seq)`` pairs (keys are ids when the C insert
        is there to hash them), the header's count written once."""
        before = self.count
        # The count is raised first, to an upper bound, and made exact after: a writer
        # killed between its slot writes and its count would otherwise leave filled slots
        # uncounted, and enough such crashes overfill a table the load limit thinks has
        # room (seen after 100 kill -9 rounds: "the table is full"). Too high is harmless.
        self.set_count(before + len(items))
        if _native_insert is not None:
            try:
                added = _native_insert(self.mm, HEADER_SIZE, self.mask, items)  # type: ignore[arg-type]
            except ValueError as exc:  # a full table: its count was wrong (an older index)
                raise IndexDamage(f"{self.path}: {exc}") from None
        else:
            added = self._insert_many(items)  # type: ignore[arg-type]
        self.set_count(before + added)

    def _insert_many(self, items: list[tuple[bytes, int]]) -> int:
        mm, mask, added = self.mm, self.mask, 0
        home = _HOME
        for key, seq in items:
            field = _field(key, seq)
            i = home(key)[0] & mask
            for _ in range(self.capacity):  # as the C insert: a full table is damage
                off = HEADER_SIZE + i * SLOT
                old = mm[off + 16 : off + 24]
                if old == _ZERO_SEQ:
                    mm[off : off + 24] = key + field
                    added += 1
                    break
                if mm[off : off + 16] == key:
                    mm[off + 16 : off + 24] = field
                    break
                i = (i + 1) & mask
            else:
                raise IndexDamage(f"{self.path}: the table is full")
        return added
