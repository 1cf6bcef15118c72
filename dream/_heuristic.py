"""The default dreamer: deterministic heuristics, offline, no model.

Per trace (action index = position in the trace's ordered steps):

* constraints (measured on tests/data/dream_labelled_traces.json): a failed
  outcome yields one constraint per step that was the mistake, or one for the whole approach
  when no step is to blame. A failed step that *checks* (tests, builds, linters, running the
  program: :data:`_CHECK`) reports an earlier change, so the constraint names the latest
  change before it (not "avoid 'run tests'"); a check that fails before any change names
  nothing. A failed step repeated later with success was transient and names nothing. The
  failure class is read from the error text;
* noise: failed steps, and steps repeated later with the same tool and action (retries);
* critical path: every other step, in order;
* REM: a parent whose goal is the task, whose summary is the critical path, and whose
  confidence is the posterior mean of its success rate after this one outcome, from a
  uniform prior: 2/3 for a success, 1/3 for a failure, 1/2 otherwise (one lucky success is
  not a 0.85 strategy; the outcome's score is the agent's own opinion and moved confidence
  away from the observed rates, so it is left out), then one child per critical step.

Links: SIMILAR_TO from a new node to each neighbour offered. Compaction: the summary cut at a
word boundary.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from evolog.projections import StepRecord, StrategyNode
from evolog.projections.memory import error_signature, safe_text

from ._dreamer import DreamProgram, LinkCandidate, clean_text
from ._traces import Trace, TraceStep
from .isa._opcodes import LAST_PARENT, Opcode
from .isa._program import Instruction

__all__ = ["HeuristicDreamer", "blamed_steps", "classify_failure", "confidence_of"]

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
_CHECK: Final = re.compile(
    r"^(?:bash\s+)?(?:run|re-run|rerun|test|check|verify|build|compile|lint|execute)\b"
    r"|\b(?:pytest|tox|nox|jest|mocha|vitest|unittest|mypy|ruff|flake8|pylint|eslint|tsc"
    r"|make|ctest|(?:npm|yarn|pnpm)\s+(?:run\s+)?(?:test|build|lint)|go\s+(?:test|build|vet)"
    r"|cargo\s+(?:test|build|check|run)|docker\s+build|gradle|mvn|python\s+-c"
    r"|python3?\s+\S+\.py)\b",
    re.I,
)
"""A step that checks the work (runs tests, a build, a linter, the program) rather than
changing it: when it fails, the mistake is usually the change before it."""
SUMMARY_LIMIT: Final = 200
"""Summaries longer than this are compaction candidates."""


def classify_failure(text: str, tool: str | None = None) -> str:
    """The failure class an error text suggests (``unknown_failure`` when nothing matches)."""
    for name, pattern in _CLASS_PATTERNS:
        if pattern.search(text):
            return name
    return "tool_error" if tool else "unknown_failure"


def confidence_of(trace: Trace) -> float:
    """Confidence of a strategy learned from one trace: the posterior mean of its success
    rate after this outcome, from a uniform prior (Laplace: (successes + 1) / (tries + 2))."""
    if trace.succeeded:
        return round(2 / 3, 3)
    return round(1 / 3, 3) if trace.failed else 0.5


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


_EDIT_TOOLS: Final = frozenset({"edit", "write", "multiedit", "notebookedit"})


def _is_check(step: TraceStep) -> bool:
    """A step that checks the work; an editing tool's step changes it, whatever it names."""
    return (step.tool or "").lower() not in _EDIT_TOOLS and bool(_CHECK.search(_what(step)))


def _what(step: TraceStep) -> str:
    return step.action or step.tool or step.reasoning or f"step {step.index}"


def blamed_steps(steps: Sequence[TraceStep]) -> list[tuple[TraceStep, TraceStep]]:
    """(the step to avoid, the failed step that showed it), in order, without repeats."""
    out: list[tuple[TraceStep, TraceStep]] = []
    for i, step in enumerate(steps):
        if not step.failed:
            continue
        key = (step.tool, step.action.strip().lower())
        if any((s.tool, s.action.strip().lower()) == key and not s.failed for s in steps[i + 1 :]):
            continue  # the same step worked when repeated: transient, not a lesson
        culprit: TraceStep | None = step
        if _is_check(step):
            # A failed check reports on the work before it; the latest change is to blame.
            culprit = next(
                (s for s in reversed(steps[:i]) if not s.failed and not _is_check(s)),
                None,
            )
        if culprit is not None and all(culprit is not c for c, _ in out):
            out.append((culprit, step))
    return out


def _constraints(trace: Trace) -> list[Instruction]:
    """Constraints quote what the tools did and said only as display-safe text, and errors
    only as their signatures: a constraint is read back to the agent as a lesson, and a
    tool's error prose (a fetched page's, say) must not become one."""
    if not trace.failed:
        return []
    sig = trace.error_signature
    signature = f" (error signature: {error_signature(sig, 160)})" if sig else ""
    out: list[Instruction] = []
    for culprit, failed in blamed_steps(trace.steps):
        error = _step_error(failed)
        with_error = f" with {error_signature(error, 160)}" if error else ""
        if culprit is failed:
            text = f"avoid '{_shown(culprit)}' as done here: it failed{with_error}"
        else:
            text = (
                f"avoid '{_shown(culprit)}' as done here: '{_shown(failed)}' then failed"
                f"{with_error}"
            )
        cls = classify_failure(f"{error} {trace.error_signature or ''}", failed.tool)
        out.append(_constraint(trace.id, text + signature, cls))
    if not out:
        actions = " → ".join(safe_text(s.action, 80) for s in trace.steps if s.action)
        actions = actions or "the attempt"
        note = f": {safe_text(trace.note, 200)}" if trace.note else ""
        text = f"the approach '{actions}' did not resolve the task{note}"
        cls = classify_failure(f"{trace.note or ''} {trace.error_signature or ''}")
        out.append(_constraint(trace.id, text + signature, cls))
    return out


def _shown(step: TraceStep) -> str:
    # The constraint quotes the step in '...': its own apostrophes become U+2019.
    return safe_text(_what(step), 160).replace("'", "\u2019")


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
    # The goal may be "handle <signals>" (error signatures among them) and the steps are
    # tool commands: all of it is shown as display-safe text (see _untrusted).
    goal = safe_text(trace.goal, 300)
    if not goal:
        return []
    actions = [safe_text(s.action or s.tool or s.reasoning or "", 80) for s in critical]
    summary = " → ".join(a for a in actions if a) or f"no reusable steps for {goal}"
    out = [
        Instruction(
            Opcode.BUILD_PARENT,
            (goal, clean_text(summary, 2 * SUMMARY_LIMIT), f"{confidence_of(trace):g}"),
        )
    ]
    for n, step in enumerate(critical):
        args = (LAST_PARENT, str(n), safe_text(step.reasoning), safe_text(step.action),
                safe_text(step.result))  # fmt: skip
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
