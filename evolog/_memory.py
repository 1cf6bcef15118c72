"""``Memory``: one store, seen through the log and (later) its projections."""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable, Iterator
from typing import TYPE_CHECKING

from evolog.eventlog import (
    SEAL_THRESHOLD_BYTES,
    AnyEvent,
    AutoSeal,
    Durability,
    Event,
    EventLog,
    Receipt,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pyarrow as pa

    from evolog.advice import Advice, AdviceEngine, RouteDecision, RouterConfig
    from evolog.dream import DreamConfig, Dreamer, DreamReport, Progress
    from evolog.dream.evolve import EvolveReport, Model, Strategy
    from evolog.eventlog import VerifyReport
    from evolog.eventlog.sealed import CompactResult, SealResult
    from evolog.projections import (
        Cancel,
        EdgeParams,
        Embedder,
        LedgerConfig,
        LedgerView,
        Projections,
        QueryLimits,
    )
    from evolog.projections.energy.rules import Similarity
    from evolog.projections.memory import ItemIndex, MemoryConfig

    from ._recall import RecallResult
    from ._remember import CompressResult, Remembered
    from .iceberg import PublishResult


class Memory:
    """An agent's memory: an append-only event log in ``path`` (created if missing).

    >>> import tempfile, evolog
    >>> with Memory(tempfile.mkdtemp() + "/mem") as mem:
    ...     mem.append(evolog.Signal(signals=["log_error"], agent="a1"))
    1
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        durability: Durability = "always",
        create: bool = True,
        auto_seal: AutoSeal = "inline",
        seal_threshold_bytes: int = SEAL_THRESHOLD_BYTES,
        group_size: int = 1000,
        group_ms: float = 10.0,
        lock_timeout: float | None = None,
        on_lock_wait: Callable[[str], None] | None = None,
    ) -> None:
        """Open the store in ``path``; the keywords are :class:`evolog.eventlog.EventLog`'s
        (``create`` defaults to True here)."""
        self.log = EventLog(
            path, durability=durability, create=create, auto_seal=auto_seal,
            seal_threshold_bytes=seal_threshold_bytes, group_size=group_size,
            group_ms=group_ms, lock_timeout=lock_timeout, on_lock_wait=on_lock_wait,
        )  # fmt: skip
        self._advice: AdviceEngine | None = None
        self._item_index: ItemIndex | None = None

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

    def replay_arrow(
        self,
        as_of: int | None = None,
        *,
        as_of_ts: int | None = None,
        kinds: Collection[str] | None = None,
        columns: list[str] | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """Arrow record batches in seq order (the fast path for analysis)."""
        return self.log.replay_arrow(as_of, as_of_ts=as_of_ts, kinds=kinds, columns=columns)

    def seal(self) -> SealResult:
        return self.log.seal()

    def publish_iceberg(
        self,
        catalog: str,
        table: str = "evolog.events",
        *,
        store_id: str | None = None,
        warehouse: str | None = None,
        seal: bool = False,
    ) -> PublishResult:
        """Publish the sealed segments into an Apache Iceberg table (``evolog[iceberg]``);
        ``seal`` seals the WAL first. See :func:`evolog.iceberg.publish`."""
        from .iceberg import publish

        if seal:
            self.log.seal()
        return publish(self.path, catalog, table, store_id=store_id, warehouse=warehouse)

    def compact(self, small_rows: int = 100_000, target_rows: int = 1_000_000) -> CompactResult:
        """Merge adjacent small segments (events and seqs unchanged)."""
        return self.log.compact(small_rows, target_rows)

    def stats(self) -> dict[str, object]:
        return self.log.stats()

    def verify(self) -> VerifyReport:
        return self.log.verify()

    # -- the layers above the log (each imported on first use) ----------------------------
    def projections(self, *, params: EdgeParams | None = None, cache: bool = True) -> Projections:
        """A :class:`evolog.projections.Projections` over this store (SQL, edges, traces,
        export)."""
        from evolog.projections import Projections

        return Projections(self.log, params=params, cache=cache)

    def sql(
        self,
        query: str,
        *,
        as_of: int | None = None,
        as_of_ts: int | None = None,
        now: int | None = None,
        limits: QueryLimits | None = None,
        cancel: Cancel | None = None,
    ) -> pa.Table:
        """One read-only SQL query over the events, typed views, traces and edges (the
        keywords of :meth:`evolog.projections.Projections.sql`; ``limits`` None: none)."""
        from evolog.projections import QueryLimits

        return self.projections().sql(
            query, as_of=as_of, as_of_ts=as_of_ts, now=now,
            limits=QueryLimits() if limits is None else limits, cancel=cancel,
        )  # fmt: skip

    def advise(
        self,
        signals: Sequence[object],
        genes: Sequence[object],
        *,
        policy: str = "evolog",
        drift: bool | int | float | str | None = False,
        now: int | str | None = None,
        as_of: int | None = None,
        include_dead: bool | None = None,
    ) -> Advice:
        """Which gene to prefer for ``signals`` and which to avoid (see
        :meth:`evolog.advice.AdviceEngine.advise`). ``drift`` is read as JavaScript reads a
        value in a condition (evolver's input: ``"false"`` is true); ``now`` is None (the
        clock), µs since the epoch or ISO-8601 text."""
        from evolog.advice import AdviceEngine

        if self._advice is None:
            self._advice = AdviceEngine(self.log)
        return self._advice.advise(
            signals, genes, policy=policy, drift=drift, now=now, as_of=as_of,
            include_dead=include_dead,
        )  # fmt: skip

    def dream(
        self,
        *,
        dreamer: Dreamer | None = None,
        embedder: Embedder | None = None,
        config: DreamConfig | None = None,
        progress: Progress | None = None,
    ) -> DreamReport:
        """Dream the traces no cycle has consumed yet (heuristic dreamer by default)."""
        from evolog.dream import dream

        return dream(self.log, dreamer=dreamer, embedder=embedder, config=config,
                     progress=progress)  # fmt: skip

    def route(
        self,
        task: str,
        *,
        current: str | None = None,
        embedder: Embedder | None = None,
        config: RouterConfig | None = None,
        include_dead: bool = False,
    ) -> RouteDecision:
        """Route a task: zero-shot, a memory traversal (with its plan) or a context jump."""
        from evolog.advice import InvalidTaskError, Router, check_length

        check_length(task, "task", InvalidTaskError)  # before the graph is brought up to date
        router = Router.from_log(self.log, embedder=embedder, config=config,
                                 include_dead=include_dead)  # fmt: skip
        return router.route(task, current=current)

    def ledger(
        self,
        as_of: int | None = None,
        *,
        as_of_ts: int | None = None,
        config: LedgerConfig | dict[str, object] | None = None,
        similarity: Similarity | None = None,
        history: bool | Collection[str] = False,
    ) -> LedgerView:
        """The survival energy ledger replayed from the log (see
        :func:`evolog.projections.ledger`)."""
        from evolog.projections import ledger

        return ledger(self.log, as_of, as_of_ts=as_of_ts, config=config,
                      similarity=similarity, history=history)  # fmt: skip

    def tick(self, ticks: int = 1, reason: str | None = None) -> int:
        """Append a survival-ledger clock tick; return its seq."""
        from evolog.eventlog import Tick

        return self.log.append(Tick(ticks=ticks, reason=reason))

    # -- memory items: remember, recall, feedback, compress -------------------------------
    def _items(self) -> ItemIndex:
        """The store's item index, kept across calls (each call reads only what is new)."""
        if self._item_index is None:
            from evolog.projections.memory import ItemIndex

            self._item_index = ItemIndex(self.log.paths)
        return self._item_index

    def remember(
        self,
        branch: str,
        text: str,
        tags: Iterable[str] = (),
        *,
        kind: str = "note",
        author: str = "",
        config: MemoryConfig | None = None,
        envelope: dict[str, object] | None = None,
    ) -> Remembered:
        """Write a note to ``branch`` (deduplicated: a near-copy supersedes its original;
        the branch is compressed when it outgrows the others). ``kind`` ``lesson`` (or
        ``strategy``) writes a lesson, ``author`` says who wrote it; ``config`` replaces the
        store's memory settings, ``envelope`` adds event fields (``agent``, ``session``...)."""
        from ._remember import remember

        return remember(self.log, self._items(), branch, text, tags, kind=kind, author=author,
                        config=config, envelope=envelope)  # fmt: skip

    def recall(
        self,
        query: str,
        *,
        signals: Sequence[str] | None = None,
        genes: Sequence[object] | None = None,
        budget_chars: int | None = None,
        top_n: int | None = None,
        threshold: float | None = None,
        branches: Collection[str] | None = None,
        include_dead: bool = False,
        survival: bool = True,
        action_id: str = "",
        record: bool = True,
        config: MemoryConfig | None = None,
        envelope: dict[str, object] | None = None,
        url: str = "",
    ) -> RecallResult:
        """The memory items to inject for ``query``: a block within ``budget_chars`` plus the
        scored list; appends one ``recall`` event unless ``record=False`` (see
        :func:`evolog._recall.recall` for every option). With ``signals`` the gene items
        tried for them are candidates too, and the block ends with the gene advice for them
        (among ``genes``; by default the active strategies)."""
        import msgspec

        from ._recall import advice_lines, recall, strategy_ids

        extra: list[str] = []
        advice = None
        if signals:
            if genes is None:
                genes = [{"type": "Gene", "id": g} for g in strategy_ids(self.log, self._items())]
            extra, advice = advice_lines(self.advise(list(signals), list(genes)))
        result = recall(
            self.log, self._items(), query, advice_lines=extra, signals=signals or (),
            budget_chars=budget_chars, top_n=top_n, threshold=threshold, branches=branches,
            include_dead=include_dead, survival=survival, action_id=action_id, record=record,
            config=config, envelope=envelope, url=url,
        )  # fmt: skip
        return msgspec.structs.replace(result, advice=advice) if advice is not None else result

    def fetch(
        self,
        ids: Sequence[str],
        *,
        action_id: str = "",
        via: str = "",
        record: bool = True,
        envelope: dict[str, object] | None = None,
    ) -> dict[str, object]:
        """The details of the items ``ids`` name (the ids a recall block shows, or full
        ones); appends one ``fetched`` event unless ``record=False``, which credits them as
        used when the outcome of ``action_id`` arrives (see :func:`evolog._fetch.fetch`)."""
        from ._fetch import fetch

        return fetch(self.log, self._items(), ids, action_id=action_id, via=via, record=record,
                     envelope=envelope)  # fmt: skip

    def feedback(
        self,
        item: str,
        verdict: str,
        note: str | None = None,
        *,
        action_id: str = "",
        envelope: dict[str, object] | None = None,
    ) -> int:
        """Record ``helpful``, ``harmful`` or ``neutral`` for an item; return the seq. With
        ``action_id`` the verdict is about that attempt (see :func:`evolog.feedback`)."""
        from ._remember import feedback

        return feedback(self.log, self._items(), item, verdict, note, action_id=action_id,
                        envelope=envelope)  # fmt: skip

    def compress(
        self,
        *,
        undo: str | None = None,
        config: MemoryConfig | None = None,
        envelope: dict[str, object] | None = None,
    ) -> CompressResult:
        """Archive cold branches into one item each; ``undo=ITEM`` gives a merge's sources
        back."""
        from ._remember import compress

        return compress(self.log, self._items(), undo=undo, config=config, envelope=envelope)

    # -- memory evolution -------------------------------------------------------------------
    def evolve(
        self,
        pipeline: str | Strategy = "ace >> reasoning_bank >> reme",
        *,
        dry_run: bool = False,
        embedder: Embedder | None = None,
        model: Model | None = None,
        progress: Callable[[str], None] | None = None,
        run: str | None = None,
        use_async: bool = False,
    ) -> EvolveReport:
        """Run an evolution pipeline (an expression or a composed strategy) over the memory
        items and append what it changes as ``dreamed`` events (see
        :func:`evolog.dream.evolve.apply` for every option)."""
        from evolog.dream.evolve import apply
        from evolog.dream.evolve import pipeline as parse

        strategy = parse(pipeline) if isinstance(pipeline, str) else pipeline
        if embedder is None:
            from evolog.projections import get_embedder

            embedder = get_embedder()
        return apply(
            self.log, strategy, dry_run=dry_run, embedder=embedder, index=self._items(),
            model=model, progress=progress, run=run, use_async=use_async,
        )  # fmt: skip

    def curate(
        self,
        threshold: float = 0.3,
        *,
        dry_run: bool = False,
        embedder: Embedder | None = None,
        model: Model | None = None,
        progress: Callable[[str], None] | None = None,
        run: str | None = None,
    ) -> list[str]:
        """Retire the items whose ACE score is below ``threshold``; return their ids (see
        :func:`evolog.dream.evolve.curate`)."""
        from evolog.dream.evolve import curate

        return curate(self.log, threshold, index=self._items(), dry_run=dry_run,
                      embedder=embedder, model=model, progress=progress, run=run)  # fmt: skip

    def evolve_undo(self, run: str) -> list[str]:
        """Retract every event of an evolution run; return their ids."""
        from evolog.dream.evolve import undo

        return undo(self.log, run)
