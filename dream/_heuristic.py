"""The default dreamer: deterministic heuristics, offline, no model.

Per trace (action index = position in the trace's ordered steps):

* constraints: a failed outcome yields one constraint per failed step (its action, error and
  the trace's error signature), or one for the whole approach when no step failed; the
  failure class is read from the error text;
* noise: failed steps, and steps repeated later with the same tool and action (retries);
* critical path: every other step, in order;
* REM: a parent whose goal is the task, whose summary is the critical path, and whose
  confidence comes from the outcome (and its score, when it has one), then one child per
  critical step.

Links: SIMILAR_TO from a new node to each neighbour offered. Compaction: the summary cut at a
word boundary.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from evolog.projections.graph._memgraph import StepRecord, StrategyNode

from ._dreamer import DreamProgram, LinkCandidate, clean_text
from ._traces import Trace, TraceStep
from .isa._opcodes import LAST_PARENT, Opcode
from .isa._program import Instruction

__all__ = ["HeuristicDreamer", "classify_failure", "confidence_of"]

_CLASS_PATTERNS: Final = (
    ("timeout", re.compile(r"time(d)?[ _-]?out|deadline exceeded", re.I)),
    ("permission_denied", re.compile(r"permission denied|eacces|forbidden|\b40[13]\b", re.I)),
    ("test_failure", re.compile(r"assert|tests? fail|failed tests?|pytest", re.I)),
    (
        "environment",
        re.compile(
            r"modulenotfound|importerror|no such file|not installed|no space left|enospc"
            r"|connection refused|command not found",
            re.I,
        ),
    ),
    (
        "logic_error",
        re.compile(
            r"typeerror|valueerror|keyerror|attributeerror|indexerror"
            r"|nonetype|zerodivision",
            re.I,
        ),
    ),
)
SUMMARY_LIMIT: Final = 200
"""Summaries longer than this are compaction candidates."""


def classify_failure(text: str, tool: str | None = None) -> str:
    """The failure class an error text suggests (``unknown_failure`` when nothing matches)."""
    for name, pattern in _CLASS_PATTERNS:
        if pattern.search(text):
            return name
    return "tool_error" if tool else "unknown_failure"


def confidence_of(trace: Trace) -> float:
    """Confidence of a strategy learned from one trace: its outcome, blended with its score."""
    base = 0.8 if trace.succeeded else 0.3 if trace.failed else 0.5
    score = trace.score
    if score is not None and 0.0 <= score <= 1.0:
        base = (base + score) / 2
    return round(base, 3)


def _noise(steps: Sequence[TraceStep]) -> set[int]:
    noise = {i for i, s in enumerate(steps) if s.failed}
    last_seen: dict[tuple[str | None, str], int] = {}
    for i, step in enumerate(steps):
        key = (step.tool, step.action.strip().lower())
        if key[1] and key in last_seen:
            noise.add(last_seen[key])  # an earlier try of a step that was done again
        last_seen[key] = i
    return noise


def _step_error(step: TraceStep) -> str:
    return step.error or (step.result if step.failed else "") or ""


def _constraints(trace: Trace) -> list[Instruction]:
    if not trace.failed:
        return []
    signature = f" (error signature: {trace.error_signature})" if trace.error_signature else ""
    out: list[Instruction] = []
    for step in (s for s in trace.steps if s.failed):
        error = _step_error(step)
        what = step.action or step.tool or step.reasoning or f"step {step.index}"
        text = f"avoid '{what}' as done here: it failed" + (f" with {error}" if error else "")
        cls = classify_failure(f"{error} {trace.error_signature or ''}", step.tool)
        out.append(_constraint(trace.id, text + signature, cls))
    if not out:
        actions = " → ".join(s.action for s in trace.steps if s.action) or "the attempt"
        note = f": {trace.note}" if trace.note else ""
        text = f"the approach '{actions}' did not resolve the task{note}"
        cls = classify_failure(f"{trace.note or ''} {trace.error_signature or ''}")
        out.append(_constraint(trace.id, text + signature, cls))
    return out


def _constraint(trace_id: str, text: str, cls: str) -> Instruction:
    return Instruction(Opcode.EXTRACT_CONSTRAINT, (trace_id, clean_text(text), cls))


def _marks(trace: Trace, noise: set[int]) -> list[Instruction]:
    out = [Instruction(Opcode.MARK_NOISE, (trace.id, str(i))) for i in sorted(noise)]
    out += [
        Instruction(Opcode.MARK_CRITICAL, (trace.id, str(i)))
        for i in range(len(trace.steps))
        if i not in noise
    ]
    return out


def _rem(trace: Trace, critical: list[TraceStep]) -> list[Instruction]:
    goal = clean_text(trace.goal, 300)
    if not goal:
        return []
    actions = [clean_text(s.action or s.tool or s.reasoning, 80) for s in critical]
    summary = " → ".join(a for a in actions if a) or f"no reusable steps for {goal}"
    out = [
        Instruction(
            Opcode.BUILD_PARENT,
            (goal, clean_text(summary, 2 * SUMMARY_LIMIT), f"{confidence_of(trace):g}"),
        )
    ]
    for n, step in enumerate(critical):
        args = (LAST_PARENT, str(n), clean_text(step.reasoning), clean_text(step.action),
                clean_text(step.result))  # fmt: skip
        out.append(Instruction(Opcode.BUILD_CHILD, args))
    return out


class HeuristicDreamer:
    """Deterministic, offline dreamer (the default)."""

    name: Final = "heuristic"
    model: Final = None
    records_text: Final = False
    batch_size: Final = 500

    def dream_trace(self, trace: Trace) -> DreamProgram:
        """SWS (constraints, marks) and REM (parent, children) for one trace."""
        noise = _noise(trace.steps)
        critical = [s for i, s in enumerate(trace.steps) if i not in noise]
        program = [*_constraints(trace), *_marks(trace, noise), *_rem(trace, critical)]
        program.append(Instruction(Opcode.HALT))
        return DreamProgram(trace=trace.id, instructions=tuple(program))

    def link(self, candidates: Sequence[LinkCandidate]) -> DreamProgram:
        """One SIMILAR_TO edge per candidate pair, weight left to the similarity search."""
        lines = [
            Instruction(Opcode.LNK_NODE, (c.node.id, c.neighbour.id, "SIMILAR_TO"))
            for c in candidates
        ]
        return DreamProgram(instructions=tuple(lines))

    def compact(self, node: StrategyNode, steps: Sequence[StepRecord]) -> DreamProgram:
        """Restate ``node`` with its summary cut at a word boundary, if it is too long."""
        if len(node.summary) <= SUMMARY_LIMIT:
            return DreamProgram("")
        cut = node.summary[: SUMMARY_LIMIT - 1].rsplit(" ", 1)[0].rstrip(" →,;") + "…"
        inst = Instruction(Opcode.BUILD_PARENT, (node.goal, cut, f"{node.confidence:g}"))
        return DreamProgram(instructions=(inst,))
