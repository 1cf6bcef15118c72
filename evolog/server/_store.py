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
import threading
import time
from collections.abc import Callable
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

        with self._advice_lock:
            if self._advice is None:
                self._advice = AdviceEngine(self.reader)
            return func(self._advice)

    def with_items(self, func: Callable[[EventLog, ItemIndex], T]) -> T:
        """Run ``func`` with the writer and the warm memory-item index (remember, recall,
        feedback; one caller at a time). They append through the writer directly, so a
        remember's dedup and compression read what the previous call wrote."""
        from evolog.projections.memory import ItemIndex

        with self._items_lock:
            if self._items is None:
                self._items = ItemIndex(self.paths)
            return func(self.log, self._items)
