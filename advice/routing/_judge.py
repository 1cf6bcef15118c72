"""A model as the router's applicability judge (optional: routing works without one).

Why: the offline verdict (:mod:`advice.routing._applicability`) can only compare vectors and
words. On held-out domains a task that shares a tool's name but is another job ("parse the
nginx access logs" against a stored nginx proxy setup) scores as high as a real new task of
the domain, so the offline rule must reject many related tasks to keep false memories rare.
A language model can tell "same kind of job" from "same words".

:class:`JudgedRouter` asks the judge only when some candidate passes the similarity floor
and the composite threshold (the same eligibility as offline, without the margin test); the
judge sees the task and at most ``candidates`` of them (goal, summary, first steps) and
answers with the number of the memory that applies, or 0. That answer replaces the offline
verdict. Drift checks (``current``) stay offline. A model that fails, or a reply that is not
a number in range, leaves the offline decision in place and its reasoning says why: a judge
never makes routing fail.

The model is any ``prompt -> reply`` callable (``evolog route --judge claude`` passes the
Claude model of :mod:`evolog.dream.evolve`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Final

import msgspec
from evolog.projections.graph import GraphReader

from ._router import EntryPoint, RouteDecision, Router, RouterError, RouterPath

__all__ = ["JudgeReplyError", "JudgedRouter", "ModelJudge", "judge_prompt", "read_choice"]

Model = Callable[[str], str]

_CHOICE: Final = re.compile(r"\s*\[?(\d+)\]?[\s.:)\-]*(.*)")
STEPS_SHOWN: Final = 4


class JudgeReplyError(RouterError):
    """The judge's reply does not name a candidate (or none)."""


def judge_prompt(task: str, memories: Sequence[tuple[EntryPoint, Sequence[str]]]) -> str:
    """The question put to the model: the task and each memory with its first steps."""
    lines = [
        "An AI agent keeps memories of strategies that worked on its past tasks.",
        "Decide which stored memory applies to its new task.",
        "",
        f"New task: {task.strip()}",
        "",
        "Stored memories:",
    ]
    for i, (entry, steps) in enumerate(memories, 1):
        lines.append(f"[{i}] goal: {entry.goal.strip()}")
        if entry.summary.strip():
            lines.append(f"    strategy: {entry.summary.strip()}")
        if steps:
            lines.append(f"    steps: {'; '.join(s.strip() for s in steps[:STEPS_SHOWN])}")
    lines += [
        "",
        "A memory applies only if its strategy would help with the new task: the same kind",
        "of job or problem, not merely the same tool, product or words.",
        "Answer on one line: the number of the memory that applies best, or 0 if none",
        "applies, then a short reason. Example: 2 same failure, same fix",
    ]
    return "\n".join(lines)


def read_choice(reply: str, count: int) -> tuple[int | None, str]:
    """(index of the chosen memory or None for none, the model's reason) from ``reply``."""
    first = next((line for line in reply.splitlines() if line.strip()), "")
    found = _CHOICE.match(first)
    number = int(found.group(1)) if found is not None else -1
    if found is None or number > count:
        raise JudgeReplyError(
            f"judge reply: expected a number from 0 to {count} first; got {first[:80]!r}"
        )
    reason = found.group(2).strip()[:200]
    return (None if number == 0 else number - 1), reason


class ModelJudge:
    """Asks ``model`` which of at most ``candidates`` memories applies to a task."""

    def __init__(self, model: Model, *, candidates: int = 5, name: str = "model") -> None:
        if candidates < 1:
            raise RouterError(f"candidates: expected a positive integer; got {candidates}")
        self.model = model
        self.candidates = candidates
        self.name = name

    def pick(
        self, task: str, entries: Sequence[EntryPoint], graph: GraphReader
    ) -> tuple[int | None, str]:
        """(index into ``entries`` of the memory that applies or None, the reason)."""
        shown = list(entries[: self.candidates])
        memories = [(e, [s.action or s.reasoning for s in graph.steps(e.node)]) for e in shown]
        return read_choice(self.model(judge_prompt(task, memories)), len(shown))


class JudgedRouter(Router):
    """A :class:`Router` whose applicability verdict comes from a :class:`ModelJudge`."""

    judge: ModelJudge

    @classmethod
    def around(cls, router: Router, judge: ModelJudge) -> JudgedRouter:
        """``router``'s graph, index, configuration and ledger, judged by ``judge``."""
        judged = cls(router.graph, router.index, router.config, router.dead)
        judged.judge = judge
        return judged

    def _route(self, task: str, current: str | None) -> RouteDecision:
        decision = super()._route(task, current)
        if current is not None:
            return decision
        eligible = [
            c
            for c in decision.candidates
            if c.similarity >= self.min_similarity and c.composite >= self.config.threshold
        ][: self.judge.candidates]
        if not eligible:
            return decision
        offline = decision.reasoning
        # Any failure of the model (network, API, an unreadable reply) keeps the offline
        # verdict: a judge is an improvement on routing, never a new way for it to fail.
        try:
            choice, reason = self.judge.pick(task, eligible, self.graph)
        except Exception as exc:
            why = f"{offline}; judge {self.judge.name} failed ({type(exc).__name__}: {exc})"
            return msgspec.structs.replace(decision, reasoning=why)
        said = f" ({reason})" if reason else ""
        if choice is None:
            why = f"judge {self.judge.name}: no memory applies{said}; offline: {offline}"
            top = decision.candidates[0].composite
            return RouteDecision(RouterPath.ZERO_SHOT, why, top, None, decision.candidates)
        best = eligible[choice]
        why = f"{best.node} applies: judge {self.judge.name}{said}; offline: {offline}"
        return RouteDecision(
            RouterPath.MEMORY_TRAVERSAL, why, best.composite, best, decision.candidates
        )
