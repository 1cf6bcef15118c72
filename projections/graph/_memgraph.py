"""The memory graph: a pure fold over dream opcode events, retractions and outcomes.

Strategy nodes (``node``), their ordered steps (``child_step``), typed edges (``link``),
negative constraints (``constraint``), step labels (``mark``), merges and prunes, and the
dream cycles themselves (``dream_begin``/``dream_end``). Rules, decided here:

* A retracted cycle contributes nothing, wherever its retraction sits in the log; effects
  that then name a node that does not exist (a merge into it, a link to it) are ignored.
  Retractions are read before the fold (:func:`load_memgraph`), so the fold is one pass.
* A ``node`` event for an existing id restates it (ISA upgrade, compaction): goal, summary,
  confidence and ISA version are replaced and its version goes up; a ``child_step`` with an
  existing (node, index) replaces that step.
* A merge folds ``merged`` into ``node``: the survivor gains the merged node's trigger goals,
  traces and constraints, and takes the merge's confidence; it keeps its own steps (the
  reference duplicated them). Merged and pruned nodes stay readable but are not live.
* Structural edges (IS_CHILD_OF, NEXT_STEP, PREVIOUS_STEP) are implied by the steps; only
  ``link`` events are stored. A step's id is ``<node>#<index>``.
* A node's successes and failures count each try once: the traces it was dreamed from and
  the outcomes naming it (:mod:`._tries`); a merged group pools its members' tries.
* Traces are consumed by the ``dream_end`` of a cycle that is not retracted, so undoing a
  cycle makes its traces undreamed again.

:meth:`MemGraph.overlay` gives a copy-on-write view for staging: the VM folds a program's
events into an overlay, and the cycle folds the same events into the real graph, so the
staged graph is exactly what a replay produces.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Callable, Iterable, Iterator, MutableMapping, Sequence
from typing import Any, Final

import msgspec
from evolog.eventlog import (
    AnyEvent,
    Attempt,
    ChildStep,
    Constraint,
    DreamBegin,
    DreamEnd,
    EventLog,
    Link,
    Mark,
    Merge,
    Node,
    Outcome,
    Prune,
    Retraction,
)

from ._tries import Credit, add_credit, credit_of, tally
from ._types import (
    STRUCTURAL_EDGE_TYPES,
    ConstraintRecord,
    ConstraintView,
    CycleRecord,
    EdgeRecord,
    MarkRecord,
    StepRecord,
    StrategyNode,
    step_id,
    structural_edges,
    union_strings,
)

__all__ = [
    "MEMGRAPH_KINDS",
    "STRUCTURAL_EDGE_TYPES",
    "ConstraintView",
    "CycleRecord",
    "EdgeRecord",
    "MarkRecord",
    "MemGraph",
    "StepRecord",
    "StrategyNode",
    "load_memgraph",
    "step_id",
]

MEMGRAPH_KINDS: Final = ("dream_begin", "dream_end", "constraint", "mark", "node", "child_step",
                         "link", "merge", "prune", "attempt", "outcome")  # fmt: skip
"""Event kinds the fold reads (retractions are read first, separately)."""

_MERGE_BOOST: Final = 0.1


class MemGraph:
    """The memory graph folded from events; see the module docstring for the rules."""

    def __init__(
        self, retracted_cycles: Iterable[str] = (), retracted_ids: Iterable[str] = ()
    ) -> None:
        self.retracted_cycles = frozenset(retracted_cycles)
        self.retracted_ids = frozenset(retracted_ids)
        self.last_seq = 0
        self.stale = False
        self._nodes: MutableMapping[str, StrategyNode] = {}
        self._steps: MutableMapping[str, tuple[StepRecord, ...]] = {}
        self._links: MutableMapping[str, tuple[EdgeRecord, ...]] = {}
        self._by_node: MutableMapping[str, tuple[ConstraintRecord, ...]] = {}
        self._by_trace: MutableMapping[str, tuple[ConstraintRecord, ...]] = {}
        self._marks: MutableMapping[str, tuple[MarkRecord, ...]] = {}
        self._absorbed: MutableMapping[str, tuple[str, ...]] = {}
        self._cycles: MutableMapping[str, CycleRecord] = {}
        self._consumed: MutableMapping[str, str] = {}
        self._actions: MutableMapping[str, str] = {}
        self._settled: MutableMapping[str, int] = {}
        self._credits: MutableMapping[str, Sequence[Credit]] = {}
        self._counted_in: MutableMapping[str, tuple[str, ...]] = {}

    # -- folding ------------------------------------------------------------------------
    def overlay(self) -> MemGraph:
        """A copy-on-write view: folding into it never changes this graph."""
        view = MemGraph(self.retracted_cycles, self.retracted_ids)
        view.last_seq = self.last_seq
        for name in _STATE:
            setattr(view, name, ChainMap({}, getattr(self, name)))
        return view

    def apply_all(self, events: Iterable[AnyEvent]) -> MemGraph:
        """Fold events in order; returns self."""
        for event in events:
            self.apply(event)
        return self

    def apply(self, event: AnyEvent) -> None:
        """Fold one event; kinds the graph does not read are ignored.

        A retraction of something already folded cannot be undone in place: the graph is
        marked ``stale`` and must be reloaded (:func:`load_memgraph` reads retractions first).
        """
        self.last_seq = max(self.last_seq, event.seq)
        if isinstance(event, (Outcome, Attempt)) and event.id in self.retracted_ids:
            return  # a forgotten try (``evolog forget --session``) counts for nothing
        if isinstance(event, Outcome):
            self._count_outcome(event)
            return
        if isinstance(event, Attempt):
            # Outcomes find their attempt by action id (empty means the attempt's own id).
            self._actions[event.action_id or event.id] = event.id
            return
        if isinstance(event, Retraction):
            self._note_retraction(event)
            return
        handler = _HANDLERS.get(type(event))
        if handler is None or event.id in self.retracted_ids:
            return
        if getattr(event, "cycle", "") in self.retracted_cycles:
            return
        handler(self, event)

    def _note_retraction(self, event: Retraction) -> None:
        hit = (event.target_cycle is not None and event.target_cycle in self._cycles) or any(
            t not in self.retracted_ids for t in event.targets
        )
        if event.target_cycle is not None:
            self.retracted_cycles = self.retracted_cycles | {event.target_cycle}
        self.retracted_ids = self.retracted_ids | set(event.targets)
        self.stale = self.stale or hit

    def _begin(self, e: DreamBegin) -> None:
        self._cycles[e.cycle] = CycleRecord(
            e.cycle, e.dreamer, e.model, e.isa_version, tuple(e.traces), begin_seq=e.seq
        )

    def _end(self, e: DreamEnd) -> None:
        old = self._cycles.get(e.cycle) or CycleRecord(e.cycle)
        self._cycles[e.cycle] = msgspec.structs.replace(
            old,
            consumed=tuple(e.consumed),
            status=e.status,
            ended=True,
            end_seq=e.seq,
            model=e.model or old.model,
            input_tokens=e.input_tokens,
            output_tokens=e.output_tokens,
            phase_log=tuple(e.phase_log),
        )
        for trace in e.consumed:
            self._consumed.setdefault(trace, e.cycle)

    def _node(self, e: Node) -> None:
        old = self._nodes.get(e.node)
        goals = union_strings(old.trigger_goals if old else (), e.trigger_goals or [e.goal])
        traces = union_strings(old.traces if old else (), e.traces)
        for trace in traces[len(old.traces) if old else 0 :]:
            self._count_in(trace, e.node)
        if old is None:
            self._nodes[e.node] = StrategyNode(
                e.node, e.cycle, e.goal, e.summary, e.confidence, 1, e.isa_version,
                goals, traces, seq=e.seq,
            )  # fmt: skip
            return
        self._nodes[e.node] = msgspec.structs.replace(
            old,
            goal=e.goal,
            summary=e.summary,
            confidence=e.confidence,
            isa_version=e.isa_version,
            version=old.version + 1,
            trigger_goals=goals,
            traces=traces,
        )

    def _child(self, e: ChildStep) -> None:
        if e.node not in self._nodes:
            return
        record = StepRecord(e.node, e.index, e.reasoning, e.action, e.result, e.critical, e.cycle)
        kept = [s for s in self._steps.get(e.node, ()) if s.index != e.index]
        self._steps[e.node] = tuple(sorted([*kept, record], key=lambda s: s.index))

    def _link(self, e: Link) -> None:
        if self._endpoint(e.src) is None or self._endpoint(e.dst) is None:
            return
        edge = EdgeRecord(e.src, e.dst, e.edge_type.upper(), e.weight, e.cycle)
        self._links[e.src] = (*self._links.get(e.src, ()), edge)

    def _endpoint(self, ref: str) -> str | None:
        node, sep, index = ref.partition("#")
        if node not in self._nodes:
            return None
        if sep and not any(str(s.index) == index for s in self._steps.get(node, ())):
            return None
        return ref

    def _constraint(self, e: Constraint) -> None:
        record = ConstraintRecord(e.node, e.trace, e.description, e.failure_class, e.cycle)
        if e.node is not None:
            self._by_node[e.node] = (*self._by_node.get(e.node, ()), record)
        else:
            self._by_trace[e.trace] = (*self._by_trace.get(e.trace, ()), record)

    def _mark(self, e: Mark) -> None:
        record = MarkRecord(e.trace, e.index, e.label, e.cycle)
        self._marks[e.trace] = (*self._marks.get(e.trace, ()), record)

    def _merge(self, e: Merge) -> None:
        survivor = self.resolve(e.node)
        absorbed = self._nodes.get(e.merged)
        if survivor is None or absorbed is None or not absorbed.live or survivor == e.merged:
            return
        keep = self._nodes[survivor]
        if keep.pruned:
            return
        confidence = e.confidence
        if confidence is None:
            confidence = min(1.0, max(keep.confidence, absorbed.confidence) + _MERGE_BOOST)
        self._nodes[survivor] = msgspec.structs.replace(
            keep,
            confidence=confidence,
            version=keep.version + 1,
            trigger_goals=union_strings(keep.trigger_goals, absorbed.trigger_goals),
            traces=union_strings(keep.traces, absorbed.traces),
        )
        self._nodes[e.merged] = msgspec.structs.replace(absorbed, merged_into=survivor)
        self._absorbed[survivor] = (*self._absorbed.get(survivor, ()), e.merged)

    def _prune(self, e: Prune) -> None:
        node = self._nodes.get(e.node)
        if node is not None and not node.pruned:
            self._nodes[e.node] = msgspec.structs.replace(node, pruned=True, prune_reason=e.reason)

    def _count_in(self, attempt: str, node: str) -> None:
        # Which nodes an attempt's outcomes change (the checkpoint renders them again).
        nodes = self._counted_in.get(attempt, ())
        if node not in nodes:
            self._counted_in[attempt] = (*nodes, node)

    def _count_outcome(self, e: Outcome) -> None:
        key = credit_of(e, self._actions, self._settled)
        if key is None:
            return
        for ref in dict.fromkeys([*e.decided_by, *e.supported_by]):
            # An attempt a node already counts (credited, or one of its traces) is not
            # added again; ``_counted_in`` answers that without scanning the node's tries.
            if ref in self._nodes and (
                isinstance(key, int) or ref not in self._counted_in.get(key, ())
            ):
                add_credit(self._credits, ref, key)
                if isinstance(key, str):
                    self._count_in(key, ref)

    # -- reading ------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._nodes)

    def node(self, node_id: str) -> StrategyNode | None:
        """The node with this id (live or not), or None."""
        return self._nodes.get(node_id)

    def resolve(self, node_id: str) -> str | None:
        """The live-or-pruned node that ``node_id`` was (transitively) merged into."""
        seen = 0
        node = self._nodes.get(node_id)
        while node is not None and node.merged_into is not None and seen < len(self._nodes):
            node = self._nodes.get(node.merged_into)
            seen += 1
        return node.id if node is not None else None

    def nodes(self, *, live_only: bool = True) -> Iterator[StrategyNode]:
        """Nodes in creation order (live ones only by default)."""
        for node in self._nodes.values():
            if node.live or not live_only:
                yield node

    def steps(self, node_id: str) -> tuple[StepRecord, ...]:
        """The node's own steps in order."""
        return self._steps.get(node_id, ())

    def group(self, node_id: str) -> tuple[str, ...]:
        """``node_id`` and every node merged into it, transitively."""
        out, stack = [node_id], [node_id]
        while stack:
            for child in self._absorbed.get(stack.pop(), ()):
                out.append(child)
                stack.append(child)
        return tuple(out)

    def constraints(self, node_id: str) -> tuple[ConstraintView, ...]:
        """Distinct constraints of a node and of everything merged into it."""
        records: list[ConstraintRecord] = []
        traces: dict[str, None] = {}
        for member in self.group(node_id):
            records.extend(self._by_node.get(member, ()))
            node = self._nodes.get(member)
            traces.update(dict.fromkeys(node.traces if node is not None else ()))
        for trace in traces:
            records.extend(self._by_trace.get(trace, ()))
        merged: dict[tuple[str, str], list[str]] = {}
        for r in records:
            merged.setdefault((r.description, r.failure_class), []).append(r.trace)
        return tuple(
            ConstraintView(d, fc, len(ts), tuple(dict.fromkeys(ts)))
            for (d, fc), ts in merged.items()
        )

    def marks(self, trace_id: str) -> tuple[MarkRecord, ...]:
        """The critical/noise labels given to a trace's steps."""
        return self._marks.get(trace_id, ())

    def edges(self, node_id: str | None = None) -> list[EdgeRecord]:
        """Edges from a node and its steps (or from all): stored links, then structural ones."""
        out: list[EdgeRecord] = []
        for nid in [node_id] if node_id is not None else list(self._nodes):
            steps = self._steps.get(nid, ())
            for src in (nid, *(s.id for s in steps)):
                out.extend(self._links.get(src, ()))
            out.extend(structural_edges(steps))
        return out

    def outcomes(self, node_id: str) -> tuple[int, int]:
        """(successes, failures) of the node's group: the traces they were dreamed from and
        the outcomes naming them, each try once (see the module docstring)."""
        tries: list[Credit] = []
        for member in self.group(node_id):
            tries.extend(self._credits.get(member, ()))
            node = self._nodes.get(member)
            tries.extend(node.traces if node is not None else ())
        return tally(tries, self._settled)

    def consumed(self) -> frozenset[str]:
        """Trace ids consumed by dream cycles that are not retracted."""
        return frozenset(self._consumed)

    def consumed_by(self, trace_id: str) -> str | None:
        """The cycle that consumed a trace, or None."""
        return self._consumed.get(trace_id)

    def cycles(self) -> list[CycleRecord]:
        """Dream cycles that are not retracted, in log order."""
        return list(self._cycles.values())

    def state(self) -> dict[str, Any]:
        """Everything the fold derived, as plain data (equal graphs have equal states)."""
        plain = {name[1:]: dict(getattr(self, name)) for name in _STATE}
        return msgspec.json.decode(msgspec.json.encode(plain))  # type: ignore[no-any-return]


_STATE: Final = ("_nodes", "_steps", "_links", "_by_node", "_by_trace", "_marks", "_absorbed",
                 "_cycles", "_consumed", "_actions", "_settled", "_credits",
                 "_counted_in")  # fmt: skip
_HANDLERS: Final[dict[type, Callable[[MemGraph, Any], None]]] = {
    DreamBegin: MemGraph._begin, DreamEnd: MemGraph._end, Node: MemGraph._node,
    ChildStep: MemGraph._child, Link: MemGraph._link, Constraint: MemGraph._constraint,
    Mark: MemGraph._mark, Merge: MemGraph._merge, Prune: MemGraph._prune,
}  # fmt: skip


def load_memgraph(log: EventLog, *, as_of: int | None = None) -> MemGraph:
    """Fold the log (as of a seq) into a memory graph: retractions first, then the rest."""
    cycles: set[str] = set()
    ids: set[str] = set()
    for event in log.replay(as_of, kinds=["retraction"]):
        if isinstance(event, Retraction):
            if event.target_cycle is not None:
                cycles.add(event.target_cycle)
            ids.update(event.targets)
    graph = MemGraph(cycles, ids)
    graph.apply_all(log.replay(as_of, kinds=MEMGRAPH_KINDS))
    return graph
