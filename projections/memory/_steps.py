"""When two steps, or two strategies' steps, are the same: the near-match rule.

Agents word the same command differently from one run to the next ("run the tests", "Run
tests", "running tests again"), so steps are compared by their content words, not their
text: lowercased, split on anything that is not a letter or digit, filler words dropped
and a plural or tense ending cut. Two steps are the same when those word sets overlap by
at least :data:`STEP_OVERLAP` (Jaccard); two step lists are the same when each step of one
is the same as a different step of the other (a matching, so order and rewording do not
matter, a missing or an extra step does).

The dream merges on this rule, recall never shows two items it calls the same, and a
strategy's constraints never name one of its own steps.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Final

__all__ = [
    "STEP_OVERLAP",
    "matched_steps",
    "names_own_step",
    "same_step",
    "same_steps",
    "step_words",
]

STEP_OVERLAP: Final = 0.5
"""Share of content words (Jaccard) two steps need in common to be the same step."""
_WORD: Final = re.compile(r"[a-z0-9]+")
_FILLER: Final = frozenset(
    [
        "a",
        "an",
        "the",
        "to",
        "of",
        "for",
        "and",
        "or",
        "in",
        "on",
        "at",
        "with",
        "by",
        "from",
        "into",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "then",
        "again",
        "all",
        "any",
        "some",
        "my",
        "our",
        "your",
        "their",
        "be",
        "is",
        "are",
        "was",
        "were",
        "do",
        "does",
        "did",
        "please",
        "now",
        "first",
        "next",
        "finally",
        "also",
        "just",
    ]
)
_QUOTED: Final = re.compile(r"'([^']+)'")


def _stem(word: str) -> str:
    # Enough to take "retries", "increased", "running" and "indexes" to the forms of
    # "retry", "increase", "run" and "index"; a wrong stem only makes two steps differ.
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    for end, size in (("ing", 6), ("ed", 5), ("es", 5), ("s", 4)):
        if len(word) >= size and word.endswith(end) and not word.endswith("ss"):
            word = word[: -len(end)]
            break
    if len(word) > 3 and word[-1] == "e":
        word = word[:-1]
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiouls":
        word = word[:-1]
    return word


@lru_cache(maxsize=4096)
def step_words(text: str) -> frozenset[str]:
    """The content words of a step, as the rule compares them."""
    words = frozenset(_stem(w) for w in _WORD.findall(text.lower()) if w not in _FILLER)
    # A step made only of filler words ("do it") is compared by all its words.
    return words or frozenset(_WORD.findall(text.lower()))


def same_step(a: str, b: str) -> bool:
    """Whether two step texts are the same step under the near-match rule."""
    wa, wb = step_words(a), step_words(b)
    if not wa or not wb:
        return False
    return len(wa & wb) / len(wa | wb) >= STEP_OVERLAP


def matched_steps(a: Sequence[str], b: Sequence[str]) -> int:
    """How many steps of ``a`` can each be paired with a different, same step of ``b``
    (a maximum matching: greedy pairing can miss one when steps resemble several others)."""
    a = [s for s in a if step_words(s)]
    b = [s for s in b if step_words(s)]
    pair_of: dict[int, int] = {}  # index in b -> index in a

    def place(i: int, seen: set[int]) -> bool:
        for j, other in enumerate(b):
            if j in seen or not same_step(a[i], other):
                continue
            seen.add(j)
            if j not in pair_of or place(pair_of[j], seen):
                pair_of[j] = i
                return True
        return False

    return sum(place(i, set()) for i in range(len(a)))


def same_steps(a: Sequence[str], b: Sequence[str]) -> bool:
    """Whether two non-empty step lists are the same steps, reworded or reordered."""
    a = [s for s in a if step_words(s)]
    b = [s for s in b if step_words(s)]
    return bool(a) and len(a) == len(b) and matched_steps(a, b) == len(a)


def names_own_step(constraint: str, steps: Sequence[str]) -> bool:
    """Whether a constraint tells the agent to avoid what the strategy itself does: it
    quotes one of ``steps`` ("avoid 'add backoff' as done here"), or names an approach that
    is the strategy's own steps. Such a constraint came from a failed attempt that did the
    same thing, so it does not tell the failure from the success."""
    for quoted in _QUOTED.findall(constraint):
        parts = [p for p in quoted.split("→") if p.strip()]
        if len(parts) > 1 and matched_steps(parts, steps) == len(parts):
            return True
        if len(parts) == 1 and any(same_step(parts[0], s) for s in steps):
            return True
    return False
