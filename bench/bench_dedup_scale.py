"""Dedup of written lessons at scale: CPU time over N model-like lessons, and how near the
labelled duplicates stay to each other among N of them.

Model-like lessons are the hand-written lessons of bench/dedup_pairs.txt and
bench/dedup_pairs_b.txt with their content words redrawn: each lesson keeps the shape
(length, function words, punctuation) of a labelled one and takes its content words from
the labelled sets' vocabulary, drawn by their frequency there, so the lessons share words
as a store of one project's lessons would (about half the pairs pass the pooled-vector
prefilter, against 23 % of the pairs of hand-written lessons). One lesson in ``--reworded``
repeats an earlier one with a quarter of its content words redrawn and its clauses in
another order, so some merge.

* time (default): ReasoningBank's and ReMe's dedup over ``--size`` such lessons (all written,
  none a template), the process CPU time of each, and how many pairs were scored.
* ``--ranks``: the labelled lessons among ``--size`` model-like ones. For every labelled
  duplicate pair the rule merges when scored (``_align``: prefilter passed, score >=
  threshold, not contrary), the rank of one lesson among the nearest of the other by pooled
  cosine, over the whole pool (both ways, the worse kept; every lesson counted as kept, which
  is the worst case); how many fall beyond ``NEAREST``, and the lowest pooled cosine of such
  a pair against ``PREFILTER``.

    .venv/bin/python bench/bench_dedup_scale.py --size 1000 [--embedder hashing] [--nearest 0]
    .venv/bin/python bench/bench_dedup_scale.py --ranks --size 10000 --embedder wordllama
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
from evolog.dream.evolve import EvolveItem, _align, _reasoning_bank, _reme
from evolog.dream.evolve._align import PREFILTER, THRESHOLDS, Aligner
from evolog.dream.evolve._guard import contrary
from evolog.dream.evolve._reasoning_bank import dedup as rb_dedup
from evolog.dream.evolve._reme import dedup as reme_dedup
from evolog.projections.graph._embed import get_embedder

from bench.bench_dedup_cv import PAIRS, load_sets

NEAREST: int | None = getattr(_align, "NEAREST", None)  # None: before the bound existed
_TOKEN = re.compile(r"[A-Za-z0-9]+(?:'[a-z]+)?|[^A-Za-z0-9]+")


def _labelled_lessons() -> list[str]:
    out: dict[str, None] = {}
    for _, _, _, _, a, b in load_sets(PAIRS):
        out[a[1]] = out[b[1]] = None
    return list(out)


def model_like(n: int, seed: int = 5, reworded: float = 0.1) -> list[str]:
    """``n`` lessons as the module docstring says (the same for the same arguments)."""
    rng = random.Random(seed)
    shapes = [_TOKEN.findall(t) for t in _labelled_lessons()]
    content = Counter(
        w.lower() for s in shapes for w in s if w[0].isalnum() and w.lower() not in _align._STOP
    )
    vocab, cum = list(content), list(itertools.accumulate(content.values()))
    out: list[str] = []

    def redraw(tokens: list[str], share: float) -> list[str]:
        return [
            rng.choices(vocab, cum_weights=cum)[0]
            if t[0].isalnum() and t.lower() not in _align._STOP and rng.random() < share
            else t
            for t in tokens
        ]

    for _ in range(n):
        if out and rng.random() < reworded:
            clauses = re.split(r"(?<=[,;.])\s+", rng.choice(out))
            rng.shuffle(clauses)
            out.append("".join(redraw(_TOKEN.findall(" ".join(clauses)), 0.25)))
        else:
            out.append("".join(redraw(rng.choice(shapes), 1.0)))
    return out


def time_dedup(size: int, embedder_name: str, nearest: int | None) -> dict[str, Any]:
    embedder = get_embedder(embedder_name)
    texts = model_like(size)
    rb = [EvolveItem(id=f"r{k}", text=t, tags=("reasoning_bank",), seq=k)
          for k, t in enumerate(texts)]  # fmt: skip
    reme = [EvolveItem(id=f"p{k}", text=t, tags=("reme",), pattern="success", seq=k)
            for k, t in enumerate(texts)]  # fmt: skip
    scored = 0

    class Counting(Aligner):
        """Counts the pairs scored, one by one (before) or per new lesson (now)."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.batched = hasattr(Aligner, "scores")

        def score(self, a: int, b: int) -> float:
            nonlocal scored
            scored += not self.batched
            return super().score(a, b)

        def scores(self, new: int, others: Any) -> list[float]:
            nonlocal scored
            scored += len(others)
            return super().scores(new, others)  # type: ignore[no-any-return]

    # 0: every kept lesson that passes the prefilter (the rule before the bound)
    bound = {} if nearest is None else {"nearest": nearest or len(texts)}
    pooled = Aligner(texts, embedder).pooled
    pick = np.random.default_rng(3).integers(0, size, (2, 20_000))
    passing = float(((pooled[pick[0]] * pooled[pick[1]]).sum(axis=1) >= PREFILTER).mean())
    out: dict[str, Any] = {"size": size, "embedder": embedder.name, "nearest": nearest,
                           "pairs_passing_prefilter": round(passing, 3)}  # fmt: skip
    modules = (_reasoning_bank, _reme)
    for module in modules:
        module.Aligner = Counting  # type: ignore[misc]
    try:
        for name, fn, pool in (("reasoning_bank", rb_dedup, rb), ("reme", reme_dedup, reme)):
            scored = 0
            t0 = time.process_time()
            kept = fn(pool, 0.85, embedder, **bound)
            cpu = time.process_time() - t0
            out[name] = {"cpu_s": round(cpu, 3), "kept": len(kept), "scored_pairs": scored}
    finally:
        for module in modules:
            module.Aligner = Aligner  # type: ignore[misc]
    return out


def ranks(size: int, embedder_name: str, k: int) -> dict[str, Any]:
    embedder = get_embedder(embedder_name)
    threshold = THRESHOLDS[embedder.name]
    labelled = _labelled_lessons()
    texts = labelled + model_like(size)
    at = {t: k for k, t in enumerate(labelled)}
    aligner = Aligner(texts, embedder)
    pooled = aligner.pooled
    worst: list[tuple[int, float]] = []
    pairs = 0
    for _, dup, _, _, a, b in load_sets(PAIRS):
        ka, kb = at[a[1]], at[b[1]]
        if not dup or ka == kb:
            continue
        pairs += 1
        cos = float(pooled[ka] @ pooled[kb])
        merged = cos >= PREFILTER and aligner.score(ka, kb) >= threshold
        if not merged or contrary(a[1], b[1]):
            continue
        rank = 0
        for x, y in ((ka, kb), (kb, ka)):
            sims = pooled @ pooled[x]
            sims[x] = -np.inf
            rank = max(rank, 1 + int((sims > sims[y]).sum()))  # ties put it first
        worst.append((rank, cos))
    got = sorted(r for r, _ in worst)
    return {
        "size": size, "embedder": embedder.name, "pool": len(texts),
        "labelled_duplicates": pairs, "merged_by_the_rule": len(worst),
        "rank_max": got[-1], "rank_p99": got[int(0.99 * (len(got) - 1))],
        "rank_median": got[len(got) // 2], "nearest": k,
        "beyond_nearest": sum(r > k for r in got),
        "lowest_pooled_cosine": round(min(c for _, c in worst), 3), "prefilter": PREFILTER,
        "ranks_over_16": [r for r in got if r > 16],
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size", type=int, default=1000)
    ap.add_argument("--embedder", default="hashing", help="hashing, wordllama")
    ap.add_argument("--nearest", type=int, default=NEAREST, help="0: every kept lesson")
    ap.add_argument("--ranks", action="store_true", help="ranks of the labelled duplicates")
    args = ap.parse_args()
    if args.ranks:
        print(json.dumps(ranks(args.size, args.embedder, args.nearest or args.size), indent=1))
    else:
        print(json.dumps(time_dedup(args.size, args.embedder, args.nearest), indent=1))


if __name__ == "__main__":
    main()
