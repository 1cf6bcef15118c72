"""Dedup of written lessons compares a new lesson with its nearest kept ones only
(dream/evolve/_align.py, ``NEAREST``): the same merges as the exhaustive comparison whenever
the bound cannot bind, and a cost that grows with the lessons, not with their pairs.

The reference below is the rule written plainly: each lesson, in order, against every kept
one that passes the pooled-vector prefilter, the score computed pair by pair.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from evolog.dream import SettingError
from evolog.dream.evolve import EvolveItem, _reasoning_bank, _reme
from evolog.dream.evolve._align import NEAREST, PREFILTER, THRESHOLDS, Aligner, _words
from evolog.dream.evolve._guard import contrary
from evolog.dream.evolve._learn import absorb
from evolog.dream.evolve._reasoning_bank import dedup as rb_dedup
from evolog.dream.evolve._reme import dedup as reme_dedup
from evolog.projections import get_embedder
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.strategies import written_lessons

EMBEDDERS = {name: get_embedder(name) for name in ("hashing", "wordllama")}


def _pools(lessons: Sequence[tuple[str, str]]) -> tuple[list[EvolveItem], list[EvolveItem]]:
    rb = [EvolveItem(id=f"r{n}", text=t, tags=("reasoning_bank",), seq=n)
          for n, (_, t) in enumerate(lessons)]  # fmt: skip
    reme = [EvolveItem(id=f"p{n}", text=t, tags=("reme",), pattern=kind, seq=n)
            for n, (kind, t) in enumerate(lessons)]  # fmt: skip
    return rb, reme


def reference(
    lessons: Sequence[tuple[str, str]], embedder: Any
) -> tuple[dict[int, int], dict[int, int], int]:
    """ReasoningBank's merges (dropped -> keeper), ReMe's (superseded -> last successor) and
    the least bound that cannot change them: the worst rank, among the kept lessons passing
    the prefilter ordered by pooled cosine, of a lesson that scores as a duplicate (a
    candidate within 1e-6 of its cosine counted as nearer, whatever the tie-break)."""
    texts = [t for _, t in lessons]
    words = [_words(t) for t in texts]
    vocab = sorted({w for ws in words for w in ws})
    vec = dict(zip(vocab, embedder.embed(vocab), strict=True)) if vocab else {}
    rows = [np.array([vec[w] for w in ws if np.abs(vec[w]).sum() > 0], dtype=np.float32)
            .reshape(-1, embedder.dim) for ws in words]  # fmt: skip
    pooled = []
    for m in rows:
        v = m.sum(axis=0)
        norm = float(np.linalg.norm(v))
        pooled.append(v / norm if norm > 0 else v)

    def score(a: int, b: int) -> float:
        if not len(rows[a]) or not len(rows[b]):
            return 0.0
        sims = rows[a].astype(np.float64) @ rows[b].astype(np.float64).T
        ra, rb = sims.max(axis=1).mean(), sims.max(axis=0).mean()
        return float(2 * ra * rb / (ra + rb)) if ra + rb > 0 else 0.0

    threshold = THRESHOLDS[embedder.name]
    needed = 0
    outcome: list[dict[int, int]] = []
    for by_kind in (False, True):
        kept: list[int] = []
        merged: dict[int, int] = {}
        for new in range(len(texts)):
            same = [o for o in kept if not by_kind or lessons[o][0] == lessons[new][0]]
            cos = {o: float(pooled[o] @ pooled[new]) for o in same}
            passing = [o for o in same if cos[o] >= PREFILTER]
            scored = [(-score(o, new), o) for o in passing]
            found = sorted((s, o) for s, o in scored
                           if -s >= threshold and not contrary(texts[o], texts[new]))  # fmt: skip
            for _, o in found:
                nearer = sum(1 for p in passing if p != o and cos[p] > cos[o] - 1e-6)
                needed = max(needed, 1 + nearer)
            if not by_kind:  # ReasoningBank: the best match absorbs the new lesson
                if found:
                    merged[new] = found[0][1]
                else:
                    kept.append(new)
                continue
            for o in sorted(o for _, o in found):  # ReMe: the new lesson supersedes them all
                merged[o] = new
                kept.remove(o)
            kept.append(new)
        outcome.append(merged)
    last = {}
    for old, new in outcome[1].items():
        while new in outcome[1]:
            new = outcome[1][new]
        last[old] = new
    return outcome[0], last, needed


@settings(max_examples=150)
@given(lessons=written_lessons(), slack=st.integers(min_value=0, max_value=2))
@pytest.mark.parametrize("name", sorted(EMBEDDERS))
def test_the_bounded_dedup_is_the_exhaustive_one_where_the_bound_cannot_bind(
    name: str, lessons: list[tuple[str, str]], slack: int
) -> None:
    embedder = EMBEDDERS[name]
    rb_ref, reme_ref, needed = reference(lessons, embedder)
    rb, reme = _pools(lessons)
    # as few as the worst-placed duplicate needs, and more than there are lessons
    for k in (max(needed, 1) + slack, len(lessons) + 1):
        assert rb_dedup(rb, 0.85, embedder, nearest=k) == absorb(rb, rb_ref)
        assert reme_dedup(reme, 0.85, embedder, nearest=k) == absorb(reme, reme_ref)
    if len(lessons) <= NEAREST:  # the shipped bound cannot bind either
        assert rb_dedup(rb, 0.85, embedder) == absorb(rb, rb_ref)
        assert reme_dedup(reme, 0.85, embedder) == absorb(reme, reme_ref)


def _lessons(n: int, seed: int = 1) -> list[str]:
    """Lessons that share two words and make up six of their own: nearly every pair passes
    the prefilter and few merge, so the exhaustive comparison scores about n * n / 2 pairs."""
    rng = random.Random(seed)

    def made_up() -> str:
        return "".join(rng.choice("bcdfghjklmnpqrstvwxz") + rng.choice("aeiou") for _ in range(3))

    return [" ".join(["Deploy", "release", *(made_up() for _ in range(6))]) + "." for _ in range(n)]


class _Counting(Aligner):
    """Counts the pairs a dedup scores, one by one or all of a new lesson's at once."""

    pairs = 0

    def score(self, a: int, b: int) -> float:
        _Counting.pairs += 1
        return super().score(a, b)

    def scores(self, new: int, others: Sequence[int]) -> list[float]:
        _Counting.pairs += len(others)
        return super().scores(new, others)


@pytest.mark.parametrize("name", sorted(EMBEDDERS))
def test_the_pairs_scored_grow_with_the_lessons_not_with_their_pairs(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = EMBEDDERS[name]
    n = 400
    texts = _lessons(n)
    aligner = Aligner(texts, embedder)
    sims = aligner.pooled @ aligner.pooled.T
    assert (sims >= PREFILTER).mean() > 0.95  # the prefilter lets nearly every pair through
    monkeypatch.setattr(_reasoning_bank, "Aligner", _Counting)
    monkeypatch.setattr(_reme, "Aligner", _Counting)
    rb, reme = _pools([("success", t) for t in texts])
    for dedup, pool in ((rb_dedup, rb), (reme_dedup, reme)):
        _Counting.pairs = 0
        kept = dedup(pool, 0.85, embedder)
        assert len(kept) > n * 0.7
        assert 0 < _Counting.pairs <= n * NEAREST < n * (n - 1) // 4


def test_the_same_lessons_give_the_same_merges_in_any_pool_order() -> None:
    embedder = EMBEDDERS["wordllama"]
    texts = _lessons(300, seed=4)
    texts += [t.replace("Deploy", "Ship") for t in texts[:40]]  # rewordings, to merge
    rb, reme = _pools([("success", t) for t in texts])
    for dedup, pool in ((rb_dedup, rb), (reme_dedup, reme)):
        first = dedup(pool, 0.85, embedder, nearest=4)
        shuffled = list(pool)
        random.Random(2).shuffle(shuffled)
        again = dedup(shuffled, 0.85, embedder, nearest=4)
        assert sorted(first, key=lambda i: i.id) == sorted(again, key=lambda i: i.id)
        assert len(first) < len(pool)


def test_a_bound_below_one_is_refused() -> None:
    with pytest.raises(
        SettingError, match=r"^k: expected at least 1 lesson to compare with; got 0$"
    ):
        Aligner(["a lesson"], EMBEDDERS["hashing"], k=0)
