"""Whether two written lessons say the same thing: word alignment, the default dedup rule of
ReasoningBank and ReMe for lessons that are not the offline extraction's templates.

A reworded lesson keeps its concepts, not its words or its sentence shape: "run the
migrations before switching traffic" and "apply the schema migrations first, then move
traffic" share three content words, and a pooled cosine or ``SequenceMatcher`` (the seed's
rules) see too little of that (bench/RESULTS.md: the seed's thresholds merge 0-35% of the
hand-written rewordings). Here each content word of one lesson is matched to its most
similar word of the other (cosine of the embedder's vectors of the single words), both
ways; the mean of those best matches is how much of each lesson the other covers, and the
harmonic mean of the two coverages is the score. A pair merges at ``score >= threshold``,
unless one lesson forbids what the other says in the same words (:func:`._guard.contrary`;
static word vectors barely see a "do not"). The full negation check of the seed's rules is
not applied: rewordings turn the advice around ("keep secrets out of the repository",
"never commit secrets"), and with it the rule falls short of the goal in half the folds.

The thresholds are fitted, one per shipped embedder, on bench/dedup_pairs.txt (352
hand-written pairs, 88 groups): the value maximising min(precision, recall) over all the
pairs, after grouped cross-validation showed the rule holding out (bench/bench_dedup_cv.py,
figures in bench/RESULTS.md). Another embedder has no fitted threshold: the seed's rules
apply.

A new lesson is scored against the kept lessons that pass a prefilter (pooled word-vector
cosine >= :data:`PREFILTER`), and of those only its :data:`NEAREST` most similar: among
model-like lessons a third of the pairs pass the prefilter with wordllama, so scoring every
one made a first run over 1e4 written lessons quadratic (minutes). The cosines come from
one matrix product per block of lessons, and a lesson's candidates are scored together;
the result is the exhaustive comparison's whenever no lesson has a duplicate beyond its
nearest (tests/dream/test_evolve_align_scale.py), and the same for the same input.

The offline extraction writes templates ("Steps: a; b", "Do: a -> b", "Failed: ...",
"Avoid: ..."), which name no subject: the same steps for two tasks are two word-for-word
identical lessons, and word alignment merges them (precision 0.68 on the generated pairs of
bench/bench_evolve.py --pairs). Those keep the seed's rules (:func:`templated`), which read
the task as well; a template and a written lesson are never merged with each other.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import numpy.typing as npt

from .._errors import SettingError
from ._guard import contrary

if TYPE_CHECKING:
    from evolog.projections import Embedder

__all__ = [
    "BLOCK",
    "NEAREST",
    "PREFILTER",
    "RULES",
    "THRESHOLDS",
    "Aligner",
    "check_rule",
    "templated",
    "threshold_for",
]

# Fitted by bench/bench_dedup_cv.py --fit on all 468 pairs of bench/dedup_pairs.txt and
# bench/dedup_pairs_b.txt (the score threshold maximising min(precision, recall), the lowest
# on a tie), keyed by the embedder's name; grouped cross-validation of the same fit is in
# bench/RESULTS.md. The second set was first a test of the constants fitted on the first
# alone (0.504 and 0.44): wordllama's fit did not move, hashing's went from 0.44 to 0.423.
THRESHOLDS: Final = {"wordllama-l2-256": 0.504, "hashing-1024": 0.423}
# Pairs whose pooled lesson cosine is below this are not scored (a duplicate the rule merges
# in the labelled sets is at 0.374 at least with hashing, 0.479 with wordllama).
PREFILTER: Final = 0.2
# A new lesson is scored against this many kept lessons at most, its nearest by pooled cosine
# that pass the prefilter: a third of the pairs of model-like lessons pass it (wordllama), so
# without a bound a first run over 1e4 written lessons scored 1.4e7 pairs (250 s CPU). Among
# 1e4 model-like lessons every labelled duplicate the rule merges is within the 16 nearest of
# its partner (3 with hashing), 35 at 3e4 (bench/bench_dedup_scale.py --ranks, RESULTS.md).
NEAREST: Final = 64
# Rows compared with every row before them in one matrix product: 128 rows against 1e5
# earlier ones hold 51 MB of cosines.
BLOCK: Final = 128
_PRODUCT: Final = 1 << 18

RULES: Final = ("align", "seed")
_FORMS: Final = ("steps:", "do:", "failed:", "avoid:", "succeeded at:", "repeat what solved:")
_WORD: Final = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
# English function words: they carry the sentence, not the lesson.
_STOP_WORDS: Final = """a an the and or but if of to in on at by for with from into onto over under
    about as is are was were be been being am it its this that these those there
    here then than so such i we you he she they me us him her them my our your his
    their what which who whom whose when where why how do does did done has have had
    having will would shall should can could may might must also just very too each
    every all any some both either"""
_STOP: Final = frozenset(_STOP_WORDS.split())

Vectors = npt.NDArray[Any]


def templated(text: str) -> bool:
    """Whether ``text`` is one of the offline extraction's templates (see the docstring)."""
    return text.lstrip().lower().startswith(_FORMS)


def check_rule(rule: object) -> str:
    """``rule`` if it names a dedup rule, else a :class:`SettingError`."""
    if rule not in RULES:
        raise SettingError(f"rule: expected one of {', '.join(RULES)}; got {rule!r}")
    return str(rule)


def threshold_for(rule: str, embedder: Embedder | None) -> float | None:
    """The fitted threshold when ``rule`` is "align" and ``embedder`` has one, else None
    (then the seed's rules apply to every entry)."""
    return THRESHOLDS.get(embedder.name) if rule == "align" and embedder is not None else None


def _words(text: str) -> list[str]:
    return sorted({w for w in _WORD.findall(text.lower()) if w not in _STOP})


class Aligner:
    """The word vectors of some lessons, embedded once; :meth:`score` of two of them, and
    which earlier lessons a lesson is scored against (:meth:`nearest`, at most ``k``)."""

    def __init__(self, texts: Sequence[str], embedder: Embedder, k: int = NEAREST) -> None:
        if k < 1:
            raise SettingError(f"k: expected at least 1 lesson to compare with; got {k!r}")
        self.texts = list(texts)
        self.k = k
        self.scored = 0  # pairs scored so far (what the dedup's cost grows with)
        self._block = -1
        self._sims: Vectors = np.zeros((0, 0), np.float32)
        words = [_words(t) for t in texts]
        vocab = sorted({w for ws in words for w in ws})
        vectors = embedder.embed(vocab) if vocab else np.zeros((0, embedder.dim), np.float32)
        # A word the embedder has no features for (a zero row) cannot be matched; it is left
        # out rather than counted as a miss.
        index = {w: n for n, w in enumerate(vocab) if float(np.abs(vectors[n]).sum()) > 0.0}
        self.ids = [np.array([index[w] for w in ws if w in index], dtype=np.intp) for ws in words]
        pooled = np.zeros((len(texts), embedder.dim), np.float32)
        for n, ids in enumerate(self.ids):
            if len(ids):
                v = vectors[ids].sum(axis=0)
                norm = float(np.linalg.norm(v))
                pooled[n] = v / norm if norm > 0.0 else v
        self.pooled: Vectors = pooled
        # One row per word of the vocabulary, not per word of each lesson: 1e4 lessons of
        # 14 words held 570 MB of rows with hashing.
        self.vectors: Vectors = vectors

    def candidates(self, new: int, old: Sequence[int]) -> list[int]:
        """Those of ``old`` whose pooled word vector is within :data:`PREFILTER` of ``new``'s."""
        if not old:
            return []
        sims = self.pooled[np.asarray(old, dtype=np.intp)] @ self.pooled[new]
        return [o for o, s in zip(old, sims, strict=True) if float(s) >= PREFILTER]

    def nearest(self, new: int, among: npt.NDArray[np.bool_]) -> list[int]:
        """The rows before ``new`` that ``among`` flags and pass :data:`PREFILTER`, the
        :data:`NEAREST` most similar to ``new`` of them (the earliest on a tie), in row order.

        Rows must be asked for in increasing order to be cheap: the cosines of a block of
        rows with every row before it come from one matrix product, kept until the next
        block (the answer is the same in any order, and the same for the same input)."""
        block = new // BLOCK
        start = block * BLOCK
        if self._block != block:
            end = min(start + BLOCK, len(self.pooled))
            self._sims = self.pooled[start:end] @ self.pooled[:end].T
            self._block = block
        sims = self._sims[new - start, :new]
        rows = np.flatnonzero(among[:new] & (sims >= PREFILTER))
        if len(rows) > self.k:
            vals = sims[rows]
            kth = np.partition(vals, len(vals) - self.k)[len(vals) - self.k]
            above = rows[vals > kth]
            tied = rows[vals == kth][: self.k - len(above)]
            rows = np.sort(np.concatenate([above, tied]))
        return [int(r) for r in rows]

    def matches(self, new: int, among: npt.NDArray[np.bool_], threshold: float) -> list[int]:
        """The rows before ``new`` that ``among`` flags, are among its :meth:`nearest`, score
        at least ``threshold`` with it and do not forbid what it says
        (:func:`._guard.contrary`), the best first (the earliest on a tie)."""
        near = self.nearest(new, among)
        found = []
        for o, s in zip(near, self.scores(new, near), strict=True):
            if s >= threshold and not contrary(self.texts[o], self.texts[new]):
                found.append((-s, o))
        return [o for _, o in sorted(found)]

    def score(self, a: int, b: int) -> float:
        """The harmonic mean of how much of lesson ``a`` lesson ``b`` covers and back."""
        return self.scores(b, [a])[0]

    def scores(self, new: int, others: Sequence[int]) -> list[float]:
        """:meth:`score` of each of ``others`` with ``new``, from a few matrix products of the
        word vectors (per pair, a product of its own costs more in numpy's overhead than in
        arithmetic: ~16 us)."""
        self.scored += len(others)
        out = np.zeros(len(others))
        live = [j for j, o in enumerate(others) if len(self.ids[o])]  # the rest score 0
        if not len(self.ids[new]) or not live:
            return [float(x) for x in out]
        mb = self.vectors[self.ids[new]]
        # Only the dimensions the new lesson's words use add to a cosine (a hashing
        # embedder's words use a few of 1024): the others' words are read in those alone.
        dims = np.flatnonzero(np.abs(mb).sum(axis=0) > 0.0)
        joined: npt.NDArray[np.intp] = np.concatenate([self.ids[others[j]] for j in live])
        words, at = np.unique(joined, return_inverse=True)
        if len(dims) < mb.shape[1]:
            mb, sub = mb[:, dims], self.vectors[np.ix_(words, dims)]
        else:
            sub = self.vectors[words]
        # Float64 products of float32 vectors: a word cosine is then the same to ~1e-16
        # whichever product computes it (one candidate or many), so a decision does not
        # depend on how many candidates were scored together. At most _PRODUCT
        # multiply-adds each: above some size OpenBLAS starts threads for one product,
        # and on a busy machine they spin for longer than the product takes.
        mb, sub = mb.astype(np.float64), sub.astype(np.float64)
        per = max(1, _PRODUCT // (len(mb) * len(dims)))
        sims = np.concatenate([sub[s : s + per] @ mb.T for s in range(0, len(words), per)])
        sims = sims[at.ravel()]
        n = np.array([len(self.ids[others[j]]) for j in live])
        starts = np.cumsum(n) - n
        ra = np.add.reduceat(sims.max(axis=1), starts) / n  # how much of each other ``new`` covers
        rb = np.maximum.reduceat(sims, starts, axis=0).mean(axis=1)  # and back
        total = ra + rb
        positive = total > 0.0
        out[live] = np.where(positive, 2.0 * ra * rb / np.where(positive, total, 1.0), 0.0)
        return [float(x) for x in out]
