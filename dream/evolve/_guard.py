"""What keeps two similar lessons apart whatever their similarity: shared by the dedup rules
of ReasoningBank and ReMe.

A similarity score (cosine, ``SequenceMatcher``) sees words, not what they say: "do not
cache node_modules" and "cache node_modules" score high, and so do two step sequences of
one task in another order ("read the logs -> patch the code -> run the tests" against
"read the logs -> run the tests -> restart the service": 0.74 wordllama cosine). Two
lessons may merge only if

* both or neither give a negative instruction (a clause opening with "do not", "don't",
  "never", "avoid", "stop"), and
* when both list steps (the offline extraction's ``Steps: a; b`` and ``Do: a -> b``), they
  list as many steps, in the same order, each the same as its counterpart up to one word
  (the words compared as sets, articles and the like aside): "read the logs" and "read logs
  carefully" are one step, "restart the web service" and "restart the db service" two.

A guard only ever keeps apart what the rule would merge; it never merges anything. Neither
seed 001 nor the upstream code has it. It goes with the seed's rules (cosine >= 0.85,
``SequenceMatcher`` > 0.85), which by default judge only the offline extraction's templates
(:mod:`._align`); written lessons are judged by word alignment, which keeps only
:func:`contrary` pairs apart: the full negation check also keeps apart rewordings that turn
the advice around, and the rule then misses the goal in half the folds (bench/RESULTS.md).
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["contrary", "may_merge", "negative", "steps"]

_CLAUSE: Final = re.compile(r"[.;:!?,\n]+\s*|\s+-+\s+|\s+—\s+")
_NEGATIVE: Final = re.compile(r"(?:do not|don't|dont|never|avoid|stop)\b")
_STEPS: Final = (("steps:", ";"), ("do:", "->"))
_WORD: Final = re.compile(r"[a-z0-9_']+")
_LIGHT: Final = frozenset(("a", "an", "the", "to", "of", "and", "in", "on", "for", "with"))
_CUES: Final = frozenset(("do", "not", "don't", "dont", "never", "avoid", "stop"))


def negative(text: str) -> bool:
    """Whether ``text`` gives a negative instruction (a clause opens with one)."""
    return any(_NEGATIVE.match(c) for c in _CLAUSE.split(text.lower().strip()))


def steps(text: str) -> tuple[str, ...] | None:
    """The steps ``text`` lists in the offline extraction's form, else None."""
    low = " ".join(text.lower().split())
    for prefix, sep in _STEPS:
        if low.startswith(prefix):
            return tuple(s.strip(" .;") for s in low[len(prefix) :].split(sep))
    return None


def _same_step(a: str, b: str) -> bool:
    wa = {w for w in _WORD.findall(a) if w not in _LIGHT}
    wb = {w for w in _WORD.findall(b) if w not in _LIGHT}
    return (wa <= wb or wb <= wa) and len(wa ^ wb) <= 1


def may_merge(a: str, b: str) -> bool:
    """Whether lessons ``a`` and ``b`` may be merged at all (see the module docstring)."""
    if negative(a) != negative(b):
        return False
    sa, sb = steps(a), steps(b)
    if sa is None or sb is None:
        return True
    return len(sa) == len(sb) and all(_same_step(x, y) for x, y in zip(sa, sb, strict=True))


def contrary(a: str, b: str) -> bool:
    """Whether one of ``a`` and ``b`` forbids what the other says: one gives a negative
    instruction and the other not, and the words of one, the negation aside, are all among
    the other's ("do not cache node_modules" against "cache node_modules in CI").

    The written-lesson rule (:mod:`._align`) keeps these apart but not every change of
    polarity: a rewording may turn the advice around ("keep secrets out of the repository"
    and "never commit secrets"), which the full check of :func:`may_merge` would refuse.
    """
    if negative(a) == negative(b):
        return False
    wa, wb = _said(a), _said(b)
    return wa <= wb or wb <= wa


def _said(text: str) -> set[str]:
    """What a text talks about: its words, light words and negation cues aside."""
    return {w for w in _WORD.findall(text.lower()) if w not in _LIGHT and w not in _CUES}
