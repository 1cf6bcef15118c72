"""Dream cycles over a store: consume undreamed traces in bounded batches, append atomically.

``dream(log)`` takes the store's dream lock (one dreamer at a time per store), reads the
memory graph from its checkpoint, finds every complete trace no live cycle has consumed
(reading only the traces after the last dream's watermark, :mod:`._pending`), and dreams them in
batches of at most ``batch_size`` traces, in log order. Each batch is one cycle, appended
as one atomic ``append_many``: ``dream_begin``, the opcode events, ``dream_end`` (whose
``consumed`` lists every trace of the batch, including those that yielded no node). Nothing
is ever dropped: ``max_traces`` only stops early, and the rest waits for the next call.

Ids are derived, never random: the cycle id hashes the dreamer, the ISA version, the
batch's traces, the nodes it restates and the graph it starts from (last seq, retracted
cycles), so a retried cycle over an unchanged graph appends nothing new; event ids are
``<cycle>.<n>`` and node ids ``node-<hash>-<n>``.

Undoing a cycle (:mod:`evolog.dream._undo`) makes its traces undreamed again, so the next dream
re-dreams them under a new cycle id.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import msgspec
from evolog.eventlog import DreamBegin, DreamEnd, Event, EventLog, EventLogError, FileLock
from evolog.projections import (
    Embedder,
    MemGraph,
    StrategyNode,
    VectorIndex,
    get_embedder,
    wanted_texts,
)
from evolog.projections.graph import GraphCache

from ._dreamer import Dreamer
from ._errors import CycleError
from ._fallback import Guarded
from ._heuristic import SUMMARY_LIMIT, HeuristicDreamer
from ._pending import read_traces, save_watermark
from ._phases import CycleBuilder, PhaseSettings
from ._traces import Trace
from .isa._program import ISA_REGISTRY, ISA_VERSION, IsaRegistry

__all__ = ["CycleReport", "DreamConfig", "DreamReport", "cycle_id", "dream", "dream_lock"]

Progress = Callable[[int, int], None]
MAX_ISA_TEXT = 256 * 1024
"""Raw ISA text kept per dream-end event (events are capped at 1 MiB)."""


@dataclass(frozen=True, slots=True)
class DreamConfig:
    """How a dream run behaves; every threshold of the issue is here."""

    batch_size: int | None = None
    max_traces: int | None = None
    merge_threshold: float = 0.85
    link_floor: float = 0.6
    link_top_k: int = 3
    compaction: bool = False
    fallback: bool = False
    """Dream a trace the requested dreamer fails on with the heuristic dreamer (the cycle's
    status is then ``fallback``); without it a dreamer failure stops the run (CycleError),
    with nothing of the failing cycle appended."""
    isa_version: str = ISA_VERSION
    registry: IsaRegistry = ISA_REGISTRY
    select: Callable[[Trace], bool] | None = None
    """Dream only the undreamed traces this accepts (a domain's); the others stay undreamed
    for a later dream (they count in ``remaining``)."""

    def __post_init__(self) -> None:
        for name in ("batch_size", "max_traces"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise CycleError(f"{name}: expected a positive integer or None; got {value!r}")
        if not 0.0 < self.merge_threshold <= 1.0:
            raise CycleError(f"merge_threshold: expected (0, 1]; got {self.merge_threshold}")
        self.registry.get(self.isa_version)


class CycleReport(msgspec.Struct, frozen=True):
    """What one appended cycle did."""

    cycle: str
    traces: int
    events: int
    nodes_created: int
    nodes_merged: int
    links: int
    constraints: int
    marks: int
    fallbacks: int
    duplicate: bool
    phase_log: tuple[str, ...]
    input_tokens: int = 0
    output_tokens: int = 0


class DreamReport(msgspec.Struct, frozen=True):
    """What a dream run did: its cycles, and how many complete traces are still undreamed."""

    dreamer: str
    cycles: tuple[CycleReport, ...]
    traces_dreamed: int
    remaining: int


def dream(
    log: EventLog,
    *,
    dreamer: Dreamer | None = None,
    embedder: Embedder | None = None,
    config: DreamConfig | None = None,
    progress: Progress | None = None,
) -> DreamReport:
    """Dream every undreamed trace (up to ``config.max_traces``); see the module docstring."""
    dreamer = dreamer or HeuristicDreamer()
    config = config or DreamConfig()
    if config.fallback and not isinstance(dreamer, HeuristicDreamer):
        dreamer = Guarded(dreamer)
    with dream_lock(log):
        cache = GraphCache(log)
        graph = cache.memgraph()
        consumed = graph.consumed()
        undone = sorted(graph.retracted_cycles)
        head, traces = read_traces(log, undone)
        pending = sorted(
            (t for t in traces.values() if t.complete and t.id not in consumed),
            key=lambda t: t.seq,
        )
        wanted = pending if config.select is None else [t for t in pending if config.select(t)]
        chosen = wanted[: config.max_traces] if config.max_traces else wanted
        index = VectorIndex.open(embedder or get_embedder(), log.paths.cache)
        index.sync(wanted_texts(graph))
        reports = _run_batches(log, graph, chosen, dreamer, index, config, progress)
        taken = {t.id for t in chosen}
        left = [t for t in traces.values() if not t.complete]
        left += [t for t in pending if t.id not in taken]
        save_watermark(log, head, undone, left)
        index.sync(wanted_texts(graph))
        with contextlib.suppress(Exception):  # the index is a cache: failing to save is fine
            # The graph is at the head of the log (the dream lock keeps other dreams and
            # undos out), so the index is in sync with the checkpoint brought there.
            index.graph = cache.views().generation
            index.save()
    return DreamReport(
        dreamer.name, tuple(reports), sum(r.traces for r in reports), len(pending) - len(chosen)
    )


def _run_batches(
    log: EventLog,
    graph: MemGraph,
    traces: Sequence[Trace],
    dreamer: Dreamer,
    index: VectorIndex,
    config: DreamConfig,
    progress: Progress | None,
) -> list[CycleReport]:
    size = config.batch_size or dreamer.batch_size
    batches = [traces[i : i + size] for i in range(0, len(traces), size)]
    legacy = [n for n in graph.nodes() if n.isa_version != config.isa_version]
    if not batches and (legacy or (config.compaction and _long_summaries(graph))):
        batches = [[]]
    done = 0

    def tick(n: int) -> None:
        nonlocal done
        done += n
        if progress is not None:
            progress(done, len(traces))

    reports = []
    for number, batch in enumerate(batches):
        first, last = number == 0, number == len(batches) - 1
        builder = _build_cycle(graph, batch, dreamer, index, config, first, last, tick)
        reports.append(_append_cycle(log, graph, builder, batch, dreamer))
    return reports


def _long_summaries(graph: MemGraph) -> bool:
    return any(len(n.summary) > SUMMARY_LIMIT for n in graph.nodes())


def _build_cycle(
    graph: MemGraph,
    batch: Sequence[Trace],
    dreamer: Dreamer,
    index: VectorIndex,
    config: DreamConfig,
    first: bool,
    last: bool,
    tick: Callable[[int], None],
) -> CycleBuilder:
    legacy = [n for n in graph.nodes() if n.isa_version != config.isa_version] if first else []
    cycle = cycle_id(dreamer, config, batch, legacy, graph, compact=last and config.compaction)
    settings = PhaseSettings(
        config.isa_version, config.registry, config.merge_threshold, config.link_floor,
        config.link_top_k, config.fallback,
    )  # fmt: skip
    builder = CycleBuilder(cycle, graph, {t.id: t for t in batch}, dreamer, index, settings)
    builder.reconsolidate(legacy)
    builder.dream_traces(batch, tick)
    with index.staging():
        builder.consolidate()
    if last and config.compaction:
        builder.compact()
    return builder


def cycle_id(
    dreamer: Dreamer,
    config: DreamConfig,
    batch: Sequence[Trace],
    legacy: Sequence[StrategyNode],
    graph: MemGraph,
    *,
    compact: bool,
) -> str:
    """The deterministic id of a cycle (see the module docstring)."""
    h = hashlib.blake2b(digest_size=8)
    parts = [dreamer.name, config.isa_version, str(graph.last_seq), str(compact)]
    parts += sorted(graph.retracted_cycles)
    parts += ["traces", *(t.id for t in batch), "legacy", *(n.id for n in legacy)]
    for part in parts:
        h.update(part.encode("utf-8", "surrogatepass") + b"\x00")
    return "dream-" + h.hexdigest()


def _append_cycle(
    log: EventLog,
    graph: MemGraph,
    builder: CycleBuilder,
    batch: Sequence[Trace],
    dreamer: Dreamer,
) -> CycleReport:
    cycle = builder.cycle
    agent = f"dreamer:{dreamer.name}"
    ids = [t.id for t in batch]
    stats = builder.stats
    begin = DreamBegin(id=f"{cycle}.begin", cycle=cycle, dreamer=dreamer.name,
                       model=dreamer.model, isa_version=builder.settings.isa_version,
                       traces=ids, agent=agent, source="dreamed")  # fmt: skip
    body = [
        msgspec.structs.replace(e, id=f"{cycle}.{n}", agent=agent, source="dreamed")
        for n, e in enumerate(builder.events, start=1)
    ]
    # A cycle some of whose traces the heuristic dreamed says so, not just "ok".
    status = "fallback" if stats["fallbacks"] else "ok"
    end = DreamEnd(
        id=f"{cycle}.end", cycle=cycle, status=status, consumed=ids, model=dreamer.model,
        input_tokens=stats["input_tokens"] or None, output_tokens=stats["output_tokens"] or None,
        isa_text=_isa_text(builder.texts), phase_log=builder.phase_log, agent=agent,
        source="dreamed",
    )  # fmt: skip
    events: list[Event] = [begin, *body, end]
    try:
        receipts = log.append_receipts(events)
    except EventLogError as exc:
        raise CycleError(f"{cycle}: appending {len(events)} events failed: {exc}") from exc
    # Fold what was appended into the caller's graph, so it equals a fresh load.
    graph.apply_all(
        msgspec.structs.replace(e, seq=r.seq)  # type: ignore[misc]
        for e, r in zip(events, receipts, strict=True)
        if not r.duplicate
    )
    return CycleReport(
        cycle, len(batch), len(events), len(builder.new_nodes), stats["Merge"], stats["Link"],
        stats["Constraint"], stats["Mark"], stats["fallbacks"],
        all(r.duplicate for r in receipts), tuple(builder.phase_log),
        stats["input_tokens"], stats["output_tokens"],
    )  # fmt: skip


def _isa_text(texts: list[str]) -> str | None:
    if not texts:
        return None
    text = "".join(texts)
    if len(text) <= MAX_ISA_TEXT:
        return text
    return text[:MAX_ISA_TEXT] + f"\n# … truncated, {len(text) - MAX_ISA_TEXT} more characters\n"


@contextlib.contextmanager
def dream_lock(log: EventLog) -> Iterator[None]:
    # Two dreamers folding the same graph would both consume the same traces; the lock
    # makes the second one wait and then see the first one's cycles.
    try:
        os.makedirs(log.paths.cache, exist_ok=True)
        lock = FileLock(os.path.join(log.paths.cache, "dream.lock"))
    except OSError as exc:
        raise CycleError(f"{log.paths.cache}: cannot take the dream lock: {exc}") from None
    try:
        with lock.held():
            yield
    finally:
        lock.close()
