"""Group commit across requests: one writer per store, one log append per group.

Every append request joins a queue; a single task takes everything queued, appends it as
one batch on a worker thread (so an fsync never blocks the event loop) and answers each
request with its own receipts. While one group is being written the next one fills, so
16 clients appending one event each cost one write (and under ``always`` one fsync) per
group, not one each. Atomicity is per request, as promised: a group's events go in one
atomic append, and if any request's events are refused by the log (nothing is written
then), the requests of that group are appended one by one, so only the bad one fails.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evolog.eventlog import Event, EventLog, Receipt

#: A group holds at most this many events (a larger request is a group of its own).
MAX_GROUP_EVENTS = 10_000


class _Pending:
    __slots__ = ("events", "future", "validated", "where")

    def __init__(
        self,
        events: Sequence[Event],
        where: str,
        validated: bool,
        future: asyncio.Future[list[Receipt]],
    ) -> None:
        self.events = events
        self.where = where
        self.validated = validated
        self.future = future


class GroupCommitter:
    """Appends requests to ``log`` in groups; start with :meth:`start`, end with :meth:`stop`."""

    def __init__(self, log: EventLog) -> None:
        self.log = log
        self._queue: list[_Pending] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self.groups = 0  # groups written (a metric)
        self.committed = 0  # requests answered with receipts
        self.on_commit: list[Callable[[], None]] = []
        self._writer: concurrent.futures.ThreadPoolExecutor | None = None

    def start(self) -> None:
        self._writer = concurrent.futures.ThreadPoolExecutor(1, "evolog-commit")
        self._task = asyncio.get_running_loop().create_task(self._run(), name="evolog-commit")

    async def submit(
        self, events: Sequence[Event], where: str = "", validated: bool = False
    ) -> list[Receipt]:
        """Append ``events`` atomically; return their receipts once acknowledged.

        ``validated``: the events came from the log's typed JSON decoder (the log then skips
        its decode-back check)."""
        if self._stopping:
            from ._errors import Problem

            raise Problem(503, "the server is shutting down; nothing was appended", None)
        future: asyncio.Future[list[Receipt]] = asyncio.get_running_loop().create_future()
        self._queue.append(_Pending(events, where, validated, future))
        self._wake.set()
        return await future

    async def stop(self) -> None:
        """Answer everything queued, then end the task (the log is closed by the owner)."""
        self._stopping = True
        self._wake.set()
        if self._task is not None:
            await self._task
        if self._writer is not None:
            self._writer.shutdown()

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._queue:
                group = self._take()
                try:
                    results = await loop.run_in_executor(self._writer, self._commit, group)
                except BaseException as exc:
                    results = [exc] * len(group)
                self.groups += 1
                for pending, result in zip(group, results, strict=True):
                    if pending.future.done():
                        continue
                    if isinstance(result, BaseException):
                        pending.future.set_exception(result)
                    else:
                        self.committed += 1
                        pending.future.set_result(result)
                for callback in self.on_commit:
                    callback()
            if self._stopping:
                return

    def _take(self) -> list[_Pending]:
        group: list[_Pending] = []
        size = 0
        while self._queue and (not group or size + len(self._queue[0].events) <= MAX_GROUP_EVENTS):
            pending = self._queue.pop(0)
            group.append(pending)
            size += len(pending.events)
        return group

    def _commit(self, group: list[_Pending]) -> list[list[Receipt] | BaseException]:
        """On the worker thread: one atomic append for the group, or one per request."""
        from evolog.eventlog import InvalidEventError

        if len(group) == 1:
            try:
                one = group[0]
                return [self.log.append_receipts(one.events, one.where, one.validated)]
            except Exception as exc:
                return [exc]
        events = [e for p in group for e in p.events]
        try:
            receipts = self.log.append_receipts(events, validated=all(p.validated for p in group))
        except InvalidEventError:
            # Nothing was written (the log validates a batch before writing any of it):
            # find the request at fault by appending each alone.
            return [self._commit([p])[0] for p in group]
        except Exception as exc:
            return [exc] * len(group)
        out: list[list[Receipt] | BaseException] = []
        start = 0
        for p in group:
            out.append(receipts[start : start + len(p.events)])
            start += len(p.events)
        return out
