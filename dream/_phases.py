"""The phases of one dream cycle, staged on an overlay of the memory graph.

Reconsolidation (ISA upgrades of older nodes), SWS + REM (one program per trace), then
consolidation (merges into similar nodes, links to neighbours) and optional compaction.
Every effect is an instruction run by the VM; nothing here touches the log: the cycle
appends what the builder collected, or nothing.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

import numpy as np
from evolog.eventlog import Event, Link, Node
from evolog.projections import MemGraph, StrategyNode, VectorIndex, node_texts
from evolog.projections.graph import MAX_TEXTS_PER_NODE, Vectors
from evolog.projections.memory import matched_steps, step_words

from ._dreamer import Dreamer, DreamProgram, LinkCandidate
from ._errors import CycleError, DreamerError
from ._heuristic import SUMMARY_LIMIT, HeuristicDreamer
from ._traces import Trace
from .isa._checked import checked_program
from .isa._opcodes import LAST_PARENT, PHASE_OPCODES, Opcode
from .isa._parser import parse_program
from .isa._program import Instruction, IsaRegistry, Program
from .isa._serializer import serialize_program
from .isa._vm import VMContext, VMResult, run_program

__all__ = ["FIDELITY", "CycleBuilder", "PhaseSettings"]

EXACT_MERGE_LIMIT: Final = 20_000
"""Up to this many vectors, merge candidates are found by exhaustive (deterministic) search."""
MERGE_SEARCH: Final = 32
"""Neighbours examined for a merge target."""
APPROACH_OVERLAP: Final = 0.5
"""Share of steps (Jaccard over near-matched steps, see projections.memory._steps) two
strategies need in common to be merged."""
FIDELITY: Final = {"real": 1.0, "simulated": 0.5, "dreamed": 0.3}
"""How much a merge trusts evidence by source (after evolving-memory's fidelity weights:
docs/reference/dream-isa.md §5)."""


_PHASE_LABELS: Final = {"trace": "SWS/REM"}


@dataclass(frozen=True, slots=True)
class PhaseSettings:
    """The knobs of consolidation and the ISA a cycle writes."""

    isa_version: str
    registry: IsaRegistry
    merge_threshold: float = 0.85
    link_floor: float = 0.6
    link_top_k: int = 3
    fallback: bool = False


@dataclass(slots=True)
class CycleBuilder:
    """Collects one cycle's events on a staging overlay of ``graph``."""

    cycle: str
    graph: MemGraph
    traces: Mapping[str, Trace]
    dreamer: Dreamer
    index: VectorIndex
    settings: PhaseSettings
    staging: MemGraph = field(init=False)
    events: list[Event] = field(default_factory=list)
    phase_log: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    stats: Counter[str] = field(default_factory=Counter)
    new_nodes: list[str] = field(default_factory=list)
    _counter: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def __post_init__(self) -> None:
        self.staging = self.graph.overlay()

    # -- plumbing -----------------------------------------------------------------------
    def mint(self) -> str:
        """The next node id of this cycle."""
        return f"node-{self.cycle.removeprefix('dream-')}-{next(self._counter)}"

    def context(
        self,
        phase: str,
        trace: str | None = None,
        rebind: str | None = None,
        scope: frozenset[str] | None = frozenset(),
    ) -> VMContext:
        """A VM context over the staging graph, limited to ``phase``'s opcodes and to the
        nodes the program builds plus ``scope`` (None: any node)."""
        return VMContext(
            cycle=self.cycle,
            graph=self.staging,
            traces=self.traces,
            trace=trace,
            mint=self.mint,
            rebind=rebind,
            search=self._search,
            fidelity=self._fidelity,
            phase=_PHASE_LABELS.get(phase, phase),
            allowed=PHASE_OPCODES[phase],
            scope=scope,
        )

    def _search(self, query: str) -> str | None:
        hits = self.index.search_text(query, 1)
        return hits[0][0] if hits else None

    def _fidelity(self, node_id: str) -> float:
        node = self.staging.node(node_id)
        sources = [self.traces[t].source for t in (node.traces if node else ()) if t in self.traces]
        return max((FIDELITY.get(s, 0.5) for s in sources), default=1.0)

    def run(self, program: Program, ctx: VMContext) -> VMResult:
        """Run a program; a program with rejected lines fails as a whole."""
        if program.diagnostics:
            first = program.diagnostics[0]
            more = len(program.diagnostics) - 1
            error = first.message + (f" (and {more} more rejected line(s))" if more else "")
            return VMResult(False, 0, error=error, error_line=first.line)
        return run_program(program, ctx)

    def run_dreamed(self, dreamed: DreamProgram, ctx: VMContext) -> VMResult:
        """Run what a dreamer wrote: its instructions if it gave them, else its parsed text."""
        if dreamed.instructions is not None:
            program = checked_program(
                dreamed.instructions, self.settings.isa_version, self.settings.registry
            )
        else:
            program = parse_program(
                dreamed.text, isa_version=self.settings.isa_version, registry=self.settings.registry
            )
        return self.run(program, ctx)

    def commit(self, result: VMResult) -> None:
        """Fold a successful result into the staging graph and keep its events."""
        self.staging.apply_all(result.events)  # type: ignore[arg-type]
        self.events.extend(result.events)
        for event in result.events:
            self.stats[type(event).__name__] += 1
            if not isinstance(event, Node) or self.graph.node(event.node) is not None:
                continue
            if event.node not in self.new_nodes:
                self.new_nodes.append(event.node)

    def record(self, program: DreamProgram, header: str) -> None:
        """Keep a dreamer's raw text and usage for the dream-end event."""
        self.stats["input_tokens"] += program.input_tokens
        self.stats["output_tokens"] += program.output_tokens
        if self.dreamer.records_text:
            text = program.text or serialize_program(program.instructions or ())
            if text.strip():
                self.texts.append(f"# {header}\n{text.rstrip()}\n")

    # -- phase 0: reconsolidation ---------------------------------------------------------
    def reconsolidate(self, nodes: Sequence[StrategyNode]) -> None:
        """Upgrade nodes written in an older ISA through the registered transforms."""
        done = failed = 0
        for node in nodes:
            error = self._upgrade(node)
            if error is None:
                done += 1
            else:
                failed += 1
                self.phase_log.append(f"reconsolidation: {node.id}: {error}")
        if nodes:
            self.phase_log.append(
                f"reconsolidation: {done} node(s) upgraded to ISA {self.settings.isa_version},"
                f" {failed} left for the next cycle"
            )

    def _upgrade(self, node: StrategyNode) -> str | None:
        steps = self.staging.steps(node.id)
        insts = [
            Instruction(Opcode.BUILD_PARENT, (node.goal, node.summary, f"{node.confidence:g}"))
        ]
        insts += [
            Instruction(Opcode.BUILD_CHILD, (LAST_PARENT, str(s.index), s.reasoning, s.action,
                                             s.result))
            for s in steps
        ]  # fmt: skip
        old = Program(tuple(insts), isa_version=node.isa_version)
        try:
            upgraded = self.settings.registry.upgrade(old, self.settings.isa_version)
        except Exception as exc:  # a user-registered transform may raise anything
            return f"upgrade failed: {type(exc).__name__}: {exc}"
        result = self.run(upgraded, self.context("reconsolidation", rebind=node.id))
        if not result.success:
            return f"upgraded program rejected: {result.error}"
        if not any(isinstance(e, Node) for e in result.events):
            return "the upgrade dropped the node's BUILD_PARENT"
        self.commit(result)
        return None

    # -- SWS + REM ------------------------------------------------------------------------
    def dream_traces(self, traces: Sequence[Trace], progress: Callable[[int], None]) -> None:
        """One program per trace; a dreamer failure stops the cycle, or (when the settings
        ask for a fallback) the trace gets the heuristic program."""
        for trace in traces:
            self._dream_one(trace)
            progress(1)
        s = self.stats
        self.phase_log.append(
            f"SWS: {len(traces)} trace(s), {s['Constraint']} constraint(s), {s['Mark']} mark(s)"
        )
        self.phase_log.append(f"REM: {s['Node']} node(s), {s['ChildStep']} step(s)")

    def _dream_one(self, trace: Trace) -> None:
        ctx = self.context("trace", trace=trace.id)
        try:
            program = self.dreamer.dream_trace(trace)
        except DreamerError as exc:
            return self._fallback(trace, f"dreamer failed: {exc}")
        self.record(program, f"trace {trace.id}")
        result = self.run_dreamed(program, ctx)
        if not result.success:
            return self._fallback(trace, f"program rejected: {result.error}")
        self.commit(result)
        return None

    def _fallback(self, trace: Trace, why: str) -> None:
        if isinstance(self.dreamer, HeuristicDreamer):
            raise CycleError(f"{self.cycle}: trace {trace.id}: {why}")
        if not self.settings.fallback:
            # The dreamer asked for is the dreamer used, or the run stops and says so.
            raise CycleError(
                f"{self.cycle}: trace {trace.id}: the {self.dreamer.name} dreamer failed "
                f"({why}); nothing of this cycle was appended (a fallback to the heuristic "
                "dreamer is used only when asked for)"
            )
        self.phase_log.append(f"fallback to heuristic for trace {trace.id}: {why}")
        self.stats["fallbacks"] += 1
        program = HeuristicDreamer().dream_trace(trace)
        result = self.run_dreamed(program, self.context("trace", trace=trace.id))
        if not result.success:
            raise CycleError(f"{self.cycle}: trace {trace.id}: heuristic fallback: {result.error}")
        self.commit(result)

    def _dreamer_failed(self, where: str, exc: DreamerError) -> str:
        """A phase's dreamer failure: raised without a fallback, else a phase-log note."""
        if not self.settings.fallback:
            raise CycleError(
                f"{self.cycle}: {where}: the {self.dreamer.name} dreamer failed ({exc}); "
                "nothing of this cycle was appended"
            ) from exc
        return f"{where}: dreamer failed: {exc}"

    # -- consolidation ----------------------------------------------------------------------
    def consolidate(self) -> None:
        """Merge each new node into a similar one, or index it and link it to neighbours.

        A merge needs the goals to be similar (cosine >= ``merge_threshold``) *and* the two
        strategies to share most of their actions: two different approaches to the same
        task stay two nodes, and the router picks the better one.
        """
        candidates: list[LinkCandidate] = []
        merged = 0
        new = [n for n in self.new_nodes if (node := self.staging.node(n)) and node.live]
        texts = [node_texts(self.staging.node(n)) for n in new]  # type: ignore[arg-type]
        # One embedding batch for the whole cycle: per-call overhead dominates small calls.
        matrix = self.index.embedder.embed([t for own in texts for t in own])
        offsets = np.cumsum([0, *(len(own) for own in texts)])
        for i, (node_id, own) in enumerate(zip(new, texts, strict=True)):
            vectors = matrix[offsets[i] : offsets[i + 1]]
            if not own:
                continue
            # Many nodes may share a goal (one per approach): look wide enough to find the
            # one with the same approach among them.
            # Exhaustive search while affordable: it makes merges reproducible run to run
            # (an HNSW graph built by several threads is not).
            exact = len(self.index) <= EXACT_MERGE_LIMIT
            wide = max(MERGE_SEARCH, self.settings.link_top_k)
            neighbours = self.index.search(vectors[0], wide, exact=exact)
            target = next(
                (
                    other
                    for other, score in neighbours
                    if score >= self.settings.merge_threshold
                    and self._same_approach(other, node_id)
                ),
                None,
            )
            if target is not None:
                self._merge(target, node_id, own, vectors)
                merged += 1
                continue
            self.index.add_vectors(node_id, own, vectors)
            candidates.extend(self._link_candidates(node_id, neighbours))
        links = self._links(candidates) if candidates else 0
        self.phase_log.append(f"consolidation: {merged} merged, {links} link(s)")

    def _same_approach(self, a: str, b: str) -> bool:
        # Steps are compared under the near-match rule: the same command worded differently
        # by another run is the same step, so six runs of one approach are one strategy.
        steps_a = [t for s in self.staging.steps(a) if step_words(t := s.action)]
        steps_b = [t for s in self.staging.steps(b) if step_words(t := s.action)]
        if not steps_a or not steps_b:
            return True  # a strategy without steps (a bare failure) adds only constraints
        both = matched_steps(steps_a, steps_b)
        return both / (len(steps_a) + len(steps_b) - both) >= APPROACH_OVERLAP

    def _merge(self, existing: str, new: str, texts: Sequence[str], vectors: Vectors) -> None:
        # The better-supported node survives, so its steps are the ones a traversal follows.
        # Ties keep the existing node (and its id, which outcomes may name).
        old, fresh = self.staging.node(existing), self.staging.node(new)
        assert old is not None and fresh is not None
        if fresh.confidence > old.confidence:
            self.index.remove(existing)
            self.index.add_vectors(new, texts, vectors)
            self.index.add(new, node_texts(old)[: MAX_TEXTS_PER_NODE - len(texts)])
            inst = Instruction(Opcode.GRP_NODE, (new, existing))
        else:
            self.index.add_vectors(existing, texts, vectors)
            inst = Instruction(Opcode.GRP_NODE, (existing, new))
        program = Program((inst,), isa_version=self.settings.isa_version)
        result = self.run(program, self.context("consolidation", scope=None))
        if not result.success:
            raise CycleError(f"{self.cycle}: consolidation merge: {result.error}")
        self.commit(result)

    def _link_candidates(
        self, node_id: str, neighbours: list[tuple[str, float]]
    ) -> list[LinkCandidate]:
        node = self.staging.node(node_id)
        out = []
        for other, score in neighbours[: self.settings.link_top_k]:
            peer = self.staging.node(other)
            if node and peer and peer.live and score >= self.settings.link_floor:
                out.append(
                    LinkCandidate(node, peer, score, self.staging.steps(node_id),
                                  self.staging.steps(other))
                )  # fmt: skip
        return out

    def _links(self, candidates: list[LinkCandidate]) -> int:
        try:
            program = self.dreamer.link(candidates)
        except DreamerError as exc:
            self.phase_log.append(self._dreamer_failed("links skipped", exc))
            return 0
        self.record(program, "links")
        pairs = frozenset(x for c in candidates for x in (c.node.id, c.neighbour.id))
        result = self.run_dreamed(program, self.context("links", scope=pairs))
        if not result.success:
            self.phase_log.append(f"links skipped: program rejected: {result.error}")
            return 0
        self.commit(result)
        return sum(isinstance(e, Link) for e in result.events)

    # -- compaction ---------------------------------------------------------------------
    def compact(self) -> None:
        """Ask the dreamer for shorter summaries of long ones (restating the nodes)."""
        done = 0
        for node in [n for n in self.staging.nodes() if len(n.summary) > SUMMARY_LIMIT]:
            try:
                program = self.dreamer.compact(node, self.staging.steps(node.id))
            except DreamerError as exc:
                self.phase_log.append(self._dreamer_failed(f"compaction: {node.id}", exc))
                continue
            if not program.text.strip() and not program.instructions:
                continue
            self.record(program, f"compaction {node.id}")
            result = self.run_dreamed(program, self.context("compaction", rebind=node.id))
            restated = [e for e in result.events if isinstance(e, Node)]
            if result.success and restated and len(restated[0].summary) < len(node.summary):
                self.commit(result)
                done += 1
            else:
                self.phase_log.append(f"compaction: {node.id}: reply not used")
        self.phase_log.append(f"compaction: {done} node(s) compacted")
