"""The idempotency index: event id -> seq, on disk, O(1) for a cold process.

A cache of the log (delete it and it is rebuilt), kept in memory-mapped open-addressing hash
tables of 24-byte slots (16-byte BLAKE2b of the id, then the seq; seq 0 means empty).
When a table passes its load limit a table twice its size is added instead of rehashing the
old ones, so no append ever waits for a rebuild; a lookup probes each table, newest first.

With 128-bit keys a false match needs about 2^64 ids, so a hit is trusted without reading
the event back (which would need the Parquet reader on the hook path).

Crash safety: slots are written key first, seq last, and ``covered_seq`` (the newest seq
whose id is in the index) only after them. A writer that finds ``covered_seq`` behind the
WAL re-inserts the missing ids. Page-cache writes survive kill -9; after a reboot (the
kernel boot id changed) anything newer than ``synced_seq`` (fsynced at seal) is re-inserted.

Trust: the header names its store (:func:`store_stamp`). The writer starts the index again,
and refills it from the log (sealed segments included), when it was deleted, belongs to
another store, or knows seqs the log does not have (a log restored from an older copy).
"""

from __future__ import annotations

import mmap
import os
import struct

# _blake2 directly: importing hashlib initialises OpenSSL, a few ms on every hook call.
from _blake2 import blake2b
from collections.abc import Callable

_native_insert: Callable[[mmap.mmap, int, int, list[tuple[bytes | str, int]]], int] | None
_native_key: Callable[[str], bytes] | None
try:  # slot inserts and keys in C, when the extension was built (a small library to load)
    from ._native import index_insert as _native_insert
    from ._native import index_key as _native_key
except ImportError:
    _native_insert = _native_key = None

MAGIC = b"EVLIDX01"
# magic, ntables, covered_seq, synced_seq, boot_id(16), count (per table)
HEADER = struct.Struct("<8sQQQ16sQ")
HEADER_SIZE = 64
SLOT = 24
FIRST_BITS = 16
MAX_LOAD = 0.7
_SEQ = struct.Struct("<Q")
_HOME = _SEQ.unpack_from  # a key's first 8 bytes pick its home slot
_COUNT_AT = 48
_STAMP_AT = 56  # 8 bytes naming the store this index belongs to (see store_stamp)
_ZERO_SEQ = b"\0" * 8


def key_of(event_id: str) -> bytes:
    """The 16-byte index key of an id: BLAKE2b-128 of its UTF-8."""
    if _native_key is not None:
        return _native_key(event_id)
    return blake2b(event_id.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def store_stamp(marker: str) -> bytes:
    """8 bytes identifying a store: its marker file's inode and mtime, hashed.

    An index whose stamp differs is a cache of some other store (or of a copy): it is
    rebuilt from the log. A copied store rebuilds its index once, which is only slower.
    """
    st = os.stat(marker)
    return blake2b(f"{st.st_ino}:{st.st_mtime_ns}".encode(), digest_size=8).digest()


def current_boot_id() -> bytes:
    try:
        with open("/proc/sys/kernel/random/boot_id", "rb") as f:
            return bytes.fromhex(f.read().strip().decode().replace("-", ""))[:16]
    except (OSError, ValueError):
        return b"\0" * 16


_ZEROS = bytes(1 << 20)


def _zero_fill(fd: int, start: int, end: int) -> None:
    while start < end:
        n = os.pwrite(fd, _ZEROS[: min(len(_ZEROS), end - start)], start)
        start += n


class _Table:
    def __init__(self, path: str, bits: int, create: bool) -> None:
        self.capacity = 1 << bits
        self.mask = self.capacity - 1
        size = HEADER_SIZE + self.capacity * SLOT
        flags = os.O_RDWR | os.O_CLOEXEC | (os.O_CREAT if create else 0)
        fd = os.open(path, flags, 0o644)
        try:
            self.ino = os.fstat(fd).st_ino
            # Written with zeros, not sparse: on a full disk, touching a hole of a shared
            # mapping kills the process with SIGBUS, whereas writing fails cleanly (ENOSPC).
            # (Zeros rather than fallocate: no "unwritten" extents left to convert later.)
            have = os.fstat(fd).st_size
            if have < size:
                _zero_fill(fd, have, size)
            self.mm = mmap.mmap(fd, size)
        finally:
            os.close(fd)
        if self.mm[:8] != MAGIC:
            HEADER.pack_into(self.mm, 0, MAGIC, 1, 0, 0, b"\0" * 16, 0)

    @property
    def count(self) -> int:
        return int(HEADER.unpack_from(self.mm, 0)[5])

    def lookup(self, key: bytes) -> int:
        mm = self.mm
        i = int.from_bytes(key[:8], "little") & self.mask
        for _ in range(self.capacity):  # the load limit keeps free slots; never loop forever
            off = HEADER_SIZE + i * SLOT
            seq = mm[off + 16 : off + 24]
            if seq == _ZERO_SEQ:
                return 0
            if mm[off : off + 16] == key:
                return int(_SEQ.unpack(seq)[0])
            i = (i + 1) & self.mask
        return 0

    def insert(self, key: bytes, seq: int) -> None:
        mm = self.mm
        i = int.from_bytes(key[:8], "little") & self.mask
        while True:
            off = HEADER_SIZE + i * SLOT
            old = mm[off + 16 : off + 24]
            if old == _ZERO_SEQ or mm[off : off + 16] == key:
                mm[off : off + 16] = key
                mm[off + 16 : off + 24] = _SEQ.pack(seq)
                if old == _ZERO_SEQ:
                    struct.pack_into("<Q", mm, _COUNT_AT, self.count + 1)
                return
            i = (i + 1) & self.mask

    def insert_many(self, items: list[tuple[str, int]] | list[tuple[bytes, int]]) -> None:
        """:meth:`insert` for many ``(key, seq)`` pairs (keys are ids when the C insert
        is there to hash them), the header's count written once."""
        if _native_insert is not None:
            added = _native_insert(self.mm, HEADER_SIZE, self.mask, items)  # type: ignore[arg-type]
        else:
            added = self._insert_many(items)  # type: ignore[arg-type]
        struct.pack_into("<Q", self.mm, _COUNT_AT, self.count + added)

    def _insert_many(self, items: list[tuple[bytes, int]]) -> int:
        mm, mask, added = self.mm, self.mask, 0
        home = _HOME
        pack = _SEQ.pack
        for key, seq in items:
            i = home(key)[0] & mask
            while True:
                off = HEADER_SIZE + i * SLOT
                old = mm[off + 16 : off + 24]
                if old == _ZERO_SEQ:
                    mm[off : off + 24] = key + pack(seq)
                    added += 1
                    break
                if mm[off : off + 16] == key:
                    mm[off + 16 : off + 24] = pack(seq)
                    break
                i = (i + 1) & mask
        return added


class IdIndex:
    """Lookups and inserts; the caller holds the store's write lock."""

    def __init__(self, directory: str) -> None:
        self._dir = directory
        os.makedirs(directory, exist_ok=True)
        self._first = self._path(0)
        self._tables: list[_Table] = [_Table(self._first, FIRST_BITS, create=True)]
        self._keys: dict[str, bytes] = {}
        self._open_new_tables()

    def _path(self, n: int) -> str:
        return os.path.join(self._dir, f"{n:03d}.idx")

    def _header(self) -> tuple[bytes, int, int, int, bytes, int]:
        return HEADER.unpack_from(self._tables[0].mm, 0)

    def _open_new_tables(self) -> None:
        ntables = self._header()[1]
        while len(self._tables) < ntables:
            n = len(self._tables)
            self._tables.append(_Table(self._path(n), FIRST_BITS + n, create=True))

    @property
    def covered_seq(self) -> int:
        return int(_SEQ.unpack_from(self._tables[0].mm, 16)[0])  # read on every append

    @property
    def synced_seq(self) -> int:
        return self._header()[3]

    @property
    def stamp(self) -> bytes:
        return bytes(self._tables[0].mm[_STAMP_AT : _STAMP_AT + 8])

    def is_current(self) -> bool:
        """False once the index files were deleted or replaced under this process."""
        try:
            return os.stat(self._first).st_ino == self._tables[0].ino
        except FileNotFoundError:
            return False

    def reset(self, stamp: bytes) -> None:
        """Drop every entry (delete the tables) and start an empty index for ``stamp``."""
        self.close()
        for name in os.listdir(self._dir):
            if name.endswith(".idx"):
                os.unlink(os.path.join(self._dir, name))
        self._tables = [_Table(self._path(0), FIRST_BITS, create=True)]
        self._tables[0].mm[_STAMP_AT : _STAMP_AT + 8] = stamp
        self._tables[0].mm[32:48] = current_boot_id()

    def set_covered(self, seq: int) -> None:
        struct.pack_into("<Q", self._tables[0].mm, 16, seq)

    def check_boot(self) -> None:
        """After a reboot, distrust everything not fsynced at the last seal."""
        boot = current_boot_id()
        if self._header()[4] != boot:
            self.set_covered(min(self.covered_seq, self.synced_seq))
            self._tables[0].mm[32:48] = boot

    def lookup(self, event_id: str, limit_seq: int) -> int:
        """The seq of ``event_id``, or 0; entries at or past ``limit_seq`` are stale."""
        self._open_new_tables()
        key = key_of(event_id)
        for table in reversed(self._tables):
            seq = table.lookup(key)
            if seq and seq < limit_seq:
                return seq
            if seq:
                break
        if _native_insert is None:
            # A miss is inserted next (an append looks ids up, then inserts the new ones):
            # keep its hash. The bound only guards against callers that look up without
            # inserting. (The C insert hashes ids itself, faster than this dict.)
            if len(self._keys) > 1 << 17:
                self._keys.clear()
            self._keys[event_id] = key
        return 0

    def insert_many(self, items: list[tuple[str, int]]) -> None:
        """Insert ``(id, seq)`` pairs (the ids of one append, in seq order)."""
        self._open_new_tables()
        keys = self._keys
        pos = 0
        while pos < len(items):
            table = self._tables[-1]
            room = int(table.capacity * MAX_LOAD) - table.count
            if room <= 0:
                self.insert(*items[pos])  # adds the next, bigger table
                pos += 1
                continue
            chunk = items[pos : pos + room]
            if _native_insert is None:
                pop = keys.pop
                table.insert_many([(pop(e, b"") or key_of(e), s) for e, s in chunk])
            else:
                table.insert_many(chunk)
            pos += len(chunk)

    def insert(self, event_id: str, seq: int) -> None:
        self._open_new_tables()
        table = self._tables[-1]
        if table.count + 1 > table.capacity * MAX_LOAD:
            n = len(self._tables)
            table = _Table(self._path(n), FIRST_BITS + n, create=True)
            self._tables.append(table)
            struct.pack_into("<Q", self._tables[0].mm, 8, n + 1)
        key = self._keys.pop(event_id, None) or key_of(event_id)
        table.insert(key, seq)

    def sync(self, seq: int) -> None:
        """Flush every table to disk and record that ids up to ``seq`` are durable."""
        self._open_new_tables()
        for table in self._tables:
            table.mm.flush()
        struct.pack_into("<Q", self._tables[0].mm, 24, seq)
        self._tables[0].mm.flush()

    def close(self) -> None:
        for table in self._tables:
            table.mm.close()
        self._tables.clear()
