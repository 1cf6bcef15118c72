"""Group commit (the ``batch`` policy): appends join an open group; one write per group,
its fsync on a background thread.

While a group is open the writer holds the store's write lock, so it numbers appends
itself. A full group is written at once by the append that fills it, and the fsync of what
was written runs on the writer's syncer thread while the next group fills: fdatasync
releases the GIL, and on this path it cost as much as a tenth of every append. The lock is
released only by a flush (``flush()``, ``group_ms`` after a group opened, rotation or
close), which waits for the syncer, writes the rest and fsyncs it: nothing this writer
wrote is left unsynced when another writer can append after it.

A failure on the syncer thread (a timed flush that found the disk full, an fsync error) is
kept and raised by the next append, flush or close of this writer: before the append
takes its event, so a retry can never duplicate it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .._files import FileLock, storage_error
from ._receipt import Receipt

if TYPE_CHECKING:
    from .._store import Paths
    from ._prepare import Prepared

#: The syncer thread ends after this long without an open group (seconds).
IDLE_EXIT_S = 1.0


class GroupCommit:
    """The batch policy's part of :class:`evolog.eventlog.wal._writer.Writer` (a mixin)."""

    # Provided by Writer.
    paths: Paths
    group_size: int
    group_ms: float
    _mutex: threading.RLock
    _lock: FileLock
    _fd: int
    _size: int
    _held: bool
    _buffer: list[tuple[int, bytes, str]]
    _pending: dict[str, int]

    def _sync(self) -> None:
        raise NotImplementedError

    def _assign(
        self, prepared: Sequence[Prepared]
    ) -> tuple[list[Receipt], list[tuple[int, bytes, str]]]:
        raise NotImplementedError

    def _write(self, items: list[tuple[int, bytes, str]], fsync: bool) -> None:
        raise NotImplementedError

    def _group_init(self) -> None:
        self._cv = threading.Condition(self._mutex)
        self._syncer: threading.Thread | None = None
        self._stopping = False
        self._due: float | None = None  # when the open group must be flushed (monotonic)
        self._syncing = False  # an fsync on _fd is running on the syncer thread
        self._unsynced = False  # bytes were written since the last fsync
        self._failed: Exception | None = None

    def _group_after_fork(self) -> None:
        """In a forked child: drop the parent's open group (the parent writes it) and the
        thread state (the syncer did not survive the fork; a lock it held never unlocks)."""
        self._mutex = threading.RLock()
        self._group_init()
        self._held = False
        self._buffer = []
        self._pending = {}

    # -- appending (the caller holds _mutex) ---------------------------------------------
    def _append_batched(self, prepared: Sequence[Prepared]) -> list[Receipt]:
        self._raise_failed()
        if not self._held:
            self._lock.acquire()
            self._held = True
            try:
                self._sync()
            except BaseException:
                self._release()
                raise
        receipts, items = self._assign(prepared)
        self._buffer.extend(items)
        for seq, _, eid in items:
            self._pending[eid] = seq
        if len(self._buffer) >= self.group_size:
            self._write_group()
        if self._due is None:  # while the lock is held, a timed flush is always due
            self._open_group()
        return receipts

    def _open_group(self) -> None:
        self._due = time.monotonic() + self.group_ms / 1000
        if self._syncer is None or not self._syncer.is_alive():  # ends when idle (below)
            self._syncer = threading.Thread(
                target=self._run_syncer, name="evolog-group-commit", daemon=True
            )
            self._syncer.start()
        self._cv.notify_all()

    def _write_group(self) -> None:
        """Write the full group; its fsync goes to the syncer (the lock stays held)."""
        items = self._buffer
        self._buffer = []
        self._pending.clear()
        try:
            self._write(items, fsync=False)
        except BaseException:
            self._flush_locked()
            raise
        self._unsynced = True
        self._cv.notify_all()

    def _raise_failed(self) -> None:
        failed = self._failed
        if failed is not None:
            self._failed = None
            raise failed

    # -- flushing --------------------------------------------------------------------------
    def flush(self) -> None:
        """Write and fsync what group commit has buffered; release the write lock."""
        with self._mutex:
            self._flush_locked()
            self._raise_failed()

    def _flush_locked(self) -> None:
        self._due = None
        if not self._held:
            return
        while self._syncing:  # an fsync of this fd is running: the fd must stay open
            self._cv.wait()
        try:
            if self._buffer:
                items = self._buffer
                self._buffer = []
                self._pending.clear()
                self._write(items, fsync=True)
            elif self._unsynced:
                try:
                    os.fdatasync(self._fd)
                except OSError as exc:
                    raise storage_error(exc, f"appending to {self.paths.root}") from None
            self._unsynced = False
        finally:
            self._release()

    def _release(self) -> None:
        self._buffer.clear()
        self._pending.clear()
        self._held = False
        self._lock.release()

    def _stop_syncer(self) -> None:
        """End the syncer thread; the caller must not hold _mutex (the thread needs it)."""
        with self._cv:
            self._stopping = True
            self._cv.notify_all()
            syncer = self._syncer
        if syncer is not None:
            syncer.join()

    # -- the syncer thread -------------------------------------------------------------------
    def _run_syncer(self) -> None:
        while True:
            with self._cv:
                job = self._next_job()
                if job is None:
                    return
                if job < 0:  # the open group is due
                    try:
                        self._flush_locked()
                    except Exception as exc:  # kept, and raised by the next call
                        self._failed = exc
                    continue
                self._syncing = True
                self._unsynced = False
            error = None
            try:
                os.fdatasync(job)
            except OSError as exc:
                error = storage_error(exc, f"appending to {self.paths.root} (group commit)")
            with self._cv:
                self._syncing = False
                if error is not None:
                    self._failed = error
                self._cv.notify_all()

    def _next_job(self) -> int | None:
        """Wait for work: an fd to fsync, -1 for a due flush, None to stop."""
        while not self._stopping:
            if self._unsynced and not self._syncing and self._held:
                return self._fd
            if self._due is not None:
                left = self._due - time.monotonic()
                if left <= 0:
                    return -1
                self._cv.wait(left)
            elif not self._cv.wait(IDLE_EXIT_S) and self._due is None and not self._unsynced:
                # Idle: end the thread (the next group starts another), so a writer that is
                # never closed is not kept alive by it.
                self._syncer = None
                return None
        return None
