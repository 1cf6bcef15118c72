"""Recall ranking: which memory items to inject for a query, and why.

For each active item sharing a word with the query (found through the fold's postings, so
a query never scores the whole store; with a ``limit``, only those that can still reach the
top ``limit`` are scored, see :func:`rank`)::

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

import bisect
import math
from collections.abc import Collection, Sequence
from functools import lru_cache
from typing import Final

import msgspec
from evolog.projections.memory import (
    ItemFold,
    MemoryConfig,
    MemoryItem,
    idf,
    peek,
    same_steps,
    term_freqs,
)

from ..routing._background import BACKGROUND_TASKS

__all__ = ["Candidate", "distinct", "rank", "rank_genes"]

_EPS: Final = 1e-12
_SLACK: Final = 1e-9
_MAX_QUALITY: Final = 1.5
"""0.5 + an ACE score of 1: no item's quality is higher."""
_ROUNDING: Final = 1e-6
"""Scores are rounded to 6 places: a bound this far below a score cannot tie it."""


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
def _background() -> tuple[tuple[dict[str, float], ...], dict[str, list[int]]]:
    """The generic tasks' term frequencies and, per word, the tasks having it (a query's
    cosine with a task sharing none of its words is 0: only the others are computed)."""
    tfs = tuple(term_freqs(t) for t in BACKGROUND_TASKS)
    by_word: dict[str, list[int]] = {}
    for i, tf in enumerate(tfs):
        for word in tf:
            by_word.setdefault(word, []).append(i)
    return tfs, by_word


def _null(q: dict[str, float], qn: float) -> float:
    """The query's best cosine with a generic task."""
    tfs, by_word = _background()
    near = sorted({i for t in q for i in by_word.get(t, ())})
    return max((_cos(q, qn, tfs[i]) for i in near), default=0.0)


def _postings(fold: ItemFold, query: str) -> tuple[dict[str, float], list[dict[str, float]]]:
    """The query's TF-IDF weights and, in the same order, each word's postings (read once:
    a word's postings give both its IDF and the items it adds to)."""
    postings = fold.state.postings
    n = fold.state.active
    q: dict[str, float] = {}
    found: list[dict[str, float]] = []
    for t, tf in term_freqs(query).items():
        ids = peek(postings, t) or {}
        q[t] = tf * idf(len(ids), n)
        found.append(ids)
    return q, found


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
    limit: int | None = None,
) -> tuple[list[Candidate], float, int]:
    """Candidates for ``query`` best first, the query's null similarity (its best cosine
    to a generic task) and how many active items share a word with it.

    With ``limit`` None every candidate is scored and returned. With a ``limit`` only the
    first ``limit`` that apply are returned, the same, in the same order, as the exhaustive
    ranking's (property-tested), and only enough are scored to know them: each item's
    cosine is summed from the postings' weights first, an item whose cosine cannot reach
    the applicability floor, or whose score (cosine x decay <= 1 x quality <= 1.5) cannot
    reach the threshold is never scored, and the rest are scored in the order of that
    bound until the next bound is below the ``limit``-th score found. Scoring reads an
    item's snapshot, evidence and ``scoring`` entry, not its record: only the records of
    the items returned are decoded.
    """
    q, lists = _postings(fold, query)
    qn = math.sqrt(math.fsum(w * w for w in q.values()))
    if qn == 0.0:
        return [], 0.0, 0
    null = _null(q, qn)
    dots: dict[str, float] = {}
    for w, ids in zip(q.values(), lists, strict=True):
        if not dots:  # the first word's products, as the loop below would add them to 0.0
            dots = {item_id: w * weight for item_id, weight in ids.items()}
            continue
        get = dots.get
        for item_id, weight in ids.items():
            dots[item_id] = get(item_id, 0.0) + w * weight
    total = max(fold.state.activity, 1)
    items = fold.state.items
    if limit is None:
        out: list[Candidate] = []
        for item_id, dot in dots.items():
            item = peek(items, item_id)
            if _excluded(item, dead, include_dead, branches):
                continue
            out.append(_candidate(item, _measure(fold, item_id, dot / qn, total, cfg), null, cfg))
        out.sort(key=lambda c: (-c.score, c.id))
        return out, round(null, 6), len(dots)
    # The bound is the cosine the item is scored with, widened past float rounding (the
    # products of decay and quality round too), so pruning never drops an item the
    # exhaustive ranking would keep.
    floor = max(cfg.min_similarity, null + cfg.min_margin) - _EPS
    bounded: list[tuple[float, str]] = []
    for item_id, dot in dots.items():
        sim = dot / qn * (1 + _SLACK) + _SLACK
        if sim < floor or sim * _MAX_QUALITY + _EPS < cfg.retrieval_threshold:
            continue
        if item_id in dead and not include_dead:
            continue
        bounded.append((-sim * _MAX_QUALITY, item_id))
    bounded.sort()
    if limit <= 0:
        return [], round(null, 6), len(dots)
    # Items are measured without decoding their records (snapshot, evidence and
    # ``scoring`` are small entries): only the ``limit`` kept are decoded, at the end.
    kept: list[tuple[float, str, Measure]] = []  # the best that apply, best first
    for neg, item_id in bounded:
        if len(kept) >= limit and -neg + _ROUNDING < -kept[-1][0]:
            break  # no item left can reach the top ``limit``, even after rounding
        if branches is not None and peek(items, item_id).branch not in branches:
            continue
        m = _measure(fold, item_id, dots[item_id] / qn, total, cfg)
        key = (-round(m[0], 6), item_id)
        if _verdict(m, null, cfg) is not None or (len(kept) >= limit and key > kept[-1][:2]):
            continue
        bisect.insort(kept, (*key, m))
        del kept[limit:]
    found = [_candidate(peek(items, item_id), m, null, cfg) for _, item_id, m in kept]
    return found, round(null, 6), len(dots)


def rank_genes(
    fold: ItemFold,
    signals: Sequence[str],
    cfg: MemoryConfig,
    *,
    dead: Collection[str] = frozenset(),
    include_dead: bool = False,
) -> list[Candidate]:
    """Gene items for the caller's ``signals``, best first: similarity is the cosine of the
    signals' words with the words of the signals a gene was tried for; a gene does not
    decay (its outcomes carry its history) and its quality is its ACE score, as any item's.
    A gene that is also a note or strategy item (the hook names the followed strategy as
    the gene) is that item, ranked with the others."""
    q = term_freqs(" ".join(signals))
    qn = math.sqrt(math.fsum(w * w for w in q.values()))
    if qn == 0.0:
        return []
    out = []
    for gene in fold.state.genes.values():
        if gene.id in fold.state.items or (gene.id in dead and not include_dead):
            continue
        sim = _cos(q, qn, gene.tf)
        if sim <= 0.0:
            continue
        h, x, n = fold.evidence(gene)
        quality = 0.5 + (0.5 if h + x + n == 0 else h / (h + x + n))
        # Signals are keys, not prose: no generic-task margin (null similarity 0).
        out.append(_candidate(gene, (sim * quality, sim, 1.0, quality, (h, x, n)), 0.0, cfg))
    out.sort(key=lambda c: (-c.score, c.id))
    return out


def _excluded(
    item: MemoryItem, dead: Collection[str], include_dead: bool, branches: Collection[str] | None
) -> bool:
    if not item.active or (branches is not None and item.branch not in branches):
        return True
    return item.id in dead and not include_dead


Measure = tuple[float, float, float, float, tuple[int, int, int]]
"""An item's score, similarity, decay, quality and ACE counters."""


def _measure(fold: ItemFold, item_id: str, sim: float, total: int, cfg: MemoryConfig) -> Measure:
    """An active item's score for a query it has cosine ``sim`` with (summed from the
    postings: the same products as over its term frequencies, one summation for both the
    pruned and the exhaustive ranking, so they cannot differ by rounding)."""
    backbone, group = fold.scoring(item_id)
    if backbone and not cfg.backbone_decays:
        decay = 1.0
    else:
        ratio = max(total - fold.snapshot(item_id), 0) / total
        decay = math.exp(-cfg.decay_lambda * ratio)
    h, x, n = fold.evidence_of(item_id, group)
    ace = 0.5 if h + x + n == 0 else h / (h + x + n)
    quality = 0.5 + ace
    return sim * decay * quality, sim, decay, quality, (h, x, n)


def _verdict(m: Measure, null: float, cfg: MemoryConfig) -> str | None:
    """Why the item does not apply (None when it does)."""
    score, sim = m[0], m[1]
    margin = sim - null
    if sim + _EPS < cfg.min_similarity:
        return f"similarity {sim:.3f} < floor {cfg.min_similarity:.2f}"
    if margin + _EPS < cfg.min_margin:
        return f"similarity {sim:.3f} only {margin:+.3f} over a generic task"
    if score + _EPS < cfg.retrieval_threshold:
        return f"score {score:.3f} < threshold {cfg.retrieval_threshold:.2f}"
    return None


def _candidate(item: MemoryItem, m: Measure, null: float, cfg: MemoryConfig) -> Candidate:
    score, sim, decay, quality, (h, x, n) = m
    reason = _verdict(m, null, cfg)
    why = reason
    if why is None:
        why = (
            f"similarity {sim:.3f} ({sim - null:+.3f} over a generic task) x decay {decay:.3f}"
            f" x quality {quality:.2f} (helpful {h}, harmful {x}, neutral {n})"
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
        reason is None,
        why,
    )


def distinct(
    chosen: Sequence[Candidate], items: Sequence[MemoryItem]
) -> tuple[list[Candidate], list[MemoryItem]]:
    """``chosen`` (with their ``items``, in the same order) without any item whose steps
    are the same, reworded or reordered, as those of one before it: the better-ranked copy
    stands for both, so a block never spends its budget twice on one approach (stores
    dreamed before consolidation matched reworded steps hold such copies)."""
    kept_c: list[Candidate] = []
    kept_i: list[MemoryItem] = []
    for c, item in zip(chosen, items, strict=True):
        if item.steps and any(same_steps(item.steps, k.steps) for k in kept_i):
            continue
        kept_c.append(c)
        kept_i.append(item)
    return kept_c, kept_i
