"""The store behind a server: its one writer, its readers and what tells followers of a change.

The writer is an :class:`~evolog.eventlog.EventLog` opened once for the server's lifetime
with the configured durability; appends reach it only through the group committer. Reads
never go through the writer (its ``snapshot`` flushes a group commit): they take their
own snapshots, and advice and routing keep a second, read-only ``EventLog`` of the same
store, which never appends.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from ._commit import GroupCommitter
from ._config import ServerConfig

if TYPE_CHECKING:
    from evolog.advice import AdviceEngine
    from evolog.eventlog import EventLog, Snapshot
    from evolog.projections.memory import ItemIndex

T = TypeVar("T")
#: How often followers look for appends made by other processes (seconds).
POLL_S = 0.5


class ServerStore:
    """One store, opened by one server process (see the module docstring)."""

    def __init__(self, config: ServerConfig) -> None:
        from evolog.eventlog import EventLog

        self.config = config
        options: dict[str, Any] = {"durability": config.durability}
        if config.durability == "batch":
            # Each group the committer hands over is written at once (it survives a kill -9
            # of the server from then on) and fsynced on the log's syncer thread.
            options.update(group_size=1, group_ms=config.group_ms)
        self.log = EventLog(config.store, **options)
        self.paths = self.log.paths
        self.reader = EventLog(config.store)
        self.committer = GroupCommitter(self.log)
        self.started = time.time()
        self._advice: AdviceEngine | None = None
        self._advice_lock = threading.Lock()
        self.route_lock = threading.Lock()
        self._items: ItemIndex | None = None
        self._items_lock = threading.Lock()
        self._tick: asyncio.Future[None] | None = None
        self.closing = asyncio.Event()

    async def start(self) -> None:
        self._tick = asyncio.get_running_loop().create_future()
        self.committer.on_commit.append(self._notify)
        self.committer.start()

    async def stop(self) -> None:
        """Answer queued appends, flush and close the log (a graceful shutdown)."""
        self.closing.set()
        self._notify()
        await self.committer.stop()
        self.log.close()
        self.reader.close()

    # -- followers ------------------------------------------------------------------------
    def _notify(self) -> None:
        tick = self._tick
        if tick is not None and not tick.done():
            self._tick = asyncio.get_running_loop().create_future()
            tick.set_result(None)

    async def changed(self, timeout: float = POLL_S) -> None:
        """Return after the next commit of this server, or after ``timeout`` (appends by
        other processes are found by looking again)."""
        tick = self._tick
        if tick is None:
            await asyncio.sleep(timeout)
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(tick), timeout)

    # -- reading ----------------------------------------------------------------------------
    def snapshot(self) -> Snapshot:
        from evolog.eventlog import Snapshot

        return Snapshot.take(self.paths)

    def head_seq(self) -> int:
        with self.snapshot() as snap:
            return snap.head_seq

    def with_advice(self, func: Callable[[AdviceEngine], T]) -> T:
        """Run ``func`` with the warm advice engine (one caller at a time: it is not
        thread-safe)."""
        from evolog.advice import AdviceEngine

        with self._advice_lock, _returning_memory():
            if self._advice is None:
                self._advice = AdviceEngine(self.reader)
            return func(self._advice)

    def with_items(self, func: Callable[[EventLog, ItemIndex], T]) -> T:
        """Run ``func`` with the writer and the warm memory-item index (remember, recall,
        feedback; one caller at a time). They append through the writer directly, so a
        remember's dedup and compression read what the previous call wrote."""
        from evolog.projections.memory import ItemIndex

        with self._items_lock, _returning_memory():
            if self._items is None:
                self._items = ItemIndex(self.paths)
            return func(self.log, self._items)


#: Freed memory is handed back when a call left the process this much larger.
GIVE_BACK_BYTES = 64 << 20
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _rss() -> int:
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0  # not Linux: nothing is measured, nothing handed back


@contextlib.contextmanager
def _returning_memory() -> Iterator[None]:
    """Hand freed memory back to the system after a call that grew the process a lot.

    The first advice or recall on a large store folds the whole log (Arrow batches of 64k
    rows made into Python objects): at 1e6 events that peaks near 1 GiB, and both Arrow's
    memory pool and the C heap keep what was freed, so a server that then holds about 70 MiB
    of state stayed at 500-600 MiB. Only big growth is answered, so warm calls pay one read
    of ``/proc/self/statm``.
    """
    before = _rss()
    try:
        yield
    finally:
        if before and _rss() - before > GIVE_BACK_BYTES:
            _give_back()


def _give_back() -> None:
    arrow = sys.modules.get("pyarrow")
    if arrow is not None:  # never imported for this
        arrow.default_memory_pool().release_unused()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).malloc_trim(0)  # glibc's; other C libraries lack it
