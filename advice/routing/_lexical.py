"""Lexical evidence for applicability: how much of a task's rare vocabulary a memory covers.

A static embedder averages word vectors, so a task that shares one tool name with a node
("upgrade the Django project") lands as close to it as a task about the node's actual job.
Counting words separates part of that: each of the task's terms is weighted by its inverse
document frequency over the generic background sample
(:data:`~advice.routing._background.BACKGROUND_TASKS`), so words every kind of task uses
("fix", "add", "slow") weigh little and specific ones ("makemessages", "TestFlight",
"tfstate") weigh most. The *coverage* of a task by a text is the weighted share of the
task's terms found in it; the evidence is the node's coverage minus the best coverage of
any generic task, so a task that a generic job explains as well as the node gets no credit.

The weights come from the fixed sample alone, not from the store: the same task gets the
same weights in every store, a cold route reads no store-wide statistics, and IDF over the
store plus the sample measured no better on held-out domains (bench/RESULTS.md).
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter
from collections.abc import Iterable
from typing import Final

from ._background import BACKGROUND_TASKS

__all__ = ["LexicalEvidence", "lexical_evidence", "terms"]

_WORD: Final = re.compile(r"[a-z0-9][a-z0-9_+#.-]*")
_STOP: Final = frozenset(
    re.findall(
        r"\w+",
        "a an the of to in on for with and or from into by at as is are be it its this that"
        " these those we our you your i my me after before when while not no do does did can"
        " could should would will than then so up out over under about via vs per all any each"
        " every some more most new",
    )
)


def terms(text: str) -> tuple[str, ...]:
    """The distinct terms of ``text``: lower-cased words (dots, dashes, ``+`` and ``#`` kept
    inside them), stop words dropped, a plural ``s`` stripped from words of 4+ letters."""
    out: dict[str, None] = {}
    for word in _WORD.findall(text.lower()):
        word = word.strip(".-")
        if not word or word in _STOP:
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        out[word] = None
    return tuple(out)


class LexicalEvidence:
    """Term weights from a background sample, and the coverage measures over them."""

    def __init__(self, background: Iterable[str] = BACKGROUND_TASKS) -> None:
        self.generic = [frozenset(terms(t)) for t in background]
        self.df = Counter(t for doc in self.generic for t in doc)
        self.n = len(self.generic)

    def weight(self, term: str) -> float:
        """BM25's inverse document frequency of ``term`` in the background sample."""
        df = self.df.get(term, 0)
        return math.log(1.0 + (self.n - df + 0.5) / (df + 0.5))

    def coverage(self, task: str, texts: Iterable[str]) -> float:
        """The weighted share of ``task``'s terms that occur in any of ``texts`` (0..1)."""
        words = terms(task)
        found = frozenset(t for text in texts for t in terms(text))
        return self._share(words, found)

    def generic_coverage(self, task: str) -> float:
        """The best :meth:`coverage` of ``task`` by one background task."""
        words = terms(task)
        return max((self._share(words, doc) for doc in self.generic), default=0.0)

    def margin(self, task: str, texts: Iterable[str]) -> float:
        """Coverage of ``task`` by the node's ``texts`` minus its best generic coverage."""
        return self.coverage(task, texts) - self.generic_coverage(task)

    def _share(self, words: tuple[str, ...], found: frozenset[str]) -> float:
        total = sum(self.weight(t) for t in words)
        if total <= 0.0:
            return 0.0
        return sum(self.weight(t) for t in words if t in found) / total


_SHARED: list[LexicalEvidence] = []
_LOCK = threading.Lock()


def lexical_evidence() -> LexicalEvidence:
    """The process's :class:`LexicalEvidence` over the shipped background sample."""
    with _LOCK:
        if not _SHARED:
            _SHARED.append(LexicalEvidence())
        return _SHARED[0]
