"""ReMe: success and failure patterns with ``when_to_use``, extracted from traces.

The offline extraction reads a trace's steps and outcome: a success gives a pattern that
repeats the steps that worked, a failure one that names what failed and says to avoid it;
``when_to_use`` is the task (and the signals) the pattern applies to. With a model, the
model writes the pattern and its ``when_to_use`` as one JSON object; a reply that is not
one falls back to the offline pattern (upstream returns nothing for that trace).

Patterns of the same kind whose ``when_to_use`` and content each match with
``SequenceMatcher`` ratio > ``threshold`` (0.85) are duplicates: the newer supersedes the
older and absorbs it (seed 001's rule; upstream keeps the longer text, which lets a stale
but wordy pattern outlive the lesson that replaced it). Whatever the ratio, two patterns
that give opposite instructions or list different steps stay apart (:mod:`._guard`): two
step sequences of one task that differ in one step can score above 0.85. That is the seed's
rule (``rule="seed"``); by default (``rule="align"``, with the context's embedder) it
applies to the offline templates only, and written patterns (a model's) of the same kind
are compared by word alignment of their contents (:mod:`._align`): a reworded lesson's
character ratio is 0.19-0.78, so the seed's rule merged none (bench/RESULTS.md). The newer
still supersedes the older.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from difflib import SequenceMatcher
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import numpy.typing as npt
from evolog.projections.memory import error_signature, safe_text

from ._align import NEAREST, Aligner, check_rule, templated, threshold_for
from ._guard import may_merge
from ._items import EvolveContext, EvolveItem, Model
from ._learn import absorb, actions, derived_id, failure, goal, learnable
from ._pipeline import Strategy

if TYPE_CHECKING:
    from evolog.projections import Embedder

    from .._traces import Trace

__all__ = ["BRANCH", "TAG", "ReMe", "pattern_from"]

Counts = npt.NDArray[Any]
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
    # The steps are recorded tool data: display-safe, errors as their signatures only.
    steps = "; ".join(
        safe_text(s.action or s.reasoning, 200)
        + (f" FAILED: {error_signature(s.error, 160)}" if s.failed else "")
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

    def __init__(
        self, *, threshold: float = 0.85, model: Model | None = None, rule: str = "align"
    ) -> None:
        self.threshold = threshold
        self.model = model
        self.rule = check_rule(rule)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ReMe) and (self.threshold, self.model, self.rule) == (
            other.threshold,
            other.model,
            other.rule,
        )

    def uses_model(self, context: EvolveContext) -> bool:
        return (self.model or context.model) is not None

    def __hash__(self) -> int:
        return hash((self.name, self.threshold, self.rule))

    def extract(self, context: EvolveContext, have: set[str]) -> list[EvolveItem]:
        model = self.model or context.model
        return [
            pattern_from(t, model)
            for t in context.traces
            if learnable(t) and derived_id("reme", t.id) not in have
        ]

    def evolve(self, items: Sequence[EvolveItem], context: EvolveContext) -> list[EvolveItem]:
        have = {i.id for i in items} | set(context.known)
        pool = [*items, *self.extract(context, have)]
        return dedup(pool, self.threshold, context.embedder, self.rule)


def _counts(texts: Sequence[str]) -> tuple[Counts, Counts]:
    """Per text, how often each character occurs (a column per character), and its length."""
    column: dict[str, int] = {}
    for text in texts:
        for ch in text:
            column.setdefault(ch, len(column))
    out = np.zeros((len(texts), max(len(column), 1)), dtype=np.int64)
    for row, text in enumerate(texts):
        for ch, n in Counter(text).items():
            out[row, column[ch]] = n
    return out, np.array([len(t) for t in texts], dtype=np.int64)


def _quick(counts: Counts, lengths: Counts, rows: Counts, new: int) -> Counts:
    """``SequenceMatcher.quick_ratio()`` of text ``new`` against each of ``rows``: twice the
    characters they share (as multisets) over their total length, 1.0 for two empty texts."""
    shared = np.minimum(counts[rows], counts[new]).sum(axis=1)
    total = lengths[rows] + lengths[new]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total > 0, 2.0 * shared / total, 1.0)


class _Above:
    """Whether ``SequenceMatcher(None, old, new).ratio() > threshold``, for one ``new`` text
    and many ``old`` ones, remembered per pair of texts (patterns of one task share their
    ``when_to_use``).

    The matching blocks ``ratio()`` counts form a common subsequence of the two texts, so
    twice the longest common subsequence over their total length bounds it from above; that
    length takes a few big-integer operations per character (bit-parallel, Allison-Dix), far
    less than ``ratio()``, which then runs only for pairs the bound cannot reject.
    """

    def __init__(self, new: str, threshold: float, seen: dict[tuple[str, str], bool]) -> None:
        self.new = new
        self.threshold = threshold
        self.seen = seen
        self.masks: dict[str, int] | None = None
        self.matcher: SequenceMatcher[str] | None = None

    def lcs(self, old: str) -> int:
        if self.masks is None:
            self.masks = {}
            for i, ch in enumerate(self.new):
                self.masks[ch] = self.masks.get(ch, 0) | (1 << i)
        full = (1 << len(self.new)) - 1
        v = full
        for ch in old:
            u = v & self.masks.get(ch, 0)
            v = ((v + u) | (v - u)) & full
        return len(self.new) - v.bit_count()

    def __call__(self, old: str) -> bool:
        got = self.seen.get((old, self.new))
        if got is None:
            total = len(old) + len(self.new)
            if total and 2.0 * self.lcs(old) / total <= self.threshold:
                got = False
            else:
                if self.matcher is None:
                    self.matcher = SequenceMatcher(None, autojunk=False)
                    self.matcher.set_seq2(self.new)  # it caches what it learns of seq2
                self.matcher.set_seq1(old)
                got = self.matcher.ratio() > self.threshold
            self.seen[(old, self.new)] = got
        return got


def dedup(
    pool: Sequence[EvolveItem],
    threshold: float,
    embedder: Embedder | None = None,
    rule: str = "align",
    *,
    nearest: int = NEAREST,
) -> list[EvolveItem]:
    """Patterns with the newer of each duplicate pair kept, absorbing the older.

    With ``rule="align"`` and an embedder that has a fitted threshold, written patterns
    (not the offline templates) of the same kind are compared by word alignment of their
    contents (:mod:`._align`) with each other only, each against its ``nearest`` alive
    patterns of its kind at most (:meth:`._align.Aligner.nearest`); the rest as below (the
    seed's rule).

    Both ``when_to_use`` and the content must match: over the two joined, a pattern for
    another task with the same steps matched too (precision 0.67 on bench/bench_evolve.py's
    generated pairs, 0.98 with both).

    ``quick_ratio()`` bounds ``ratio()`` from above, so a pair whose quick ratio is not above
    the threshold cannot match: it is computed for a new pattern against every kept one at
    once (character counts, numpy); the pairs that pass meet a second bound (:class:`_Above`)
    before ``ratio()``. The answer is the one-by-one comparison's
    (tests/dream/test_evolve_scale.py), which took minutes at 5,000 patterns.
    """
    order = sorted((k for k, i in enumerate(pool) if TAG in i.tags), key=lambda k: pool[k].seq)
    winner: dict[int, int] = {}  # pattern -> the newer pattern that superseded it
    aligned = threshold_for(rule, embedder)
    if aligned is not None and embedder is not None:
        written = [k for k in order if not templated(pool[k].text)]
        order = [k for k in order if templated(pool[k].text)]
        winner |= _aligned(pool, written, embedder, aligned, nearest)
    when_counts, when_len = _counts([pool[k].when_to_use for k in order])
    what_counts, what_len = _counts([pool[k].text for k in order])
    kinds: dict[str, int] = {}
    kind = np.array([kinds.setdefault(pool[k].pattern, len(kinds)) for k in order])
    alive = np.zeros(len(order), dtype=bool)  # kept so far (positions in ``order``)
    seen: dict[tuple[str, str], bool] = {}
    for pos, k in enumerate(order):
        rows = np.flatnonzero(alive[:pos] & (kind[:pos] == kind[pos]))
        if len(rows):
            rows = rows[_quick(when_counts, when_len, rows, pos) > threshold]
        if len(rows):
            rows = rows[_quick(what_counts, what_len, rows, pos) > threshold]
        if len(rows):
            when = _Above(pool[k].when_to_use, threshold, seen)
            what = _Above(pool[k].text, threshold, seen)
            for row in rows:  # in the order they were kept
                old = order[row]
                if (
                    may_merge(pool[old].text, pool[k].text)
                    and when(pool[old].when_to_use)
                    and what(pool[old].text)
                ):
                    winner[old] = k
                    alive[row] = False
        alive[pos] = True
    return absorb(pool, _last(winner))


def _aligned(
    pool: Sequence[EvolveItem],
    written: list[int],
    embedder: Embedder,
    threshold: float,
    nearest: int,
) -> dict[int, int]:
    """Written pattern -> the newer one of its kind that superseded it (scoring at least
    ``threshold`` with it when it came, and among its nearest, :meth:`._align.Aligner.nearest`)."""
    winner: dict[int, int] = {}
    if not written:
        return winner
    aligner = Aligner([pool[k].text for k in written], embedder, nearest)
    kinds: dict[str, int] = {}
    kind = np.array([kinds.setdefault(pool[k].pattern, len(kinds)) for k in written])
    alive = np.zeros(len(written), dtype=bool)  # by position in ``written``
    for pos, k in enumerate(written):
        for a in sorted(aligner.matches(pos, alive[:pos] & (kind[:pos] == kind[pos]), threshold)):
            winner[written[a]] = k
            alive[a] = False
        alive[pos] = True
    return winner


def _last(winner: dict[int, int]) -> dict[int, int]:
    """Each superseded pattern -> the last of its chain of successors."""
    final: dict[int, int] = {}
    for old, new in winner.items():
        while new in winner:
            new = winner[new]
        final[old] = new
    return final
