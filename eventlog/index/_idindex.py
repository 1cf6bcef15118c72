"""The idempotency index: event id -> seq, on disk, O(1) for a cold process.

A cache of the log (delete it and it is rebuilt), kept in memory-mapped open-addressing hash
tables of 24-byte slots (16-byte BLAKE2b of the id, then the seq; seq 0 means empty).
When a table passes its load limit a table twice its size is added instead of rehashing the
old ones, so no append ever waits for a rebuild; a lookup probes each table, newest first.

A slot's seq field holds the seq (48 bits) and 16 check bits of key and seq (see
:mod:`eventlog.index._idtable`): a lookup checks every slot it passes, so a flipped bit in a key
or a seq on the way to an id is found (the caller rebuilds the index from the log) instead
of answering wrongly.

Crash safety: slots are written key first, seq last, and ``covered_seq`` (the newest seq
whose id is in the index) only after them. A writer that finds ``covered_seq`` behind the
WAL re-inserts the missing ids. Page-cache writes survive kill -9; after a reboot (the
kernel boot id changed) anything newer than ``synced_seq`` (fsynced at seal) is re-inserted.

Trust: the index is a cache, checked rather than believed. Each table's header carries a
checksum, checked on open together with its bounds (table count, sizes, fill counts);
tables are never created or zero-filled on the word of a header that fails its check. The
header names its store (:func:`store_stamp`). The writer starts the index again, and
refills it from the log (sealed segments included), when it was deleted, is damaged,
belongs to another store, or knows seqs the log does not have (a log restored from an older
copy). After a reboot, slots of events a power cut took from the WAL may have reached the
disk: hits past the last fsynced seq are then confirmed against the log (``suspect_after``).
"""

from __future__ import annotations

import os
import struct

from . import _idtable
from ._idtable import (
    _SEQ,
    _STAMP_AT,
    _SUSPECT_AT,
    FIRST_BITS,
    HEADER,
    HEADER_SIZE,
    MAX_LOAD,
    MAX_TABLES,
    SLOT,
    IndexDamage,
    _Table,
    blake2b,
    header_sound,
    key_of,
)

__all__ = [
    "HEADER_SIZE",
    "SLOT",
    "IdIndex",
    "IndexDamage",
    "current_boot_id",
    "header_sound",
    "key_of",
    "store_stamp",
]


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


class IdIndex:
    """Lookups and inserts; the caller holds the store's write lock.

    An index that fails its checks on open has ``damage`` set (why) and no tables: the
    caller resets it and refills it from the log.
    """

    def __init__(self, directory: str) -> None:
        self._dir = directory
        os.makedirs(directory, exist_ok=True)
        self._first = self._path(0)
        self._keys: dict[str, bytes] = {}
        self.damage: str | None = None
        self._tables: list[_Table] = []
        try:
            self._tables.append(_Table(self._first, FIRST_BITS, create=True))
            self._open_new_tables()
        except IndexDamage as exc:
            self.close()
            self.damage = str(exc)

    def _path(self, n: int) -> str:
        return os.path.join(self._dir, f"{n:03d}.idx")

    def _header(self) -> tuple[bytes, int, int, int, bytes, int, bytes, int, bytes]:
        return HEADER.unpack_from(self._tables[0].mm, 0)

    def _open_new_tables(self) -> None:
        ntables = self._header()[1]
        if ntables == len(self._tables):
            return
        # Another writer added a table, or the header is wrong: believe it only if it
        # passes its checks (a flipped bit in the count would otherwise have us create
        # and zero-fill tables of hundreds of megabytes).
        if not (len(self._tables) < ntables <= MAX_TABLES and self._tables[0].header_ok()):
            raise IndexDamage(f"{self._first}: the header lists {ntables} tables")
        while len(self._tables) < ntables:
            n = len(self._tables)
            self._tables.append(_Table(self._path(n), FIRST_BITS + n, create=False))

    def is_sound(self) -> bool:
        """The files are still this index's and its first header passes its check."""
        return self.is_current() and self._tables[0].header_ok()

    @property
    def covered_seq(self) -> int:
        return int(_SEQ.unpack_from(self._tables[0].mm, 16)[0])  # read on every append

    @property
    def synced_seq(self) -> int:
        return self._header()[3]

    @property
    def suspect_after(self) -> int | None:
        """Hits with a seq past this are confirmed against the log (None: none are)."""
        value = self._header()[7]
        return value - 1 if value else None

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
        table = _Table(self._path(0), FIRST_BITS, create=True)
        self._tables = [table]
        table.mm[_STAMP_AT : _STAMP_AT + 8] = stamp
        table.mm[32:48] = current_boot_id()
        table.seal()
        self.damage = None

    def set_covered(self, seq: int) -> None:
        table = self._tables[0]
        struct.pack_into("<Q", table.mm, 16, seq)
        table.seal()

    def check_boot(self) -> None:
        """After a reboot, distrust everything not fsynced at the last seal."""
        boot = current_boot_id()
        if self._header()[4] != boot:
            synced = self.synced_seq
            self.set_covered(min(self.covered_seq, synced))
            # Slots of events the power cut took from the WAL may have reached the disk:
            # until a rebuild, hits past what was fsynced are confirmed against the log.
            suspect = self.suspect_after
            floor = synced if suspect is None else min(suspect, synced)
            table = self._tables[0]
            struct.pack_into("<Q", table.mm, _SUSPECT_AT, floor + 1)
            table.mm[32:48] = boot
            table.seal()

    def lookup(self, event_id: str, limit_seq: int) -> int:
        """The seq of ``event_id``, or 0; entries at or past ``limit_seq`` are stale.

        -1 when a slot on the way fails its check: the index is damaged.
        """
        self._open_new_tables()
        key = key_of(event_id)
        for table in reversed(self._tables):
            seq = table.lookup(key)
            if seq < 0:
                return -1
            if seq and seq < limit_seq:
                return seq
            if seq:
                break
        if _idtable._native_insert is None:
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
            if _idtable._native_insert is None:
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
            if n >= MAX_TABLES:
                raise IndexDamage(f"{self._first}: more than {MAX_TABLES} tables")
            table = _Table(self._path(n), FIRST_BITS + n, create=True)
            self._tables.append(table)
            first = self._tables[0]
            struct.pack_into("<Q", first.mm, 8, n + 1)
            first.seal()
        key = self._keys.pop(event_id, None) or key_of(event_id)
        table.insert(key, seq)

    def sync(self, seq: int) -> None:
        """Flush every table to disk and record that ids up to ``seq`` are durable."""
        self._open_new_tables()
        for table in self._tables:
            table.mm.flush()
        first = self._tables[0]
        struct.pack_into("<Q", first.mm, 24, seq)
        first.seal()
        first.mm.flush()

    def close(self) -> None:
        for table in self._tables:
            table.mm.close()
        self._tables.clear()
