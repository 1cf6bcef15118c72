"""The VM: runs a parsed program against a staging view of the memory graph.

Accumulate, then commit: each instruction becomes zero or one opcode event, folded at once
into a private overlay of the graph (so later instructions see earlier ones) and collected.
The caller commits a successful result by folding the same events into its own graph and
appending them to the log; a failed result is dropped whole. Rules beyond evolving-memory's
(docs/reference/dream-isa.md §4):

* The first failing instruction stops the program (``success`` false, ``error`` names the
  line); evolving-memory used the partial effects of failed programs.
* References are checked: BUILD_CHILD, LNK_NODE, GRP_NODE and PRN_NODE must name nodes that
  exist (a merged node stands for its survivor); MARK_* and EXTRACT_CONSTRAINT must name a
  trace of the cycle and an action index inside it, unless the context leaves traces
  unchecked (``traces=None``, for ``evolog isa run``).
* Every BUILD_CHILD attaches to the parent it names; a step index may not repeat.
* Constraints extracted by a program attach to the last parent the program built.
* A context may restrict a run to a phase's opcodes (``allowed``) and to the nodes it
  builds plus a given set (``scope``): a dreamer's per-trace program can then neither
  prune, merge nor link a node it did not create (see ``PHASE_OPCODES``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec
from evolog.eventlog import ChildStep, Constraint, Event, Link, Mark, Merge, Node, Prune
from evolog.projections import MemGraph, step_id

from .._errors import ProgramError
from .._traces import Trace
from ._opcodes import LAST_PARENT, Opcode
from ._parser import DEFAULT_MAX_INSTRUCTIONS, constraint_fields
from ._program import Instruction, Program

__all__ = ["VMContext", "VMResult", "merged_confidence", "run_program"]


def merged_confidence(
    keep: float, keep_traces: int, merged: float, merged_traces: int, fidelity: float
) -> float:
    """The survivor's confidence after a merge: both nodes' evidence pooled as counts.

    A node's confidence is read as the Laplace estimate ``(s + 1) / (n + 2)`` of its ``n``
    traces (at least 1), which the heuristic dreamer writes, so ``s = c·(n + 2) - 1``,
    clamped to ``[0, n]``; the merged node's counts are weighted by the fidelity of its
    source. The result is ``(s₁ + w·s₂ + 1) / (n₁ + w·n₂ + 2)``: two successes give 0.75 and a
    success merged with a failure 0.5 (evolving-memory's "max + 0.1" gave 0.77 and 0.57, and
    five successes 1.0; tests/data/dream_labelled_traces.json, bench/bench_dream_quality.py).
    """

    def counts(c: float, n: int) -> tuple[float, float]:
        n = max(1, n)
        return min(float(n), max(0.0, c * (n + 2) - 1)), float(n)

    (s1, n1), (s2, n2) = counts(keep, keep_traces), counts(merged, merged_traces)
    return (s1 + fidelity * s2 + 1) / (n1 + fidelity * n2 + 2)


def _default_minter() -> Callable[[], str]:
    counter = itertools.count(1)
    return lambda: f"node-run-{next(counter)}"


@dataclass(slots=True)
class VMContext:
    """What a program runs against.

    ``traces`` are the traces it may name (None: unchecked); ``trace`` is the one it is
    about (recorded on the nodes it builds); ``mint`` makes node ids; ``rebind`` makes the
    first BUILD_PARENT restate that existing node instead of creating one (ISA upgrades,
    compaction); ``search`` answers MEM_PTR; ``fidelity`` weighs a node's evidence.
    ``allowed``: the opcodes this run may execute (None: all), named ``phase`` in errors;
    ``scope``: the existing nodes it may name besides those it builds (None: any).
    """

    cycle: str = "run"
    graph: MemGraph = field(default_factory=MemGraph)
    traces: Mapping[str, Trace] | None = None
    trace: str | None = None
    mint: Callable[[], str] = field(default_factory=_default_minter)
    rebind: str | None = None
    search: Callable[[str], str | None] | None = None
    fidelity: Callable[[str], float] = lambda _node: 1.0
    max_instructions: int = DEFAULT_MAX_INSTRUCTIONS
    phase: str = "run"
    allowed: frozenset[Opcode] | None = None
    scope: frozenset[str] | None = None


class VMResult(msgspec.Struct, frozen=True):
    """What a run produced; ``events`` are meaningful only when ``success`` is true."""

    success: bool
    instructions_executed: int
    events: tuple[Event, ...] = ()
    output: tuple[str, ...] = ()
    side_effects: tuple[str, ...] = ()
    error: str | None = None
    error_line: int = 0
    built: tuple[str, ...] = ()
    accumulator: str | int | None = None


@dataclass(slots=True)
class _Run:
    ctx: VMContext
    view: MemGraph
    isa_version: str
    events: list[Event] = field(default_factory=list)
    output: list[str] = field(default_factory=list)
    effects: list[str] = field(default_factory=list)
    built: list[str] = field(default_factory=list)
    last_parent: str | None = None
    rebound: bool = False

    def emit(self, event: Event, effect: str) -> None:
        self.view.apply(event)  # type: ignore[arg-type]
        self.events.append(event)
        self.effects.append(effect)


def run_program(program: Program, ctx: VMContext | None = None) -> VMResult:
    """Run ``program``; never raises for a bad program (the result says what failed)."""
    ctx = ctx if ctx is not None else VMContext()
    run = _Run(ctx, ctx.graph.overlay(), program.isa_version)
    executed = 0
    accumulator: str | int | None = None
    for inst in program.instructions:
        if executed >= ctx.max_instructions:
            return _failed(run, executed, f"max_instructions={ctx.max_instructions} reached", 0)
        executed += 1
        if ctx.allowed is not None and inst.opcode not in ctx.allowed:
            allowed = ", ".join(sorted(ctx.allowed))
            error = f"L{inst.line}: {inst.opcode}: not allowed in the {ctx.phase} phase"
            return _failed(run, executed, f"{error} (allowed: {allowed})", inst.line)
        if inst.opcode is Opcode.HALT:
            break
        try:
            accumulator = _HANDLERS[inst.opcode](run, inst)
        except ProgramError as exc:
            return _failed(run, executed, f"L{inst.line}: {inst.opcode}: {exc}", inst.line)
    events = _attach_constraints(run.events, run.last_parent)
    return VMResult(
        True, executed, tuple(events), tuple(run.output), tuple(run.effects),
        built=tuple(run.built), accumulator=accumulator,
    )  # fmt: skip


def _failed(run: _Run, executed: int, error: str, line: int) -> VMResult:
    return VMResult(False, executed, (), tuple(run.output), tuple(run.effects), error, line, ())


def _attach_constraints(events: list[Event], parent: str | None) -> list[Event]:
    if parent is None:
        return events
    return [
        msgspec.structs.replace(e, node=parent)
        if isinstance(e, Constraint) and e.node is None
        else e
        for e in events
    ]


# -- dream opcodes -------------------------------------------------------------------------
def _trace(run: _Run, trace_id: str) -> Trace | None:
    traces = run.ctx.traces
    if traces is None:
        return None
    trace = traces.get(trace_id)
    if trace is None:
        known = ", ".join(sorted(traces)[:5]) or "none"
        raise ProgramError(f"trace {trace_id!r} is not a trace of this cycle (known: {known})")
    return trace


def _extract_constraint(run: _Run, inst: Instruction) -> str:
    trace_id, description, failure_class = constraint_fields(inst)
    _trace(run, trace_id)
    event = Constraint(
        cycle=run.ctx.cycle, trace=trace_id, description=description, failure_class=failure_class
    )
    run.emit(event, f"EXTRACT_CONSTRAINT: {description[:50]}")
    return description


def _mark(run: _Run, inst: Instruction) -> int:
    trace_id, raw = inst.args
    index = int(raw)
    trace = _trace(run, trace_id)
    if trace is not None and index >= len(trace.steps):
        raise ProgramError(
            f"action index {index} is outside trace {trace_id!r} ({len(trace.steps)} steps)"
        )
    label: Literal["critical", "noise"] = (
        "critical" if inst.opcode is Opcode.MARK_CRITICAL else "noise"
    )
    event = Mark(cycle=run.ctx.cycle, trace=trace_id, index=index, label=label)
    run.emit(event, f"{inst.opcode}: {trace_id}[{index}]")
    return index


def _build_parent(run: _Run, inst: Instruction) -> str:
    goal, summary, confidence = inst.args
    node_id = _parent_id(run)
    trace = run.ctx.trace
    event = Node(
        cycle=run.ctx.cycle,
        node=node_id,
        goal=goal,
        summary=summary,
        confidence=float(confidence),
        isa_version=run.isa_version,
        trigger_goals=[goal] if goal else [],
        traces=[trace] if trace else [],
    )
    run.emit(event, f"BUILD_PARENT: {goal[:40]} -> {node_id}")
    run.last_parent = node_id
    run.built.append(node_id)
    return node_id


def _parent_id(run: _Run) -> str:
    target = run.ctx.rebind
    if target is None:
        return run.ctx.mint()
    if run.rebound:
        raise ProgramError(f"a restatement of {target!r} may hold only one BUILD_PARENT")
    if run.view.node(target) is None:
        raise ProgramError(f"node {target!r} to restate does not exist")
    run.rebound = True
    return target


def _build_child(run: _Run, inst: Instruction) -> str:
    ref, raw_index, reasoning, action, result = inst.args
    parent = _parent_ref(run, ref)
    index = int(raw_index)
    restating = run.ctx.rebind == parent
    if not restating and any(s.index == index for s in run.view.steps(parent)):
        raise ProgramError(f"node {parent!r} already has a step {index}")
    event = ChildStep(
        cycle=run.ctx.cycle,
        node=parent,
        index=index,
        reasoning=reasoning,
        action=action,
        result=result,
    )
    run.emit(event, f"BUILD_CHILD: step {index} of {parent[:24]}")
    return step_id(parent, index)


def _parent_ref(run: _Run, ref: str) -> str:
    if ref == LAST_PARENT:
        if run.last_parent is None:
            raise ProgramError(f"{LAST_PARENT} used before any BUILD_PARENT")
        return run.last_parent
    return _live_node(run, ref)


def _live_node(run: _Run, ref: str) -> str:
    resolved = run.view.resolve(ref)
    if resolved is None:
        raise ProgramError(f"node {ref!r} does not exist")
    node = run.view.node(resolved)
    if node is not None and node.pruned:
        raise ProgramError(f"node {ref!r} was pruned")
    scope = run.ctx.scope
    if scope is not None and resolved not in scope and resolved not in run.built:
        raise ProgramError(
            f"node {ref!r} was not built by this program; a {run.ctx.phase} program may"
            " only name the nodes it builds"
            + (f" and {', '.join(sorted(scope)[:6])}" if scope else "")
        )
    return resolved


def _endpoint(run: _Run, ref: str) -> str:
    if ref == LAST_PARENT:
        return _parent_ref(run, ref)
    node, sep, index = ref.partition("#")
    if not sep:
        return _live_node(run, ref)
    survivor = _live_node(run, node)
    if not any(str(s.index) == index for s in run.view.steps(survivor)):
        raise ProgramError(f"step {ref!r} does not exist")
    return step_id(survivor, int(index))


def _link(run: _Run, inst: Instruction) -> str:
    src, dst = _endpoint(run, inst.args[0]), _endpoint(run, inst.args[1])
    if src == dst:
        raise ProgramError(f"a node cannot link to itself ({src!r})")
    event = Link(cycle=run.ctx.cycle, src=src, dst=dst, edge_type=inst.args[2])
    run.emit(event, f"LNK_NODE: {src[:24]} -> {dst[:24]} ({inst.args[2]})")
    return inst.args[2]


def _group(run: _Run, inst: Instruction) -> str:
    keep, merged = _live_node(run, inst.args[0]), _live_node(run, inst.args[1])
    if keep == merged:
        raise ProgramError(f"{inst.args[0]!r} and {inst.args[1]!r} are already one node")
    a, b = run.view.node(keep), run.view.node(merged)
    assert a is not None and b is not None  # _live_node checked both
    # Supporting evidence (the strategy worked again) raises confidence and contradicting
    # evidence (it failed again) lowers it, each weighted by how far its source is trusted.
    fidelity = run.ctx.fidelity(merged)
    confidence = merged_confidence(a.confidence, len(a.traces), b.confidence, len(b.traces),
                                   fidelity)  # fmt: skip
    event = Merge(cycle=run.ctx.cycle, node=keep, merged=merged, confidence=round(confidence, 6))
    run.emit(event, f"GRP_NODE: {keep[:24]} + {merged[:24]}")
    return keep


def _prune(run: _Run, inst: Instruction) -> str:
    node = _live_node(run, inst.args[0])
    run.emit(Prune(cycle=run.ctx.cycle, node=node), f"PRN_NODE: {node}")
    return node


# -- memory and system opcodes -------------------------------------------------------------
def _mem_ptr(run: _Run, inst: Instruction) -> str | None:
    search = run.ctx.search
    found = search(" ".join(inst.args)) if search is not None else None
    if found is not None:
        run.effects.append(f"MEM_PTR: found {found}")
    return found


def _mem_read(run: _Run, inst: Instruction) -> str | None:
    ref = inst.args[0]
    node = run.view.node(ref)
    if node is not None:
        return node.summary
    owner, _, index = ref.partition("#")
    step = next((s for s in run.view.steps(owner) if str(s.index) == index), None)
    return step.action if step is not None else None


def _sibling(run: _Run, ref: str, offset: int) -> str | None:
    owner, sep, index = ref.partition("#")
    steps = run.view.steps(owner) if sep else ()
    positions = [i for i, s in enumerate(steps) if str(s.index) == index]
    if not positions or not 0 <= positions[0] + offset < len(steps):
        return None
    return steps[positions[0] + offset].id


def _mem_next(run: _Run, inst: Instruction) -> str | None:
    return _sibling(run, inst.args[0], 1)


def _mem_prev(run: _Run, inst: Instruction) -> str | None:
    return _sibling(run, inst.args[0], -1)


def _mem_parent(run: _Run, inst: Instruction) -> str | None:
    owner, sep, _ = inst.args[0].partition("#")
    return owner if sep and _sibling(run, inst.args[0], 0) is not None else None


def _mem_jmp(run: _Run, inst: Instruction) -> str | None:
    found = _mem_read(run, inst)
    if found is not None:
        run.effects.append(f"MEM_JMP: jumped to {inst.args[0]}")
    return found


def _nop(run: _Run, inst: Instruction) -> None:
    return None


def _yield(run: _Run, inst: Instruction) -> str:
    message = " ".join(inst.args)
    run.output.append(message)
    return message


_HANDLERS: dict[Opcode, Callable[[_Run, Instruction], Any]] = {
    Opcode.EXTRACT_CONSTRAINT: _extract_constraint,
    Opcode.MARK_CRITICAL: _mark,
    Opcode.MARK_NOISE: _mark,
    Opcode.BUILD_PARENT: _build_parent,
    Opcode.BUILD_CHILD: _build_child,
    Opcode.LNK_NODE: _link,
    Opcode.GRP_NODE: _group,
    Opcode.PRN_NODE: _prune,
    Opcode.MEM_PTR: _mem_ptr,
    Opcode.MEM_READ: _mem_read,
    Opcode.MEM_NEXT: _mem_next,
    Opcode.MEM_PREV: _mem_prev,
    Opcode.MEM_PARENT: _mem_parent,
    Opcode.MEM_JMP: _mem_jmp,
    Opcode.NOP: _nop,
    Opcode.YIELD: _yield,
}
