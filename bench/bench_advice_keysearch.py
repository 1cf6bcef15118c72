"""Similar signal keys: exact scan vs the usearch binary index, by number of distinct keys.

    python bench/bench_advice_keysearch.py --keys 500 1000 2000 4000 8000 16000 50000 100000

For each catalog size: build time of the index, per-query time of the exact scan and of the
index (with exact Jaccard verification), and the index's recall of the exact answer's top 32
keys with Jaccard >= 1/3 (ties at the cut excluded). Keys are 1-4 signals, half drawn from 150
frequent signals, as in bench_advice_latency.py.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_advice_latency import key_sets
from evolog.advice._keysearch import KeyCatalog, key_signals

LIMIT = 32


def run(n_keys: int, n_queries: int) -> dict[str, float]:
    keys = ["|".join(s) for s in key_sets(n_keys, seed=n_keys)]
    catalog = KeyCatalog(keys)
    t = time.perf_counter()
    catalog.build_index()
    build = time.perf_counter() - t
    rng = np.random.default_rng(3)
    queries = []
    for _ in range(n_queries):
        q = set(key_signals(keys[int(rng.integers(n_keys))]))
        if rng.random() < 0.3:
            q.add("novel")
        queries.append(frozenset(q))
    for q in queries[:20]:  # warm both paths (lazy sets, index pages)
        catalog.similar(q, 1 / 3, LIMIT, exact=True)
        catalog.similar(q, 1 / 3, LIMIT, exact=False)
    t_exact, t_index, hits, total = [], [], 0, 0
    for q in queries:
        t = time.perf_counter()
        want = catalog.similar(q, 1 / 3, LIMIT, exact=True)
        t_exact.append(time.perf_counter() - t)
        t = time.perf_counter()
        got = catalog.similar(q, 1 / 3, LIMIT, exact=False)
        t_index.append(time.perf_counter() - t)
        cut = want[-1][1] if len(want) == LIMIT else 0.0
        must = {k for k, s in want if s > cut}
        hits += len(must & {k for k, _ in got})
        total += len(must)
    return {
        "keys": n_keys,
        "index_build_s": build,
        "exact_p50_ms": float(np.percentile(t_exact, 50) * 1e3),
        "exact_p99_ms": float(np.percentile(t_exact, 99) * 1e3),
        "index_p50_ms": float(np.percentile(t_index, 50) * 1e3),
        "index_p99_ms": float(np.percentile(t_index, 99) * 1e3),
        "recall": hits / max(total, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument(
        "--keys", type=int, nargs="+", default=[500, 1000, 2000, 4000, 8000, 16000, 50000, 100000]
    )
    ap.add_argument("--queries", type=int, default=500)
    args = ap.parse_args()
    for n in args.keys:
        print(json.dumps(run(n, args.queries)), flush=True)


if __name__ == "__main__":
    main()
