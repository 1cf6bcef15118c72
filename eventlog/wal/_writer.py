"""The append path: validate, take the write lock, assign seqs, frame, write, fsync.

This module and its imports are what a hook process loads to append one event, so it must
never import pyarrow, duckdb, usearch or anthropic.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Iterable, Sequence
from itertools import repeat
from operator import itemgetter

from .._errors import ClosedError, CorruptLogError, LockTimeoutError, StorageError
from .._files import FileLock, LockWait, storage_error, write_all
from .._store import Paths
from ..index._idindex import IdIndex, IndexDamage
from ..index._idsync import catch_up, open_index
from ..index._idsync import lookup as index_lookup
from ..schema._codec import gc_paused, now_us
from ..schema._events import Event
from . import _fork, _wal
from . import _frames as fr
from ._active import ActiveWal
from ._group import GroupCommit
from ._prepare import Prepared, prepare_many, prepare_one
from ._receipt import Durability, Receipt

#: A writer inserts its ids into the id index in groups of this many (see _write).
LAG_EVENTS = 64


# Fields of the buffered (seq, body, id) items, read in C rather than in a comprehension
# (and of Prepared tuples: event, body, fresh).
_SEQ, _BODY, _ID, _FRESH = itemgetter(0), itemgetter(1), itemgetter(2), itemgetter(2)


# A Receipt from a (seq, id, duplicate) tuple at half the cost of calling the class.
_receipt = functools.partial(tuple.__new__, Receipt)


class Writer(GroupCommit, ActiveWal):
    """Appends to one store; safe across threads and processes."""

    def __init__(
        self,
        paths: Paths,
        durability: Durability = "always",
        group_size: int = 1000,
        group_ms: float = 10.0,
        lock_wait: LockWait | None = None,
    ) -> None:
        if durability not in ("always", "batch", "none"):
            raise ValueError(f"durability: expected always, batch or none; got {durability!r}")
        self.paths = paths
        self.durability = durability
        # Under ``always`` the WAL is opened O_DSYNC: each write returns once its data (and
        # the file size) are durable, which is fdatasync's promise without a second syscall.
        self._dsync = durability == "always"
        self.group_size = group_size
        self.group_ms = group_ms
        self.lock_wait = lock_wait
        self._lock = self._open_lock()
        self._mutex = threading.RLock()
        self._index: IdIndex | None = None
        self._fd = -1
        self._base = 0
        self._size = 0
        self._next_seq = 0
        # The newest seq this writer knows to exist (it saw it in the log, or wrote it).
        self._seen = 0
        self._held = False
        self._buffer: list[tuple[int, bytes, str]] = []  # (seq, body, id)
        self._pending: dict[str, int] = {}
        # Ids this writer appended but has not inserted into the id index yet, id -> seq
        # in seq order (consecutive seqs); covered_seq stays behind them until they are.
        self._lag: dict[str, int] = {}
        self._closed = False
        self._fork_error = ""
        self._group_init()
        self.repairs: list[_wal.Repair] = []
        _fork.track(self)

    def _open_lock(self) -> FileLock:
        return FileLock(self.paths.write_lock, self.lock_wait)

    # -- lock-held state -------------------------------------------------------------
    def _sync(self) -> None:
        """Bring the cached writer state up to date; caller holds the file lock."""
        try:
            self._sync_state()
        except StorageError:
            raise
        except OSError as exc:  # e.g. no space for a new WAL file or id-index table
            raise storage_error(exc, f"appending to {self.paths.root}") from None

    def _sync_state(self) -> None:
        changed = self._follow_active()
        # The index file is looked at only when the log changed since this writer's last
        # append: until then no other writer appended, and this writer's mapping (even of an
        # index deleted meanwhile) holds exactly what the log says. Any change (another
        # writer, a seal's rotation, a restored log) brings the check back. A syscall less on
        # every durable append, where each costs microseconds on a CPU gone cold in fsync.
        if changed and self._index is not None and not self._index.is_sound():
            self._index.close()  # deleted, replaced or damaged: map (or rebuild) it again
            self._index = None
        index = self._index_open()
        covered = index.covered_seq
        head = self._next_seq - 1
        if covered > head or self._seen > head:
            # Seqs known to exist are not in the log: a WAL file was deleted or cut, or the
            # log was restored from an older copy. Handing them out again would give one
            # seq to two events, so refuse (deleting the index accepts a deliberate restore).
            raise _wal.missing_error(self.paths, head, covered, self._seen)
        self._seen = head
        if covered == head:
            self._lag.clear()  # nothing missing (another writer may have caught ours up)
        elif not self._only_own_lag_missing(covered):
            # Missing ids that are not just our own lag: read them from the log.
            self._lag.clear()
            catch_up(self.paths, index, head)

    def _only_own_lag_missing(self, covered: int) -> bool:
        """Whether the index lacks exactly the ids of this writer's lag, nothing else."""
        if not self._lag:
            return False
        first = next(iter(self._lag.values()))
        last = next(reversed(self._lag.values()))
        return covered == first - 1 and last == self._next_seq - 1

    def _index_open(self) -> IdIndex:
        if self._index is None:
            self._index = open_index(self.paths)
        return self._index

    # -- appends -----------------------------------------------------------------------
    def append_many(
        self, events: Iterable[Event], where: str = "", validated: bool = False
    ) -> list[Receipt]:
        """Append events atomically (all or none); duplicates by id are not written."""
        batch = events if isinstance(events, (list, tuple)) else list(events)
        if len(batch) < 64:
            prepared = prepare_many(batch, now_us(), where, validated)
            return self._commit(prepared) if prepared else []
        # A batch makes thousands of short-lived objects; left on, the cyclic GC walks
        # them several times per batch (a fifth of the batch's time).
        with gc_paused():
            return self._commit(prepare_many(batch, now_us(), where, validated))

    def _after_fork_in_child(self) -> None:
        """Take a lock, WAL descriptor and index mapping of this (forked) process."""
        self._group_after_fork()  # the parent's group and threads: not this process's
        if self._closed:
            return  # its descriptors were closed (their numbers may be reused since)
        self._lag = {}  # the parent inserts these ids (or the next writer's catch-up does)
        self._close_active()
        self._size = -1
        if self._index is not None:
            self._index.close()
            self._index = None
        self._lock.close()
        try:
            self._lock = self._open_lock()
        except OSError as exc:
            self._closed = True  # its appends then raise ClosedError; nothing to release
            self._fork_error = f"could not reopen {self.paths.write_lock} after fork: {exc}"

    def append_one(self, event: Event, where: str = "", validated: bool = False) -> Receipt:
        """Append one event: :meth:`append_many` of one, without the batch machinery."""
        prepared = prepare_one(event, now_us(), where, validated)
        seq = self._join_group(prepared)
        if seq:
            return _receipt((seq, prepared[0].id, False))
        return self._commit([prepared])[0]

    def append_seq(self, event: Event) -> int:
        """:meth:`append_one`'s seq alone (``EventLog.append``: no Receipt to build)."""
        prepared = prepare_one(event, now_us())
        return self._join_group(prepared) or self._commit([prepared])[0].seq

    def _join_group(self, prepared: Prepared) -> int:
        """Add an event whose id was minted here to the open group and return its seq; 0
        (no seq is 0) when no group is open or the id came from the caller, and the event
        goes the whole way through :meth:`_commit`."""
        # Group commit's common case, kept to the bone: at 200k appends/s every list and
        # call on this path is a measurable share.
        if not (prepared[2] and self._held):
            return 0
        with self._mutex:
            if not self._held or self._closed:
                return 0
            if self._failed is not None:
                self._raise_failed()
            eid = prepared[0].id
            seq = self._next_seq + len(self._buffer)
            self._buffer.append((seq, prepared[1], eid))
            self._pending[eid] = seq
            if len(self._buffer) >= self.group_size:
                self._write_group()
            return seq

    def _commit(self, prepared: list[Prepared]) -> list[Receipt]:
        with self._mutex:
            if self._closed:
                raise ClosedError(self._fork_error or "the event log is closed")
            if self.durability == "batch":
                return self._append_batched(prepared)
            self._lock.acquire()  # not lock.held(): a generator context costs a durable
            try:  # append several microseconds of cold CPU
                self._sync()
                receipts, items = self._assign(prepared)
                if items:
                    self._write(items, fsync=self.durability == "always")
                return receipts
            finally:
                self._lock.release()

    def _assign(
        self, prepared: Sequence[Prepared]
    ) -> tuple[list[Receipt], list[tuple[int, bytes, str]]]:
        seq = self._next_seq + len(self._buffer)
        if len(prepared) == 1 and prepared[0][2]:  # the common single append
            eid, body = prepared[0][0].id, prepared[0][1]
            return [_receipt((seq, eid, False))], [(seq, body, eid)]
        if all(map(_FRESH, prepared)):  # minted ids (most appends): nothing to look up
            ids = [p[0].id for p in prepared]
            seqs = range(seq, seq + len(ids))
            receipts = list(map(_receipt, zip(seqs, ids, repeat(False))))
            return receipts, list(zip(seqs, map(_BODY, prepared), ids, strict=True))
        index = self._index_open()
        receipts = []
        items: list[tuple[int, bytes, str]] = []
        local: dict[str, int] = {}
        for event, body, fresh in prepared:
            eid = event.id
            if fresh:  # minted by this append: no need to look it up
                items.append((seq, body, eid))
                receipts.append(_receipt((seq, eid, False)))
                seq += 1
                continue
            found = (
                local.get(eid)
                or self._pending.get(eid)
                or self._lag.get(eid)
                or index_lookup(self.paths, index, eid, seq, self._next_seq - 1)
            )
            if found:
                receipts.append(_receipt((found, eid, True)))
                continue
            local[eid] = seq
            items.append((seq, body, eid))
            receipts.append(_receipt((seq, eid, False)))
            seq += 1
        return receipts, items

    def _write(self, items: list[tuple[int, bytes, str]], fsync: bool) -> None:
        one = len(items) == 1  # a durable single append: no iterators on a cold CPU
        data = fr.frame_bodies(items[0][0], [items[0][1]] if one else list(map(_BODY, items)))
        old = self._size
        try:
            write_all(self._fd, data)
            if fsync and not self._dsync:
                os.fdatasync(self._fd)
        except OSError as exc:
            # Leave the log exactly as it was: nothing of this append was acknowledged.
            try:
                os.ftruncate(self._fd, old)
            except OSError:
                self._size = -1  # the next writer's tail check cuts the uncommitted frames
            raise storage_error(exc, f"appending to {self.paths.root}") from None
        self._size = old + len(data)
        self._next_seq = items[-1][0] + 1
        # The index is told in groups of LAG_EVENTS: inserting one id per append dirties a
        # random page of the index each time, which costs more than the insert itself.
        if one:
            self._lag[items[0][2]] = items[0][0]
        else:
            self._lag.update(zip(map(_ID, items), map(_SEQ, items), strict=True))
        if len(self._lag) >= LAG_EVENTS:
            self._flush_lag()

    def _flush_lag(self) -> None:
        """Insert the lagging ids; the caller holds the lock and has just synced."""
        if not self._lag:
            return
        items = list(self._lag.items())
        last = items[-1][1]
        self._lag.clear()
        index = self._index_open()
        try:
            index.insert_many(items)
        except (OSError, IndexDamage):
            # No room for a bigger index table. The records are written and acknowledged;
            # covered_seq stays behind, so the next append re-inserts these ids from the WAL
            # (or fails cleanly with StorageError before writing anything).
            return
        index.set_covered(last)

    def _flush_lag_locked(self) -> None:
        if self._lag:
            with self._lock.held():
                self._sync()  # drops the lag if another writer caught it up meanwhile
                self._flush_lag()

    # -- rotation (for sealing) --------------------------------------------------------
    def rotate(self) -> int:
        """Start a new active WAL file; return the first seq it will hold."""
        with self._mutex:
            self._flush_locked()
            with self._lock.held():
                self._sync()
                if self._size > fr.FILE_HEADER.size:
                    # Retire, then create: a crash between leaves a retired newest file,
                    # whose next writer makes the next file. (Created first, a crash would
                    # leave the old file's writers unaware of the new one.)
                    mode = _wal.retire(self._fd, self.paths.wal)
                    try:
                        self._start_next()
                    except BaseException:
                        with contextlib.suppress(OSError):  # (a full disk): stays active
                            os.fchmod(self._fd, mode)
                        raise
                return self._base

    def sync_index(self, seq: int) -> None:
        with self._mutex, self._lock.held():
            self._sync()
            self._flush_lag()
            self._index_open().sync(seq)

    def wal_size(self) -> int:
        return max(self._size, 0)

    def close(self) -> None:
        with self._mutex:
            if self._closed:
                return
            self._flush_locked()
            with contextlib.suppress(OSError, StorageError, CorruptLogError, LockTimeoutError):
                # The ids are in the WAL: if this fails, the next writer inserts them.
                self._flush_lag_locked()
            self._closed = True
            if self._fd >= 0:
                os.close(self._fd)
            if self._index is not None:
                self._index.close()
            self._lock.close()
        self._stop_syncer()
        self._raise_failed()  # a timed group commit that failed since the last call
