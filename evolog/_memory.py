"""``Memory``: one store, seen through the log and (later) its projections."""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from evolog.eventlog import AnyEvent, Durability, Event, EventLog, Receipt

if TYPE_CHECKING:
    import pyarrow as pa

    from evolog.eventlog._verify import VerifyReport
    from evolog.eventlog.sealed._seal import CompactResult, SealResult


class Memory:
    """An agent's memory: an append-only event log in ``path`` (created if missing).

    >>> import tempfile, eventlog
    >>> with Memory(tempfile.mkdtemp() + "/mem") as mem:
    ...     mem.append(eventlog.Signal(signals=["log_error"], agent="a1"))
    1
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        durability: Durability = "always",
        create: bool = True,
        **options: Any,
    ) -> None:
        self.log = EventLog(path, durability=durability, create=create, **options)
        self._advice: Any = None

    @property
    def path(self) -> str:
        return self.log.path

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.log.close()

    def append(self, event: Event) -> int:
        """Append one event; return its seq (the original one for a known id)."""
        return self.log.append(event)

    def append_many(self, events: Iterable[Event]) -> list[int]:
        """Append events as one atomic batch; return their seqs."""
        return self.log.append_many(events)

    def append_receipts(self, events: Iterable[Event]) -> list[Receipt]:
        """Append events atomically; say for each its seq, id and whether it was known."""
        return self.log.append_receipts(events)

    def flush(self) -> None:
        self.log.flush()

    def replay(
        self,
        as_of: int | None = None,
        *,
        as_of_ts: int | None = None,
        kinds: Collection[str] | None = None,
    ) -> Iterator[AnyEvent]:
        """Events in seq order as of a seq and/or an event time (µs), optionally by kind."""
        return self.log.replay(as_of, as_of_ts=as_of_ts, kinds=kinds)

    def replay_arrow(self, **kwargs: Any) -> Iterator[pa.RecordBatch]:
        return self.log.replay_arrow(**kwargs)

    def seal(self) -> SealResult:
        return self.log.seal()

    def compact(self, **kwargs: Any) -> CompactResult:
        return self.log.compact(**kwargs)

    def stats(self) -> dict[str, Any]:
        return self.log.stats()

    def verify(self) -> VerifyReport:
        return self.log.verify()

    # -- the layers above the log (each imported on first use) ----------------------------
    def projections(self, **options: Any) -> Any:
        """A :class:`projections.Projections` over this store (SQL, edges, traces, export)."""
        from evolog.projections import Projections

        return Projections(self.log, **options)

    def sql(self, query: str, **kwargs: Any) -> pa.Table:
        """One read-only SQL query over the events, typed views, traces and edges."""
        return self.projections().sql(query, **kwargs)

    def advise(self, signals: list[str], genes: list[Any], **kwargs: Any) -> Any:
        """Which gene to prefer for ``signals`` and which to avoid (see :mod:`advice`)."""
        from evolog.advice import AdviceEngine

        if self._advice is None:
            self._advice = AdviceEngine(self.log)
        return self._advice.advise(signals, genes, **kwargs)

    def dream(self, **kwargs: Any) -> Any:
        """Dream the traces no cycle has consumed yet (heuristic dreamer by default)."""
        from evolog.dream._cycle import dream

        return dream(self.log, **kwargs)

    def route(self, task: str, **kwargs: Any) -> Any:
        """Route a task: zero-shot, a memory traversal (with its plan) or a context jump."""
        from evolog.advice import Router

        return Router.from_log(self.log, **kwargs).route(task)

    def ledger(self, **kwargs: Any) -> Any:
        """The survival energy ledger replayed from the log (see :func:`projections.ledger`)."""
        from evolog.projections import ledger

        return ledger(self.log, **kwargs)

    def tick(self, ticks: int = 1, reason: str | None = None) -> int:
        """Append a survival-ledger clock tick; return its seq."""
        from evolog.eventlog import Tick

        return self.log.append(Tick(ticks=ticks, reason=reason))
