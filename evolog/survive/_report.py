"""Survival metrics per run, and per arm across seeds with bootstrap 95% intervals.

Per run, on the true per-cycle deltas (docs/reference/ledger.md §7):

* kill cycle: the first cycle after which no poisoned memory whose text reads as an action
  is still in the arm's population; killed = such a cycle exists;
* damage before kill: the sum of the negative per-cycle deltas up to and including the kill
  cycle (the whole run if never killed);
* tail delta: the mean of the last five per-cycle deltas; cum delta: their sum.

Across seeds: kill rate (mean), kill cycle (median over the seeds that killed), and the
means of the others, each with a seeded percentile-bootstrap 95% interval.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

from ._run import RunResult

BOOTSTRAP = 2000


@dataclass(frozen=True)
class RunMetrics:
    arm: str
    env: str
    seed: int
    killed: bool
    kill_cycle: int | None
    damage_before_kill: float
    tail_delta: float
    cum_delta: float
    final_population: int


@dataclass(frozen=True)
class Estimate:
    """A statistic over seeds with its bootstrap interval (None: no data)."""

    value: float | None
    low: float | None
    high: float | None


def run_metrics(run: RunResult) -> RunMetrics:
    kill = next((c for c, alive in enumerate(run.poison_alive) if alive == 0), None)
    upto = run.deltas if kill is None else run.deltas[: kill + 1]
    return RunMetrics(
        arm=run.arm,
        env=run.env,
        seed=run.seed,
        killed=kill is not None,
        kill_cycle=kill,
        damage_before_kill=sum(d for d in upto if d < 0),
        tail_delta=statistics.fmean(run.deltas[-5:]),
        cum_delta=sum(run.deltas),
        final_population=run.population[-1] if run.population else 0,
    )


def bootstrap(
    values: Sequence[float], stat: Callable[[Sequence[float]], float], seed: int = 0
) -> Estimate:
    """``stat`` of ``values`` with a percentile-bootstrap 95% interval."""
    if not values:
        return Estimate(None, None, None)
    rng = random.Random(seed)
    draws = sorted(stat(rng.choices(values, k=len(values))) for _ in range(BOOTSTRAP))
    return Estimate(stat(values), draws[int(0.025 * BOOTSTRAP)], draws[int(0.975 * BOOTSTRAP) - 1])


def aggregate(metrics: Sequence[RunMetrics]) -> dict[str, dict[str, Estimate]]:
    """Per arm: kill rate, kill cycle (median), damage, tail and cum deltas (means)."""
    out: dict[str, dict[str, Estimate]] = {}
    for arm in dict.fromkeys(m.arm for m in metrics):
        runs = [m for m in metrics if m.arm == arm]
        kills = [float(m.kill_cycle) for m in runs if m.kill_cycle is not None]
        out[arm] = {
            "kill_rate": bootstrap([float(m.killed) for m in runs], statistics.fmean),
            "kill_cycle": bootstrap(kills, statistics.median),
            "damage_before_kill": bootstrap([m.damage_before_kill for m in runs], statistics.fmean),
            "tail_delta": bootstrap([m.tail_delta for m in runs], statistics.fmean),
            "cum_delta": bootstrap([m.cum_delta for m in runs], statistics.fmean),
        }
    return out


def _num(x: float | None, unit: str) -> str:
    if x is None:
        return "never"
    if unit == "bytes":
        for scale, suffix in ((1e6, "M"), (1e3, "k")):
            if abs(x) >= scale:
                return f"{x / scale:+.2f}{suffix}" if suffix == "M" else f"{x / scale:+.0f}{suffix}"
        return f"{x:+.0f}"
    return f"{x:+.2f}"


def _cell(e: Estimate, unit: str, plain: bool = False) -> str:
    def fmt(x: float | None) -> str:
        if plain:
            return "never" if x is None else f"{x:.2f}"
        return _num(x, unit)

    if e.value is None:
        return "never"
    return f"{fmt(e.value)} [{fmt(e.low)}, {fmt(e.high)}]"


def table(agg: dict[str, dict[str, Estimate]], unit: str) -> str:
    """A markdown table of :func:`aggregate` (``unit``: "bytes" or "tests")."""
    lines = [
        "| arm | kill rate | kill cycle (median) | damage before kill | tail delta | cum delta |",
        "|---|---|---|---|---|---|",
    ]
    for arm, est in agg.items():
        kc = est["kill_cycle"]
        kill_cycle = "never" if kc.value is None else f"{kc.value:g} [{kc.low:g}, {kc.high:g}]"
        lines.append(
            f"| {arm} | {_cell(est['kill_rate'], unit, plain=True)} | {kill_cycle} | "
            f"{_cell(est['damage_before_kill'], unit)} | {_cell(est['tail_delta'], unit)} | "
            f"{_cell(est['cum_delta'], unit)} |"
        )
    return "\n".join(lines)


def to_builtins(
    agg: dict[str, dict[str, Estimate]],
) -> dict[str, dict[str, dict[str, float | None]]]:
    return {arm: {k: asdict(v) for k, v in est.items()} for arm, est in agg.items()}
