"""What a dreamer is: something that writes ISA programs for traces and node pairs.

The cycle asks a dreamer for one program per trace (its SWS and REM phases: constraints,
critical/noise marks, then BUILD_PARENT and its BUILD_CHILD steps), one program linking new
nodes to their neighbours, and, when compaction is on, shorter summaries. Everything a
dreamer writes is parsed and run by the VM before any of it reaches the log.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import msgspec
from evolog.projections import StepRecord, StrategyNode

from ._traces import Trace
from .isa._program import Instruction
from .isa._serializer import LINE_BREAKS

__all__ = ["DreamProgram", "Dreamer", "LinkCandidate", "clean_text"]


class DreamProgram(msgspec.Struct, frozen=True):
    """What a dreamer wrote for one trace (or for a cycle's links), and what it cost.

    A model writes ``text``, which the parser reads; a dreamer in Python may hand over
    ``instructions`` instead, which are validated by the same rules (``text`` is then
    ``serialize_program(instructions)`` when it is needed).
    """

    text: str = ""
    trace: str | None = None
    model: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    instructions: tuple[Instruction, ...] | None = None


class LinkCandidate(msgspec.Struct, frozen=True):
    """A new node and an existing neighbour that may deserve an edge."""

    node: StrategyNode
    neighbour: StrategyNode
    similarity: float
    node_steps: tuple[StepRecord, ...] = ()
    neighbour_steps: tuple[StepRecord, ...] = ()


class Dreamer(Protocol):
    """The interface the dream cycle drives; see :mod:`evolog.dream._heuristic` for the default."""

    @property
    def name(self) -> str:
        """Recorded as the dreamer of each cycle (``heuristic``, ``claude``)."""
        ...

    @property
    def model(self) -> str | None:
        """The model behind the dreamer, if any."""
        ...

    @property
    def records_text(self) -> bool:
        """Whether the cycle keeps the raw ISA text in its dream-end event."""
        ...

    @property
    def batch_size(self) -> int:
        """Traces per cycle unless the caller says otherwise."""
        ...

    def dream_trace(self, trace: Trace) -> DreamProgram:
        """The SWS + REM program for one trace."""
        ...

    def link(self, candidates: Sequence[LinkCandidate]) -> DreamProgram:
        """LNK_NODE lines for the candidate pairs worth an edge (may be empty)."""
        ...

    def compact(self, node: StrategyNode, steps: Sequence[StepRecord]) -> DreamProgram:
        """A BUILD_PARENT restating ``node`` with a shorter summary (may be empty)."""
        ...


_TRANSLATE = {ord(c): " " for c in LINE_BREAKS}


def clean_text(text: str, limit: int = 400) -> str:
    """``text`` on one line, valid Unicode, at most ``limit`` characters.

    ISA arguments cannot hold line breaks, and agent output (tool results, tracebacks)
    is full of them; unpaired surrogates cannot be encoded at all.
    """
    flat = text.translate(_TRANSLATE).encode("utf-8", "replace").decode("utf-8")
    flat = " ".join(flat.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"
