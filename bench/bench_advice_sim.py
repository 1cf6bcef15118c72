"""Decision quality: a simulated agent life, advice followed, outcomes sampled.

    python bench/bench_advice_sim.py --seeds 24 --steps 2400 --plot bench/advice_sim.png

The world: 12 signal contexts in 4 families (contexts of a family share a core signal and
behave alike), 6 genes. A gene's success probability in a context is
``sigmoid(family regime logit + context noise)``; each family's regime is redrawn at random
times (on average every ``--regime`` steps): a new best gene, the others mediocre. One step
is 2 hours; each step an agent sees a random context, asks for advice, uses the preferred
gene (a banned or missing preference: a uniform pick among the genes the advice says to
explore, else among the non-banned genes), and the outcome is sampled.

Policies: ``evolog`` (defaults, on the same folded state the engine uses), ``evolver``
(getMemoryAdvice reproduced, over an evolver-format graph written line for line as evolver
writes it — 6 lines per cycle, the 2000-line window), and ``random``. All three face the same
contexts and the same random numbers (a gene chosen by two policies at a step succeeds for
both or neither). Reported: cumulative expected success and regret (regret = best gene's
probability minus the chosen one's), per-seed differences with a 95% interval over seeds.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import time
from typing import Any

import numpy as np
from evolog.advice._evolog_policy import EvologParams, evolog_decide
from evolog.advice._state import AdviceState, Row
from evolog.advice.evolver._policy import evolver_advice
from evolog.advice.evolver._writer import EvolverGraphWriter
from evolog.eventlog.schema._signalkey import compute_signal_key

STEP_MS = 2 * 3_600_000
START_MS = 1_767_225_600_000  # 2026-01-01
GENE_IDS = [f"gene_{i}" for i in range(6)]
GENES = [{"type": "Gene", "id": g, "category": "repair"} for g in GENE_IDS]
FAMILIES = {
    "log_error": [["log_error"], ["log_error", "errsig:TypeError"], ["log_error", "test_fail"]],
    "perf_bottleneck": [
        ["perf_bottleneck"],
        ["perf_bottleneck", "slow_io"],
        ["perf_bottleneck", "capability_gap"],
    ],
    "user_feature_request": [
        ["user_feature_request"],
        ["user_feature_request", "ui"],
        ["user_feature_request", "api"],
    ],
    "flaky_ci": [["flaky_ci"], ["flaky_ci", "timeout"], ["flaky_ci", "network"]],
}
CONTEXTS = [c for family in FAMILIES.values() for c in family]
FAMILY_OF = [i // 3 for i in range(len(CONTEXTS))]
POLICIES = ("evolog", "evolver", "random")
T_975 = {19: 2.093, 23: 2.069, 29: 2.045, 39: 2.023, 49: 2.010}


def world(seed: int, steps: int, regime: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(context per step, success probabilities [step, gene], uniforms per step)."""
    rng = np.random.default_rng(seed)
    n_ctx, n_fam, n_gene = len(CONTEXTS), len(FAMILIES), len(GENE_IDS)
    noise = rng.normal(0.0, 0.3, size=(n_ctx, n_gene))
    logits = np.empty((steps, n_fam, n_gene))
    for f in range(n_fam):
        t = 0
        while t < steps:
            span = max(1, int(rng.exponential(regime)))
            regime_logit = rng.normal(-1.0, 0.7, size=n_gene)
            regime_logit[rng.integers(n_gene)] = rng.normal(1.6, 0.4)
            logits[t : t + span, f] = regime_logit
            t += span
    ctx = rng.integers(0, n_ctx, size=steps)
    fam = np.asarray(FAMILY_OF)[ctx]
    probs = 1 / (1 + np.exp(-(logits[np.arange(steps), fam] + noise[ctx])))
    return ctx, probs, rng.random(steps)


def choose(preferred: Any, banned: list[Any], explore: list[str], rng: np.random.Generator) -> int:
    """What an agent following the advice uses."""
    if preferred is not None and preferred not in banned:
        return GENE_IDS.index(preferred)
    pool = explore or [g for g in GENE_IDS if g not in banned] or GENE_IDS
    return GENE_IDS.index(pool[int(rng.integers(len(pool)))])


class EvologAgent:
    def __init__(self) -> None:
        self.state = AdviceState()
        self.params = EvologParams()

    def pick(self, signals: list[str], now_ms: int, rng: np.random.Generator) -> int:
        d = evolog_decide(self.state, signals, GENE_IDS, False, now_ms * 1000, self.params)
        return choose(d.preferred_gene_id, list(d.banned_gene_ids), list(d.explore), rng)

    def record(self, step: int, signals: list[str], gene: int, ok: bool, now_ms: int) -> None:
        key = compute_signal_key(signals)
        status = "success" if ok else "failed"
        self.state.apply(
            Row(
                step + 1,
                "outcome",
                f"o{step}",
                now_ms * 1000,
                key,
                GENE_IDS[gene],
                None,
                status,
                None,
                "sim",
                None,
                signals,
                None,
            )
        )


class EvolverAgent:
    def __init__(self) -> None:
        self.writer = EvolverGraphWriter(exact_snapshots=False)

    def pick(self, signals: list[str], now_ms: int, rng: np.random.Generator) -> int:
        self.writer.signal(now_ms, signals)
        window = list(self.writer._tail)  # the last 2000 lines, parsed
        a = evolver_advice(window, signals, GENES, False, now_ms)
        return choose(a.preferred_gene_id, list(a.banned_gene_ids), [], rng)

    def record(self, step: int, signals: list[str], gene: int, ok: bool, now_ms: int) -> None:
        self.writer.attempt(now_ms, signals, GENES[gene])
        status, score = ("success", 0.85) if ok else ("failed", 0.2)
        self.writer.outcome(now_ms, status, score, "simulated", signals)
        self.writer.lines.clear()  # only the window matters; keep memory flat


class RandomAgent:
    def pick(self, signals: list[str], now_ms: int, rng: np.random.Generator) -> int:
        return int(rng.integers(len(GENE_IDS)))

    def record(self, step: int, signals: list[str], gene: int, ok: bool, now_ms: int) -> None:
        pass


def run_seed(args: tuple[int, int, float]) -> dict[str, Any]:
    seed, steps, regime = args
    ctx, probs, uniforms = world(seed, steps, regime)
    best = probs.max(axis=1)
    out: dict[str, Any] = {"seed": seed}
    for name, agent in (
        ("evolog", EvologAgent()),
        ("evolver", EvolverAgent()),
        ("random", RandomAgent()),
    ):
        rng = np.random.default_rng([seed, POLICIES.index(name)])
        expected = np.empty(steps)
        successes = 0
        t0 = time.perf_counter()
        for t in range(steps):
            signals, now_ms = CONTEXTS[ctx[t]], START_MS + t * STEP_MS
            g = agent.pick(signals, now_ms, rng)  # type: ignore[attr-defined]
            ok = bool(uniforms[t] < probs[t, g])
            agent.record(t, signals, g, ok, now_ms)  # type: ignore[attr-defined]
            expected[t] = probs[t, g]
            successes += ok
        out[name] = {
            "expected_success": float(expected.sum()),
            "successes": successes,
            "regret_curve": np.cumsum(best - expected)[:: max(1, steps // 200)].tolist(),
            "seconds": time.perf_counter() - t0,
        }
    out["best_possible"] = float(best.sum())
    return out


def interval(diffs: list[float]) -> dict[str, float]:
    """Mean and 95% interval over seeds (Student t; bootstrap percentile as a check)."""
    d = np.asarray(diffs)
    n = len(d)
    t = T_975.get(n - 1, 1.96 + 2.4 / max(n - 1, 1))  # table, else a close approximation
    half = t * d.std(ddof=1) / math.sqrt(n)
    boot = np.random.default_rng(0).choice(d, size=(10_000, n)).mean(axis=1)
    return {
        "mean": float(d.mean()),
        "t_low": float(d.mean() - half),
        "t_high": float(d.mean() + half),
        "boot_low": float(np.percentile(boot, 2.5)),
        "boot_high": float(np.percentile(boot, 97.5)),
        "seeds_won": int((d > 0).sum()),
        "n": n,
    }


def plot(results: list[dict[str, Any]], steps: int, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.8), dpi=120)
    colors = {"evolog": "tab:green", "evolver": "tab:red", "random": "tab:gray"}
    for name in POLICIES:
        curves = np.asarray([r[name]["regret_curve"] for r in results])
        x = np.arange(curves.shape[1]) * max(1, steps // 200) * STEP_MS / 86_400_000
        mean = curves.mean(axis=0)
        half = 1.96 * curves.std(axis=0, ddof=1) / math.sqrt(len(curves))
        ax.plot(x, mean, color=colors[name], label=name)
        ax.fill_between(x, mean - half, mean + half, color=colors[name], alpha=0.2)
    ax.set_xlabel("simulated days (12 steps a day)")
    ax.set_ylabel("cumulative expected regret")
    ax.set_title(f"Gene advice in a drifting world: mean over {len(results)} seeds, 95% band")
    ax.legend(loc="upper left")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", type=int, default=24)
    ap.add_argument("--steps", type=int, default=2400)
    ap.add_argument("--regime", type=float, default=500.0, help="mean steps between changes")
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--plot", help="write the regret curves to this PNG (needs matplotlib)")
    ap.add_argument("--out", help="write every per-seed result to this JSON file")
    ap.add_argument("--load", help="summarise (and plot) per-seed results saved by --out")
    args = ap.parse_args()
    if args.load:
        with open(args.load) as f:
            results = json.load(f)
        args.seeds = len(results)
    else:
        jobs = [(seed, args.steps, args.regime) for seed in range(args.seeds)]
        with multiprocessing.get_context("spawn").Pool(args.procs) as pool:
            results = pool.map(run_seed, jobs)
    summary: dict[str, Any] = {"seeds": args.seeds, "steps": args.steps, "regime": args.regime}
    for name in POLICIES:
        summary[name] = {
            "expected_success": float(np.mean([r[name]["expected_success"] for r in results])),
            "regret": float(
                np.mean([r["best_possible"] - r[name]["expected_success"] for r in results])
            ),
            "successes": float(np.mean([r[name]["successes"] for r in results])),
            "seconds_per_seed": float(np.mean([r[name]["seconds"] for r in results])),
        }
    for other in ("evolver", "random"):
        diffs = [r["evolog"]["expected_success"] - r[other]["expected_success"] for r in results]
        summary[f"evolog_minus_{other}"] = interval(diffs)
        realized = [r["evolog"]["successes"] - r[other]["successes"] for r in results]
        summary[f"evolog_minus_{other}_realized"] = interval([float(x) for x in realized])
    print(json.dumps(summary, indent=2))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f)
    if args.plot:
        plot(results, args.steps, args.plot)


if __name__ == "__main__":
    main()
