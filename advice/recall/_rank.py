"""Recall ranking: which memory items to inject for a query, and why.

For each active item sharing a word with the query (found through the fold's postings, so
a query never scores the whole store)::

    similarity = cosine(query TF-IDF, item TF)                  (Living Memory's retrieval)
    decay      = exp(-lambda * (S - snapshot) / S)              (1 on the backbone)
    quality    = 0.5 + ACE score, ACE = h / (h + x + n), 0.5 with no evidence
    score      = similarity * decay * quality

``S`` is the system activity (writes and injections) and ``snapshot`` its value at the
item's last write or injection: inactivity is measured in activity, not clock time.

An item is injected only if it *applies* (the question :mod:`advice._applicability` asks of
strategy nodes, asked here of every item): its similarity reaches ``min_similarity`` and
beats, by ``min_margin``, the query's similarity to every generic task of
:data:`~advice._background.BACKGROUND_TASKS` (a query that is as close to "add logging to
the background worker" as to a note merely shares its vocabulary), and its score reaches
``retrieval_threshold``. Dead ledger entries are skipped unless asked for; archived notes
are never candidates. Ties break by item id, so a given log always gives the same answer.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from functools import lru_cache
from typing import Final

import msgspec
from evolog.projections.memory import BACKBONE, ItemFold, MemoryConfig, MemoryItem
from evolog.projections.memory._text import idf, term_freqs

from ..routing._background import BACKGROUND_TASKS

__all__ = ["Candidate", "rank"]

_EPS: Final = 1e-12


class Candidate(msgspec.Struct, frozen=True):
    """One scored item with the evidence behind its score."""

    id: str
    kind: str
    branch: str
    score: float
    similarity: float
    decay: float
    quality: float
    evidence: tuple[int, int, int]
    applies: bool
    why: str


@lru_cache(maxsize=1)
def _background() -> tuple[dict[str, float], ...]:
    return tuple(term_freqs(t) for t in BACKGROUND_TASKS)


def _weighted(fold: ItemFold, query: str) -> dict[str, float]:
    postings = fold.state.postings
    n = fold.state.active
    return {t: tf * idf(len(postings.get(t, ())), n) for t, tf in term_freqs(query).items()}


def _cos(q: dict[str, float], qn: float, tf: dict[str, float]) -> float:
    dot = math.fsum(w * tf[t] for t, w in q.items() if t in tf)
    tn = math.sqrt(math.fsum(v * v for v in tf.values()))
    return 0.0 if dot <= 0.0 or tn == 0.0 else dot / (qn * tn)


def rank(
    fold: ItemFold,
    query: str,
    cfg: MemoryConfig,
    *,
    dead: Collection[str] = frozenset(),
    include_dead: bool = False,
    branches: Collection[str] | None = None,
) -> tuple[list[Candidate], float]:
    """Every candidate that shares a word with ``query``, best first, and the query's
    null similarity (its best cosine to a generic task)."""
    q = _weighted(fold, query)
    qn = math.sqrt(math.fsum(w * w for w in q.values()))
    if qn == 0.0:
        return [], 0.0
    null = max((_cos(q, qn, tf) for tf in _background()), default=0.0)
    ids: set[str] = set()
    for token in q:
        ids.update(fold.state.postings.get(token, ()))
    total = max(fold.state.activity, 1)
    out: list[Candidate] = []
    for item_id in ids:
        item = fold.state.items[item_id]
        if not item.active or (branches is not None and item.branch not in branches):
            continue
        if item_id in dead and not include_dead:
            continue
        out.append(_score(fold, item, q, qn, null, total, cfg))
    out.sort(key=lambda c: (-c.score, c.id))
    return out, round(null, 6)


def _score(
    fold: ItemFold,
    item: MemoryItem,
    q: dict[str, float],
    qn: float,
    null: float,
    total: int,
    cfg: MemoryConfig,
) -> Candidate:
    sim = _cos(q, qn, item.tf)
    if item.branch == BACKBONE and not cfg.backbone_decays:
        decay = 1.0
    else:
        ratio = max(total - fold.snapshot(item.id), 0) / total
        decay = math.exp(-cfg.decay_lambda * ratio)
    h, x, n = fold.evidence(item)
    ace = 0.5 if h + x + n == 0 else h / (h + x + n)
    quality = 0.5 + ace
    score = sim * decay * quality
    margin = sim - null
    if sim + _EPS < cfg.min_similarity:
        applies, why = False, f"similarity {sim:.3f} < floor {cfg.min_similarity:.2f}"
    elif margin + _EPS < cfg.min_margin:
        applies, why = False, f"similarity {sim:.3f} only {margin:+.3f} over a generic task"
    elif score + _EPS < cfg.retrieval_threshold:
        applies, why = False, f"score {score:.3f} < threshold {cfg.retrieval_threshold:.2f}"
    else:
        applies, why = (
            True,
            (
                f"similarity {sim:.3f} ({margin:+.3f} over a generic task) x decay {decay:.3f}"
                f" x quality {quality:.2f} (helpful {h}, harmful {x}, neutral {n})"
            ),
        )
    return Candidate(
        item.id,
        item.kind,
        item.branch,
        round(score, 6),
        round(sim, 6),
        round(decay, 6),
        round(quality, 6),
        (h, x, n),
        applies,
        why,
    )
