"""``Memory``: one store, seen through the log and (later) its projections."""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from evolog.eventlog import AnyEvent, Durability, Event, EventLog, Receipt

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pyarrow as pa

    from evolog.advice import Advice, AdviceEngine, RouteDecision, RouterConfig
    from evolog.dream import DreamConfig, Dreamer, DreamReport, Progress
    from evolog.dream.evolve import EvolveReport, Strategy
    from evolog.eventlog import VerifyReport
    from evolog.eventlog.sealed import CompactResult, SealResult
    from evolog.projections import EdgeParams, Embedder, LedgerConfig, LedgerView, Projections
    from evolog.projections.energy.rules import Similarity
    from evolog.projections.memory import ItemIndex

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
        **options: Any,
    ) -> None:
        self.log = EventLog(path, durability=durability, create=create, **options)
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

    def stats(self) -> dict[str, Any]:
        return self.log.stats()

    def verify(self) -> VerifyReport:
        return self.log.verify()

    # -- the layers above the log (each imported on first use) ----------------------------
    def projections(self, *, params: EdgeParams | None = None, cache: bool = True) -> Projections:
        """A :class:`evolog.projections.Projections` over this store (SQL, edges, traces,
        export)."""
        from evolog.projections import Projections

        return Projections(self.log, params=params, cache=cache)

    def sql(self, query: str, **kwargs: Any) -> pa.Table:
        """One read-only SQL query over the events, typed views, traces and edges (the
        keywords of :meth:`evolog.projections.Projections.sql`)."""
        return self.projections().sql(query, **kwargs)

    def advise(
        self,
        signals: Sequence[object],
        genes: Sequence[object],
        *,
        policy: str = "evolog",
        drift: object = False,
        now: object = None,
        as_of: int | None = None,
        include_dead: bool | None = None,
    ) -> Advice:
        """Which gene to prefer for ``signals`` and which to avoid (see
        :meth:`evolog.advice.AdviceEngine.advise`)."""
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
        self, branch: str, text: str, tags: Iterable[str] = (), **kwargs: Any
    ) -> Remembered:
        """Write a note to ``branch`` (deduplicated: a near-copy supersedes its original;
        the branch is compressed when it outgrows the others); see :mod:`evolog._remember`."""
        from ._remember import remember

        return remember(self.log, self._items(), branch, text, tags, **kwargs)

    def recall(
        self,
        query: str,
        *,
        signals: Sequence[str] | None = None,
        genes: Sequence[object] | None = None,
        **kwargs: Any,
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
            self.log, self._items(), query, advice_lines=extra, signals=signals or (), **kwargs
        )
        return msgspec.structs.replace(result, advice=advice) if advice is not None else result

    def fetch(self, ids: Sequence[str], **kwargs: Any) -> dict[str, Any]:
        """The details of the items ``ids`` name (the ids a recall block shows, or full
        ones); appends one ``fetched`` event unless ``record=False``, which credits them as
        used when the outcome of ``action_id`` arrives (see :func:`evolog._fetch.fetch`)."""
        from ._fetch import fetch

        return fetch(self.log, self._items(), ids, **kwargs)

    def feedback(self, item: str, verdict: str, note: str | None = None, **kwargs: Any) -> int:
        """Record ``helpful``, ``harmful`` or ``neutral`` for an item; return the seq."""
        from ._remember import feedback

        return feedback(self.log, self._items(), item, verdict, note, **kwargs)

    def compress(self, *, undo: str | None = None, **kwargs: Any) -> CompressResult:
        """Archive cold branches into one item each; ``undo=ITEM`` gives a merge's sources
        back."""
        from ._remember import compress

        return compress(self.log, self._items(), undo=undo, **kwargs)

    # -- memory evolution -------------------------------------------------------------------
    def evolve(
        self,
        pipeline: str | Strategy = "ace >> reasoning_bank >> reme",
        *,
        dry_run: bool = False,
        embedder: Embedder | None = None,
        **kwargs: Any,
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
            self.log, strategy, dry_run=dry_run, embedder=embedder, index=self._items(), **kwargs
        )

    def curate(self, threshold: float = 0.3, **kwargs: Any) -> list[str]:
        """Retire the items whose ACE score is below ``threshold``; return their ids (see
        :func:`evolog.dream.evolve.curate`)."""
        from evolog.dream.evolve import curate

        return curate(self.log, threshold, index=self._items(), **kwargs)

    def evolve_undo(self, run: str) -> list[str]:
        """Retract every event of an evolution run; return their ids."""
        from evolog.dream.evolve import undo

        return undo(self.log, run)
