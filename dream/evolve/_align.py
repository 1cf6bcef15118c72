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
# Pairs whose pooled lesson cosine is below this are not scored (a rewording of the labelled
# set scores 0.24 at least with either embedder): it keeps the scoring to a few candidates.
PREFILTER: Final = 0.2

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
    """The word vectors of some lessons, embedded once; :meth:`score` of two of them."""

    def __init__(self, texts: Sequence[str], embedder: Embedder) -> None:
        self.texts = list(texts)
        words = [_words(t) for t in texts]
        vocab = sorted({w for ws in words for w in ws})
        vectors = embedder.embed(vocab) if vocab else np.zeros((0, embedder.dim), np.float32)
        # A word the embedder has no features for (a zero row) cannot be matched; it is left
        # out rather than counted as a miss.
        index = {w: k for k, w in enumerate(vocab) if float(np.abs(vectors[k]).sum()) > 0.0}
        self.rows: list[Vectors] = [vectors[[index[w] for w in ws if w in index]] for ws in words]
        pooled = np.zeros((len(texts), embedder.dim), np.float32)
        for k, m in enumerate(self.rows):
            if len(m):
                v = m.sum(axis=0)
                norm = float(np.linalg.norm(v))
                pooled[k] = v / norm if norm > 0.0 else v
        self.pooled: Vectors = pooled

    def candidates(self, new: int, old: Sequence[int]) -> list[int]:
        """Those of ``old`` whose pooled word vector is within :data:`PREFILTER` of ``new``'s."""
        if not old:
            return []
        sims = self.pooled[np.asarray(old, dtype=np.intp)] @ self.pooled[new]
        return [o for o, s in zip(old, sims, strict=True) if float(s) >= PREFILTER]

    def matches(self, new: int, old: Sequence[int], threshold: float) -> list[int]:
        """Those of ``old`` that score at least ``threshold`` with ``new`` and do not forbid
        what it says (:func:`._guard.contrary`), the best first (the earliest on a tie)."""
        found = []
        for rank, o in enumerate(self.candidates(new, old)):
            s = self.score(o, new)
            if s >= threshold and not contrary(self.texts[o], self.texts[new]):
                found.append((-s, rank, o))
        return [o for _, _, o in sorted(found)]

    def score(self, a: int, b: int) -> float:
        """The harmonic mean of how much of lesson ``a`` lesson ``b`` covers and back."""
        ma, mb = self.rows[a], self.rows[b]
        if not len(ma) or not len(mb):
            return 0.0
        sims = ma @ mb.T
        ra, rb = float(sims.max(axis=1).mean()), float(sims.max(axis=0).mean())
        return 2.0 * ra * rb / (ra + rb) if ra + rb > 0.0 else 0.0
