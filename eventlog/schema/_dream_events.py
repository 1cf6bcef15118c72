"""Dream and lifecycle events: every ISA opcode a dream emits becomes one of these.

A dream cycle is appended as one atomic batch: ``DreamBegin``, the opcode events, then
``DreamEnd``; all carry the same ``cycle`` id so a retraction can drop a cycle's effects.
"""

from typing import Literal

from ._events import Event, Float, Int


class DreamBegin(Event, frozen=True, tag="dream_begin"):
    """Opens a dream cycle: who dreamed, with what ISA version, over which traces."""

    cycle: str = ""
    dreamer: str = ""
    model: str | None = None
    isa_version: str = "1.0"
    traces: list[str] = []


class DreamEnd(Event, frozen=True, tag="dream_end"):
    """Closes a dream cycle: the traces it consumed and, for a model, its raw output."""

    cycle: str = ""
    status: str = "ok"
    consumed: list[str] = []
    model: str | None = None
    input_tokens: Int | None = None
    output_tokens: Int | None = None
    isa_text: str | None = None
    phase_log: list[str] = []


class Constraint(Event, frozen=True, tag="constraint"):
    """EXTRACT_CONSTRAINT: a negative constraint learned from a failed trace."""

    cycle: str = ""
    node: str | None = None
    trace: str = ""
    description: str = ""
    failure_class: str = ""


class Mark(Event, frozen=True, tag="mark"):
    """MARK_CRITICAL / MARK_NOISE: one step of a trace labelled."""

    cycle: str = ""
    trace: str = ""
    index: Int = 0
    label: Literal["critical", "noise"] = "critical"


class Node(Event, frozen=True, tag="node"):
    """BUILD_PARENT: a strategy node with its goal, summary and confidence."""

    cycle: str = ""
    node: str = ""
    goal: str = ""
    summary: str = ""
    confidence: Float = 0.5
    isa_version: str = "1.0"
    trigger_goals: list[str] = []
    traces: list[str] = []


class ChildStep(Event, frozen=True, tag="child_step"):
    """BUILD_CHILD: an ordered step of a strategy node."""

    cycle: str = ""
    node: str = ""
    index: Int = 0
    reasoning: str = ""
    action: str = ""
    result: str = ""
    critical: bool = True


class Link(Event, frozen=True, tag="link"):
    """LNK_NODE: a typed edge between two nodes."""

    cycle: str = ""
    src: str = ""
    dst: str = ""
    edge_type: str = ""
    weight: Float = 1.0


class Merge(Event, frozen=True, tag="merge"):
    """GRP_NODE: ``merged`` is folded into ``node`` (confidence and constraints pooled)."""

    cycle: str = ""
    node: str = ""
    merged: str = ""
    confidence: Float | None = None


class Prune(Event, frozen=True, tag="prune"):
    """PRN_NODE: a node is removed from the graph (its events stay in the log)."""

    cycle: str = ""
    node: str = ""
    reason: str | None = None


class Retraction(Event, frozen=True, tag="retraction"):
    """Undoes a dream cycle (``target_cycle``) or individual events (``targets``, by id)."""

    target_cycle: str | None = None
    targets: list[str] = []
    reason: str | None = None


class Lifecycle(Event, frozen=True, tag="lifecycle"):
    """Explicit survival-ledger lifecycle of a memory entry."""

    entry: str = ""
    op: Literal["birth", "pin", "unpin", "forget"] = "birth"
    energy: Float | None = None
    pinned: bool | None = None
    probation: Int | None = None
