"""``evolog demo``: a simulated agent's life recorded into a store, then shown back.

The agent meets a handful of recurring situations (signal sets), picks a gene (a repair
strategy) for each, runs a few steps and sees an outcome. Each gene has a hidden success
probability per situation. Everything is seeded and every id is derived from the seed and
cycle, so running the demo twice adds nothing the second time: appends are idempotent.
"""

from __future__ import annotations

import random
import sys
from collections import defaultdict
from typing import Any

from evolog.eventlog import AnyEvent, Attempt, Event, Hypothesis, Outcome, Signal, Step

from ._memory import Memory

SITUATIONS: dict[str, list[str]] = {
    "import-error": ["log_error", "errsig:ModuleNotFoundError: No module named 'yaml'"],
    "flaky-test": ["test_failure", "flaky", "errsig:AssertionError in tests/test_io.py:41"],
    "slow-query": ["perf_regression", "slow_query"],
    "disk-full": ["log_error", "errsig:OSError: [Errno 28] No space left on device"],
    "type-error": ["log_error", "errsig:TypeError: 'NoneType' object is not subscriptable"],
}
GENES: dict[str, dict[str, float]] = {
    "gene_pin_dependency": {"import-error": 0.85, "flaky-test": 0.2},
    "gene_retry_with_backoff": {"flaky-test": 0.7, "slow-query": 0.3, "disk-full": 0.1},
    "gene_add_index": {"slow-query": 0.8},
    "gene_clean_tmp": {"disk-full": 0.75, "flaky-test": 0.15},
    "gene_guard_none": {"type-error": 0.8, "import-error": 0.1},
}
STEPS = {
    "gene_pin_dependency": ["read requirements", "pin version", "reinstall", "run tests"],
    "gene_retry_with_backoff": ["wrap call", "add backoff", "run tests"],
    "gene_add_index": ["explain query", "create index", "re-run query"],
    "gene_clean_tmp": ["measure disk", "delete tmp files", "retry write"],
    "gene_guard_none": ["locate None", "add guard", "run tests"],
}
T0_US = 1_767_225_600_000_000  # 2026-01-01T00:00:00Z: simulated time, so reruns are identical
CYCLE_US = 600_000_000  # ten minutes between cycles


def simulate(cycles: int, seed: int) -> list[list[Event]]:
    """The events of each cycle (one atomic batch per cycle)."""
    rng = random.Random(seed)
    tried: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    batches = []
    for c in range(cycles):
        situation = rng.choice(sorted(SITUATIONS))
        gene = _choose(rng, situation, tried)
        ok = rng.random() < GENES[gene].get(situation, 0.05)
        tried[(situation, gene)][0 if ok else 1] += 1
        batches.append(_cycle_events(rng, seed, c, situation, gene, ok))
    return batches


def _choose(rng: random.Random, situation: str, tried: dict[tuple[str, str], list[int]]) -> str:
    # An epsilon-greedy agent with no memory service yet: it learns only from its own counts.
    if rng.random() < 0.2:
        return rng.choice(sorted(GENES))

    def rate(g: str) -> float:
        s, f = tried[(situation, g)]
        return (s + 1) / (s + f + 2)

    return max(sorted(GENES), key=rate)


def _cycle_events(
    rng: random.Random, seed: int, c: int, situation: str, gene: str, ok: bool
) -> list[Event]:
    base = f"demo-{seed}-{c}"
    ts = T0_US + c * CYCLE_US
    env: dict[str, Any] = {"agent": "demo-agent", "session": f"demo-{seed}", "source": "simulated"}
    signals = SITUATIONS[situation]
    events: list[Event] = [
        Signal(id=f"{base}-signal", ts=ts, signals=signals, **env),
        Hypothesis(
            id=f"{base}-hyp",
            ts=ts + 1,
            hypothesis_id=f"{base}-hyp",
            signals=signals,
            gene=gene,
            text=f"{gene} should resolve {situation}",
            **env,
        ),
        Attempt(
            id=f"{base}-act",
            ts=ts + 2,
            action_id=f"{base}-act",
            signals=signals,
            gene=gene,
            hypothesis_id=f"{base}-hyp",
            task=f"resolve {situation}",
            decided_by=[gene],
            **env,
        ),
    ]
    steps = STEPS[gene]
    fail_at = len(steps) - 1 if not ok else -1
    for i, action in enumerate(steps):
        events.append(
            Step(
                id=f"{base}-step{i}",
                ts=ts + 10 + i,
                action_id=f"{base}-act",
                index=i,
                action=action,
                result="error" if i == fail_at else "done",
                ok=i != fail_at,
                **env,
            )
        )
    delta = rng.uniform(0.5, 1.5) if ok else -rng.uniform(0.2, 1.0)
    events.append(
        Outcome(
            id=f"{base}-out",
            ts=ts + 100,
            action_id=f"{base}-act",
            gene=gene,
            signals=signals,
            status="success" if ok else "failed",
            score=0.85 if ok else 0.2,
            decided_by=[gene],
            delta=round(delta, 3),
            **env,
        )
    )
    return events


def run_demo(directory: str, cycles: int, seed: int) -> int:
    out = sys.stdout
    batches = simulate(cycles, seed)
    with Memory(directory, durability="batch") as mem:
        new = dup = 0
        for batch in batches:
            for r in mem.append_receipts(batch):
                dup += r.duplicate
                new += not r.duplicate
        mem.flush()
        sealed = mem.seal()
        stats = mem.stats()
        events = list(mem.replay(kinds=["outcome"]))
    out.write(f"evolog demo: {cycles} simulated agent cycles into {stats['store']}\n")
    out.write(f"  appended {new} new events ({dup} already present)\n")
    out.write(f"  sealed {sealed.rows} events into {sealed.segments} Parquet segment(s)\n\n")
    _print_stats(stats)
    _print_gene_table(events)
    from evolog.cli import demo_dream

    demo_dream(directory, out)
    _survival(directory)
    return 0


def _survival(directory: str) -> None:
    """A poisoned memory dying under the survival ledger, in a store of its own."""
    import os

    from evolog.survive import poison_demo

    path = os.path.join(directory, "survival")
    sys.stdout.write("\n")
    if os.path.isdir(path) and os.listdir(path):
        sys.stdout.write(
            f"survival loop already recorded in {path}; replay its deaths with "
            f"`evolog --store {path}/store ledger --graveyard`\n"
        )
        return
    poison_demo(path, cycles=25, seed=7)


def _print_stats(stats: dict[str, Any]) -> None:
    out = sys.stdout
    out.write(
        f"store holds {stats['events']} events in {stats['segments']} segment(s), "
        f"{stats['segment_bytes']} bytes ({stats['bytes_per_sealed_event']} B/event)\n"
    )
    for kind, n in stats["kinds"].items():
        out.write(f"  {kind:<12} {n:>7}\n")
    out.write("\n")


def _print_gene_table(outcomes: list[AnyEvent]) -> None:
    counts: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for e in outcomes:
        if isinstance(e, Outcome) and e.gene:
            counts[(e.key, e.gene)][0 if e.status == "success" else 1] += 1
    out = sys.stdout
    out.write(f"{'signal key':<58} {'gene':<24} {'ok':>4} {'fail':>5} {'p':>6}\n")
    for (key, gene), (s, f) in sorted(counts.items(), key=lambda kv: (kv[0][0], -sum(kv[1]))):
        p = (s + 1) / (s + f + 2)
        out.write(f"{key[:58]:<58} {gene:<24} {s:>4} {f:>5} {p:>6.2f}\n")
