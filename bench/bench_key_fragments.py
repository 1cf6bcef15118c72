"""Key fragmentation (issue 17.3): keys per 100 tasks and advice regret, exact vs related keys.

    python bench/bench_key_fragments.py --seeds 20 --tasks 400

An agent life whose errors carry numbers inside tokens, as real ones do (``timeout after
646ms``, ``connection to db3 refused``, ``retry after 30s``): 8 situations, each a signal
list with an error text drawn afresh for every task, 12 genes with hidden success
probabilities per situation (two good genes per situation, the others poor), outcomes
misreported with probability 0.1. The agent follows ``evolog`` advice (defaults) and uses
the preferred gene, else the first to explore. Two arms on the same random numbers:
``exact`` matches keys on evolver's key parts (the rule before issue 17.3), ``related`` on
the matching sets of :mod:`evolog.advice._keysearch`. Reported: distinct keys per 100 tasks
(evolver's keys, and the matching sets), regret per arm and the per-seed difference with a
95% interval.
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

import numpy as np
from evolog.advice._evolog_policy import evolog_decide
from evolog.advice._state import AdviceState, Row
from evolog.eventlog.schema._signalkey import compute_signal_key

STEP_US = 2 * 3_600_000_000
START_US = 1_767_225_600_000_000
GENES = [f"gene_{i:02d}" for i in range(12)]
T_975 = {19: 2.093, 23: 2.069, 29: 2.045, 39: 2.023, 49: 2.010}


def situation(i: int, rng: np.random.Generator) -> list[str]:
    """Signals of one task of situation ``i`` (fresh numbers each time)."""
    n = int(rng.integers(1, 9999))
    texts = [
        f"timeout after {n}ms",
        "ModuleNotFoundError: No module named 'yaml'",
        f"connection to db{n % 7} refused",
        f"rate limited: retry after {n % 90}s",
        f"worker{n % 16} killed: out of memory",
        "OSError: [Errno 28] No space left on device",
        f"AssertionError: expected 200, got 5{n % 10}3",
        f"TypeError: unsupported operand for v{n % 5}",
    ]
    kind = ["test_failure", "flaky"] if i in (6, 7) else ["log_error", "tool_error:Bash"]
    return [*kind, f"errsig:{texts[i]}"]


def run_seed(seed: int, tasks: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    n_sit = 8
    logits = rng.normal(-1.3, 0.6, size=(n_sit, len(GENES)))
    for s in range(n_sit):
        logits[s, rng.choice(len(GENES), size=2, replace=False)] = rng.normal(1.4, 0.5, size=2)
    probs = 1 / (1 + np.exp(-logits))
    sits = rng.integers(0, n_sit, size=tasks)
    signals = [situation(int(s), rng) for s in sits]
    uniforms, flips = rng.random(tasks), rng.random(tasks)
    out: dict[str, Any] = {"seed": seed}
    for arm in ("exact", "related"):
        state = AdviceState()
        state.catalog.exact_parts = arm == "exact"
        regret = 0.0
        for t in range(tasks):
            now = START_US + t * STEP_US
            d = evolog_decide(state, signals[t], GENES, False, now)
            pick = d.preferred_gene_id or (d.explore[0] if d.explore else GENES[0])
            g = GENES.index(pick)
            p = probs[sits[t]]
            regret += float(p.max() - p[g])
            ok = bool(uniforms[t] < p[g]) != bool(flips[t] < 0.1)
            key = compute_signal_key(signals[t])
            status = "success" if ok else "failed"
            state.apply(
                Row(
                    t + 1,
                    "outcome",
                    f"o{t}",
                    now,
                    key,
                    pick,
                    None,
                    status,
                    None,
                    "sim",
                    None,
                    signals[t],
                    None,
                )
            )
        out[arm] = regret
        if arm == "related":
            cat = state.catalog
            out["keys"] = len(cat)
            out["match_sets"] = len({cat.signal_set(k) for k in range(len(cat))})
    return out


def interval(d: np.ndarray) -> list[float]:
    t = T_975.get(len(d) - 1, 1.96)
    half = t * d.std(ddof=1) / math.sqrt(len(d))
    return [float(d.mean() - half), float(d.mean() + half)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--tasks", type=int, default=400)
    args = ap.parse_args()
    results = [run_seed(seed, args.tasks) for seed in range(args.seeds)]
    exact = np.asarray([r["exact"] for r in results])
    related = np.asarray([r["related"] for r in results])
    per100 = 100 / args.tasks
    summary = {
        "seeds": args.seeds,
        "tasks": args.tasks,
        "keys_per_100_tasks": float(np.mean([r["keys"] for r in results]) * per100),
        "matching_sets_per_100_tasks": float(np.mean([r["match_sets"] for r in results]) * per100),
        "regret_exact": float(exact.mean()),
        "regret_related": float(related.mean()),
        "related_minus_exact": float((related - exact).mean()),
        "related_minus_exact_95": interval(related - exact),
        "seeds_related_better": int((related < exact).sum()),
    }
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
