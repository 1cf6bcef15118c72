"""ReMe: success and failure patterns with ``when_to_use``, extracted from traces.

The offline extraction reads a trace's steps and outcome: a success gives a pattern that
repeats the steps that worked, a failure one that names what failed and says to avoid it;
``when_to_use`` is the task (and the signals) the pattern applies to. With a model, the
model writes the pattern and its ``when_to_use`` as one JSON object; a reply that is not
one falls back to the offline pattern (upstream returns nothing for that trace).

Patterns of the same kind whose ``when_to_use`` and content each match with
``SequenceMatcher`` ratio > ``threshold`` (0.85) are duplicates: the newer supersedes the
older and absorbs it (seed 001's rule; upstream keeps the longer text, which lets a stale
but wordy pattern outlive the lesson that replaced it).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from difflib import SequenceMatcher
from typing import TYPE_CHECKING, Final

from ._items import EvolveContext, EvolveItem, Model
from ._learn import absorb, actions, derived_id, failure, goal, learnable
from ._pipeline import Strategy

if TYPE_CHECKING:
    from .._traces import Trace

__all__ = ["BRANCH", "TAG", "ReMe", "pattern_from"]

BRANCH: Final = "reme"
TAG: Final = "reme"
PROMPT: Final = (
    "An agent attempted this task.\nTask: {goal}\nSteps: {steps}\nOutcome: {status}\n"
    'Answer with one JSON object {{"content": "...", "when_to_use": "..."}}: the reusable '
    "lesson (what to do again, or what to avoid) and when it applies."
)


def pattern_from(trace: Trace, model: Model | None = None) -> EvolveItem:
    """The pattern a trace teaches (see the module docstring)."""
    g = goal(trace)
    signals = f" (signals: {', '.join(trace.signals)})" if trace.signals else ""
    when = f"When the task is to {g[0].lower()}{g[1:]}{signals}"
    if trace.succeeded:
        steps = actions(trace)
        content = "Do: " + " -> ".join(steps) if steps else f"Repeat what solved: {g}"
        kind = "success"
    else:
        content = f"Avoid: {failure(trace)}"
        kind = "failure"
    if model is not None:
        content, when = _ask(model, trace, content, when)
    return EvolveItem(
        id=derived_id("reme", trace.id),
        branch=BRANCH,
        text=content,
        tags=(TAG, kind),
        when_to_use=when,
        pattern=kind,
        origin=TAG,
        seq=trace.seq,
    )


def _ask(model: Model, trace: Trace, content: str, when: str) -> tuple[str, str]:
    steps = "; ".join(
        f"{s.action or s.reasoning}{' FAILED: ' + (s.error or '') if s.failed else ''}"
        for s in trace.steps
    )
    reply = model(PROMPT.format(goal=trace.goal, steps=steps or "-", status=trace.status))
    try:
        data = json.loads(reply.strip().removeprefix("```json").strip("`").strip())
    except ValueError:
        return content, when
    if not isinstance(data, dict):
        return content, when
    c, w = data.get("content"), data.get("when_to_use")
    if isinstance(c, str) and c.strip() and isinstance(w, str) and w.strip():
        return " ".join(c.split()), " ".join(w.split())
    return content, when


class ReMe(Strategy):
    """Extract and deduplicate patterns; see the module docstring."""

    name = "reme"

    def __init__(self, *, threshold: float = 0.85, model: Model | None = None) -> None:
        self.threshold = threshold
        self.model = model

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ReMe) and (self.threshold, self.model) == (
            other.threshold,
            other.model,
        )

    def uses_model(self, context: EvolveContext) -> bool:
        return (self.model or context.model) is not None

    def __hash__(self) -> int:
        return hash((self.name, self.threshold))

    def extract(self, context: EvolveContext, have: set[str]) -> list[EvolveItem]:
        model = self.model or context.model
        return [
            pattern_from(t, model)
            for t in context.traces
            if learnable(t) and derived_id("reme", t.id) not in have
        ]

    def evolve(self, items: Sequence[EvolveItem], context: EvolveContext) -> list[EvolveItem]:
        have = {i.id for i in items} | set(context.known)
        return dedup([*items, *self.extract(context, have)], self.threshold)


def _similar(a: SequenceMatcher[str], b: SequenceMatcher[str], threshold: float) -> bool:
    # The quick ratios are upper bounds of ratio(): most pairs are rejected without it.
    return all(
        m.real_quick_ratio() > threshold and m.quick_ratio() > threshold for m in (a, b)
    ) and all(m.ratio() > threshold for m in (a, b))


def dedup(pool: Sequence[EvolveItem], threshold: float) -> list[EvolveItem]:
    """Patterns with the newer of each duplicate pair kept, absorbing the older.

    Both ``when_to_use`` and the content must match: over the two joined, a pattern for
    another task with the same steps matched too (precision 0.67 on bench/bench_evolve.py's
    labelled pairs, 0.98 with both).
    """
    order = sorted((k for k, i in enumerate(pool) if TAG in i.tags), key=lambda k: pool[k].seq)
    winner: dict[int, int] = {}  # pattern -> the newer pattern that superseded it
    kept: list[int] = []
    for k in order:
        when = SequenceMatcher(None, autojunk=False)
        what = SequenceMatcher(None, autojunk=False)
        when.set_seq2(pool[k].when_to_use)  # SequenceMatcher caches what it learns of seq2
        what.set_seq2(pool[k].text)
        for old in list(kept):
            if pool[old].pattern != pool[k].pattern:
                continue
            when.set_seq1(pool[old].when_to_use)
            what.set_seq1(pool[old].text)
            if _similar(when, what, threshold):
                winner[old] = k
                kept.remove(old)
        kept.append(k)
    final: dict[int, int] = {}
    for old, new in winner.items():
        while new in winner:
            new = winner[new]
        final[old] = new
    return absorb(pool, final)
