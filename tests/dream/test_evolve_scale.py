"""The scalable dedups of ReasoningBank and ReMe give exactly the one-by-one answer.

The references below are the plain algorithms of the seed's rules (each entry against every
kept one, in order, with the same guard against opposite instructions and other step
sequences); the shipped versions block the cosine comparisons into matrix products and
filter ``SequenceMatcher`` pairs by their quick ratio computed for all kept patterns at once.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from difflib import SequenceMatcher

import numpy as np
import pytest
from evolog.dream.evolve import EvolveItem
from evolog.dream.evolve._guard import may_merge
from evolog.dream.evolve._learn import absorb
from evolog.dream.evolve._reasoning_bank import dedup as rb_dedup
from evolog.dream.evolve._reasoning_bank import nearest_kept
from evolog.dream.evolve._reme import dedup as reme_dedup
from evolog.projections import get_embedder

WORDS = [
    "read",
    "logs",
    "patch",
    "code",
    "run",
    "tests",
    "deploy",
    "staging",
    "roll",
    "back",
    "add",
    "index",
    "clear",
    "cache",
]
TASKS = ["fix the login service", "fix the orders query", "debug the login service", ""]


def reference_nearest(
    vectors: np.ndarray, threshold: float, allowed: Callable[[int, int], bool] | None = None
) -> list[int]:
    keeper, kept = [], []
    for pos in range(len(vectors)):
        if kept:
            sims = vectors[kept] @ vectors[pos]
            order = sorted(range(len(kept)), key=lambda q: (-float(sims[q]), q))
            best = next((q for q in order if allowed is None or allowed(kept[q], pos)), -1)
            if best >= 0 and float(sims[best]) >= threshold:
                keeper.append(kept[best])
                continue
        kept.append(pos)
        keeper.append(pos)
    return keeper


def reference_reme(pool: Sequence[EvolveItem], threshold: float) -> list[EvolveItem]:
    order = sorted((k for k, i in enumerate(pool) if "reme" in i.tags), key=lambda k: pool[k].seq)
    winner: dict[int, int] = {}
    kept: list[int] = []
    for k in order:
        for old in list(kept):
            if pool[old].pattern != pool[k].pattern:
                continue
            pairs = [(pool[old].when_to_use, pool[k].when_to_use), (pool[old].text, pool[k].text)]
            if may_merge(pool[old].text, pool[k].text) and all(
                SequenceMatcher(None, a, b, autojunk=False).ratio() > threshold for a, b in pairs
            ):
                winner[old] = k
                kept.remove(old)
        kept.append(k)
    final = {}
    for old, new in winner.items():
        while new in winner:
            new = winner[new]
        final[old] = new
    return absorb(pool, final)


def _text(rng: random.Random) -> str:
    words = rng.sample(WORDS, rng.randint(0, 6))
    shape = rng.random()
    if shape < 0.2:  # the offline extraction's step lists, to exercise the guard
        return "Do: " + " -> ".join(words)
    if shape < 0.3:
        return "do not " + " ".join(words)
    return " ".join(words)


def _patterns(rng: random.Random, n: int) -> list[EvolveItem]:
    out = []
    base = [(rng.choice(TASKS), _text(rng)) for _ in range(max(n // 4, 1))]
    for k in range(n):
        when, text = rng.choice(base)
        if rng.random() < 0.5:  # a near copy: one character changed, or a word added
            text = text[:-1] + "x" if text and rng.random() < 0.5 else f"{text} {rng.choice(WORDS)}"
        tags = ("reme",) if rng.random() < 0.9 else ("other",)
        out.append(
            EvolveItem(
                id=f"p{k}",
                when_to_use=when,
                text=text,
                tags=tags,
                pattern=rng.choice(("success", "failure")),
                seq=rng.randrange(n),
            )
        )
    return out


@pytest.mark.parametrize("seed", range(12))
def test_reme_dedup_equals_the_one_by_one_comparison(seed: int) -> None:
    rng = random.Random(seed)
    pool = _patterns(rng, rng.choice((0, 1, 2, 30, 120)))
    for threshold in (0.85, 0.5, 0.0, 1.0):
        assert reme_dedup(pool, threshold) == reference_reme(pool, threshold)


def _every_third_apart(kept: int, row: int) -> bool:
    return (kept + row) % 3 != 0


@pytest.mark.parametrize("seed", range(12))
def test_blocked_cosine_dedup_equals_the_one_by_one_comparison(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, dim = int(rng.integers(1, 700)), 16
    centres = rng.normal(size=(max(n // 5, 1), dim))
    vectors = centres[rng.integers(0, len(centres), n)] + rng.normal(scale=0.3, size=(n, dim))
    vectors[rng.random(n) < 0.1] = 0.0  # zero rows, as an embedder gives for empty text
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = (vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32)
    vectors[int(rng.integers(0, n))] = vectors[0]  # exact ties
    for threshold in (0.85, 0.6, 0.0):
        for block in (1, 7, 256):
            assert nearest_kept(vectors, threshold, block) == reference_nearest(vectors, threshold)
            # eighths: every product exact, so ties are ties in any summation order
            eighths = (np.round(vectors * 8) / 8).astype(np.float32)
            got = nearest_kept(eighths, threshold, block, allowed=_every_third_apart)
            assert got == reference_nearest(eighths, threshold, _every_third_apart)


def test_reasoning_bank_dedup_on_entries_equals_the_reference() -> None:
    rng = random.Random(3)
    entries = [
        EvolveItem(
            id=f"rb{k}", title=rng.choice(TASKS), text=_text(rng), tags=("reasoning_bank",), seq=k
        )
        for k in range(600)
    ]
    embedder = get_embedder("hashing")
    got = rb_dedup(entries, 0.85, embedder, "seed")  # the seed's rule, blocked
    vectors = embedder.embed([e.body for e in entries])
    keeper = reference_nearest(
        vectors, 0.85, lambda a, b: may_merge(entries[a].text, entries[b].text)
    )
    assert got == absorb(entries, {k: v for k, v in enumerate(keeper) if v != k})
    assert len(got) < len(entries)  # the case is not trivial


def test_the_common_subsequence_bound_is_above_the_ratio() -> None:
    from evolog.dream.evolve._reme import _Above

    rng = random.Random(5)
    for _ in range(400):
        a, b = _text(rng)[: rng.randrange(40)], _text(rng)[: rng.randrange(40)]
        ratio = SequenceMatcher(None, a, b, autojunk=False).ratio()
        above = _Above(b, 0.0, {})
        if a or b:
            assert 2.0 * above.lcs(a) / (len(a) + len(b)) >= ratio
        for threshold in (0.3, 0.6, 0.85):
            assert _Above(b, threshold, {})(a) == (ratio > threshold)
