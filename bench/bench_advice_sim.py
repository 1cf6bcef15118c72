"""Decision quality: a simulated agent life, advice followed, outcomes sampled.

    python bench/bench_advice_sim.py --seeds 24 --steps 2400 --plot bench/advice_sim.png

The world: 12 signal contexts in 4 families (contexts of a family share a core signal and
behave alike), 6 genes. A gene's success probability in a context is
``sigmoid(family regime logit + context noise)``; each family's regime is redrawn at random
times (on average every ``--regime`` steps): a new best gene, the others mediocre. One step
is 2 hours; each step an agent sees a random context, asks for advice, uses the preferred
gene (a banned or missing preference: a uniform pick among the genes the advice says to
explore, else among the non-banned genes), and the outcome is sampled.

``--world sparse`` (issue 17): many genes and sparse, noisy evidence. 60 genes, 16 families
of 3 contexts (48 keys); a gene's logit is its own quality (most genes are poor) plus a
family effect, two genes per family are good; a family is visited ~75 times in 1200 steps;
each recorded outcome is misreported with probability ``--flip`` (0.1), as a hook's
success heuristic sometimes is (regret is always measured on the true probabilities).

Policies: ``evolog`` (defaults, on the same folded state the engine uses), ``evolog_old``
(the rule before issue 17: a constant exploration bonus, ``prefer`` whenever the pick had any
evidence), ``evolver`` (getMemoryAdvice reproduced, over an evolver-format graph written line
for line as evolver writes it — 6 lines per cycle, the 2000-line window), and ``random``. All
face the same contexts and the same random numbers (a gene chosen by two policies at a step
succeeds for both or neither). Reported: cumulative expected success and regret (regret =
best gene's probability minus the chosen one's), per-seed differences with a 95% interval
over seeds, and what ``prefer`` meant: how often a preferred gene was within 0.05 of the
best gene's probability, and how many prefers rested on less than one effective outcome.
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
POLICIES = ("evolog", "evolog_old", "evolver", "random")
OLD_RULE = EvologParams(explore_evidence_per_gene=0)  # the constant bonus of before issue 17
SPARSE_GENES = [f"gene_{i:02d}" for i in range(60)]
SPARSE_CONTEXTS = [
    [f"fam{f}", f"fam{f}_ctx{c}", *(["log_error"] if f % 2 == 0 else [])]
    for f in range(16)
    for c in range(3)
]
T_975 = {19: 2.093, 23: 2.069, 29: 2.045, 39: 2.023, 49: 2.010}


def drifting_world(seed: int, steps: int, regime: float) -> tuple[np.ndarray, ...]:
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
    return ctx, probs, rng.random(steps), np.ones(steps)


def sparse_world(seed: int, steps: int, regime: float) -> tuple[np.ndarray, ...]:
    """The ``--world sparse`` arrays (see the module docstring), plus uniforms for the flips."""
    rng = np.random.default_rng(seed)
    n_gene, n_ctx, n_fam = len(SPARSE_GENES), len(SPARSE_CONTEXTS), len(SPARSE_CONTEXTS) // 3
    quality = rng.normal(-1.3, 0.6, size=n_gene)
    noise = rng.normal(0.0, 0.3, size=(n_ctx, n_gene))
    logits = np.empty((steps, n_fam, n_gene))
    for f in range(n_fam):
        t = 0
        while t < steps:
            span = max(1, int(rng.exponential(regime)))
            family = quality + rng.normal(0.0, 0.6, size=n_gene)
            good = rng.choice(n_gene, size=2, replace=False)
            family[good] = rng.normal(1.4, 0.5, size=2)
            logits[t : t + span, f] = family
            t += span
    ctx = rng.integers(0, n_ctx, size=steps)
    probs = 1 / (1 + np.exp(-(logits[np.arange(steps), ctx // 3] + noise[ctx])))
    return ctx, probs, rng.random(steps), rng.random(steps)


def choose(
    genes: list[str], preferred: Any, banned: list[Any], explore: list[str], rng: Any
) -> int:
    """What an agent following the advice uses."""
    if preferred is not None and preferred not in banned:
        return genes.index(preferred)
    pool = explore or [g for g in genes if g not in banned] or genes
    return genes.index(pool[int(rng.integers(len(pool)))])


class EvologAgent:
    def __init__(self, genes: list[str], params: EvologParams, old_labels: bool) -> None:
        self.genes, self.params, self.old_labels = genes, params, old_labels
        self.state = AdviceState()
        self.said_prefer = False
        self.thin = False  # the preferred gene rested on < 1 effective outcome

    def pick(self, signals: list[str], now_ms: int, rng: np.random.Generator) -> int:
        d = evolog_decide(self.state, signals, self.genes, False, now_ms * 1000, self.params)
        g = choose(self.genes, d.preferred_gene_id, list(d.banned_gene_ids), list(d.explore), rng)
        score = next((s for s in d.scored if s.gene_id == self.genes[g]), None)
        # Before issue 17 every pick with any evidence was labelled "prefer".
        tried = score is not None and not score.untried and d.status != "all_banned"
        self.said_prefer = tried if self.old_labels else d.status == "prefer"
        self.thin = self.said_prefer and score is not None and score.attempts < 1.0
        return g

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
                self.genes[gene],
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
    said_prefer = thin = False

    def __init__(self, genes: list[str]) -> None:
        self.genes = genes
        self.objects = [{"type": "Gene", "id": g, "category": "repair"} for g in genes]
        self.writer = EvolverGraphWriter(exact_snapshots=False)

    def pick(self, signals: list[str], now_ms: int, rng: np.random.Generator) -> int:
        self.writer.signal(now_ms, signals)
        window = list(self.writer._tail)  # the last 2000 lines, parsed
        a = evolver_advice(window, signals, self.objects, False, now_ms)
        return choose(self.genes, a.preferred_gene_id, list(a.banned_gene_ids), [], rng)

    def record(self, step: int, signals: list[str], gene: int, ok: bool, now_ms: int) -> None:
        self.writer.attempt(now_ms, signals, self.objects[gene])
        status, score = ("success", 0.85) if ok else ("failed", 0.2)
        self.writer.outcome(now_ms, status, score, "simulated", signals)
        self.writer.lines.clear()  # only the window matters; keep memory flat


class RandomAgent:
    said_prefer = thin = False

    def __init__(self, genes: list[str]) -> None:
        self.genes = genes

    def pick(self, signals: list[str], now_ms: int, rng: np.random.Generator) -> int:
        return int(rng.integers(len(self.genes)))

    def record(self, step: int, signals: list[str], gene: int, ok: bool, now_ms: int) -> None:
        pass


def agent(name: str, genes: list[str]) -> Any:
    if name == "evolog":
        return EvologAgent(genes, EvologParams(), old_labels=False)
    if name == "evolog_old":
        return EvologAgent(genes, OLD_RULE, old_labels=True)
    return EvolverAgent(genes) if name == "evolver" else RandomAgent(genes)


def run_seed(args: tuple[int, int, float, str, float]) -> dict[str, Any]:
    seed, steps, regime, kind, flip = args
    sparse = kind == "sparse"
    world = sparse_world if sparse else drifting_world
    ctx, probs, uniforms, flips = world(seed, steps, regime)
    genes, contexts = (SPARSE_GENES, SPARSE_CONTEXTS) if sparse else (GENE_IDS, CONTEXTS)
    best = probs.max(axis=1)
    out: dict[str, Any] = {"seed": seed}
    for name in POLICIES:
        player = agent(name, genes)
        rng = np.random.default_rng([seed, POLICIES.index(name)])
        expected = np.empty(steps)
        successes = prefers = good_prefers = thin = 0
        t0 = time.perf_counter()
        for t in range(steps):
            signals, now_ms = contexts[ctx[t]], START_MS + t * STEP_MS
            g = player.pick(signals, now_ms, rng)
            ok = bool(uniforms[t] < probs[t, g])
            player.record(t, signals, g, ok != bool(flips[t] < flip), now_ms)
            expected[t] = probs[t, g]
            successes += ok
            if player.said_prefer:
                prefers += 1
                good_prefers += bool(probs[t, g] >= best[t] - 0.05)
                thin += player.thin
        out[name] = {
            "expected_success": float(expected.sum()),
            "successes": successes,
            "prefers": prefers,
            "good_prefers": good_prefers,
            "thin_prefers": thin,
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
    colors = {"evolog": "tab:green", "evolog_old": "tab:olive", "evolver": "tab:red",
              "random": "tab:gray"}  # fmt: skip
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
    ap.add_argument("--world", choices=("drifting", "sparse"), default="drifting")
    ap.add_argument("--flip", type=float, default=None, help="misreported outcomes (sparse: 0.1)")
    ap.add_argument("--seed0", type=int, default=0, help="first seed (fresh seeds: held out)")
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
        flip = args.flip if args.flip is not None else 0.1 if args.world == "sparse" else 0.0
        seeds = range(args.seed0, args.seed0 + args.seeds)
        jobs = [(seed, args.steps, args.regime, args.world, flip) for seed in seeds]
        with multiprocessing.get_context("spawn").Pool(args.procs) as pool:
            results = pool.map(run_seed, jobs)
    summary: dict[str, Any] = {
        "world": args.world,
        "seeds": args.seeds,
        "steps": args.steps,
        "regime": args.regime,
    }
    for name in POLICIES:
        summary[name] = {
            "expected_success": float(np.mean([r[name]["expected_success"] for r in results])),
            "regret": float(
                np.mean([r["best_possible"] - r[name]["expected_success"] for r in results])
            ),
            "successes": float(np.mean([r[name]["successes"] for r in results])),
            "seconds_per_seed": float(np.mean([r[name]["seconds"] for r in results])),
        }
        prefers = sum(r[name]["prefers"] for r in results)
        if prefers and name.startswith("evolog"):
            summary[name]["prefers_per_seed"] = prefers / len(results)
            good = sum(r[name]["good_prefers"] for r in results)
            summary[name]["prefer_within_0.05_of_best"] = good / prefers
            summary[name]["prefers_on_thin_evidence"] = sum(
                r[name]["thin_prefers"] for r in results
            )
    for other in ("evolog_old", "evolver", "random"):
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
