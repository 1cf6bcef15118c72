"""Words, term frequencies and cosines: the similarity memory items are written and recalled by.

Living Memory's rules (docs/reference/memory-items.md §2), with two changes:

* tokens are lower-cased ``[a-z0-9]+`` of two or more characters, as there, but common
  function words are dropped and a crude suffix stemmer folds ``tests``/``testing`` into
  ``test`` (without it "fixing flaky tests" shares nothing with "fix a flaky test");
* the query's inverse document frequency is ``ln(1 + N / df)`` rather than ``ln(N / df)``,
  which is 0 for a word every item has and so made a store of one item unrecallable.

Item vectors are raw term frequency (count / length); the query vector is TF-IDF; the
similarity is their cosine. Dedup on write compares raw TF vectors (no IDF), as Living Memory does.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Final

__all__ = ["cosine", "idf", "norm", "sentences", "term_freqs", "words"]

_WORD: Final = re.compile(r"[a-z0-9]+")
_STOP_WORDS = """a an and are as at be by for from has have how i in is it its
of on or our should the this to was we what when where which with you your do
does my me please can could would will that then than into not no if so but all
any some use using"""
_STOP: Final = frozenset(_STOP_WORDS.split())
_SUFFIXES: Final = (
    "ingly",
    "ations",
    "ation",
    "ments",
    "ment",
    "ings",
    "ing",
    "ies",
    "ied",
    "ed",
    "es",
    "ly",
    "s",
)
_SENTENCE: Final = re.compile(r"[.!?\n]+")


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def words(text: str) -> list[str]:
    """The stemmed content words of ``text``, in order."""
    return [_stem(w) for w in _WORD.findall(text.lower()) if len(w) > 1 and w not in _STOP]


def term_freqs(text: str) -> dict[str, float]:
    """Raw term frequency: each word's count over the number of words (empty for none)."""
    toks = words(text)
    if not toks:
        return {}
    out: dict[str, float] = {}
    for t in toks:
        out[t] = out.get(t, 0.0) + 1.0
    n = float(len(toks))
    return {t: c / n for t, c in out.items()}


def norm(vector: Mapping[str, float]) -> float:
    """The Euclidean length of a sparse vector."""
    return math.sqrt(math.fsum(v * v for v in vector.values()))


def cosine(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    """Cosine of two sparse vectors (0 when either is empty)."""
    if len(a) > len(b):
        a, b = b, a
    dot = math.fsum(v * b[k] for k, v in a.items() if k in b)
    na, nb = norm(a), norm(b)
    return 0.0 if dot == 0.0 or na == 0.0 or nb == 0.0 else dot / (na * nb)


def idf(df: int, n: int) -> float:
    """``ln(1 + n / df)``; a word no item has counts as ``df = 1``."""
    return math.log1p(max(n, 1) / max(df, 1))


def sentences(texts: Iterable[str]) -> list[str]:
    """Distinct sentences of several texts, in order (Living Memory's compression merge:
    split on sentence ends, compared case- and space-insensitively, longer than 5 chars)."""
    seen: set[str] = set()
    out: list[str] = []
    for text in texts:
        for part in _SENTENCE.split(text):
            s = " ".join(part.split())
            key = s.lower()
            if len(s) > 5 and key not in seen:
                seen.add(key)
                out.append(s)
    return out
