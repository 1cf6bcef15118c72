"""Survival suites (arms x seeds over one environment) and the poisoned-memory demo."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from ._env import Environment, StorageEnv, TestSuiteEnv
from ._errors import SurvivalError
from ._memory import STORAGE_MEMORIES, TESTSUITE_MEMORIES, Memory
from ._pytestenv import Mode, PytestRunner
from ._run import ARMS, RunResult, run_arm

ENVS = ("storage", "testsuite")
UNITS = {"storage": "bytes", "testsuite": "tests"}


def memories_of(env: str) -> tuple[Memory, ...]:
    return STORAGE_MEMORIES if env == "storage" else TESTSUITE_MEMORIES


def make_env(env: str, root: Path, seed: int, runner: PytestRunner | None) -> Environment:
    if env == "storage":
        return StorageEnv(root, seed=seed)
    if env == "testsuite":
        return TestSuiteEnv(root, seed=seed, runner=runner)
    raise SurvivalError(f"env: expected one of {', '.join(ENVS)}; got {env!r}")


def run_suite(
    env: str,
    arms: Sequence[str],
    seeds: Sequence[int],
    cycles: int,
    root: Path,
    *,
    pytest_mode: Mode = "worker",
    progress: Callable[[RunResult], None] | None = None,
) -> list[RunResult]:
    """Every arm for every seed; each run in its own store under ``root``.

    The survival run of a seed always runs first: random_matched replays its evictions.
    """
    bad = [a for a in arms if a not in ARMS]
    if bad or not arms:
        raise SurvivalError(f"arms: expected some of {', '.join(ARMS)}; got {', '.join(bad)}")
    make_env(env, root, 0, None)  # validates the name before any work
    runner = PytestRunner(pytest_mode) if env == "testsuite" else None
    results = []
    try:
        for seed in seeds:
            survival: RunResult | None = None
            order = ["survival", *(a for a in arms if a != "survival")]
            if "random_matched" not in arms and "survival" not in arms:
                order = list(arms)
            for arm in order:
                run = run_arm(
                    arm,
                    make_env(env, root / f"{env}-{arm}-{seed}-world", seed, runner),
                    memories_of(env),
                    seed=seed,
                    cycles=cycles,
                    store=root / f"{env}-{arm}-{seed}",
                    evictions=survival.evictions if survival else (),
                )
                survival = run if arm == "survival" else survival
                if arm in arms:
                    results.append(run)
                    if progress is not None:
                        progress(run)
    finally:
        if runner is not None:
            runner.close()
    return results


def poison_demo(
    directory: str | Path, cycles: int = 25, seed: int = 7, out: TextIO | None = None
) -> int:
    """A poisoned memory dying: the survival arm on the storage sandbox, into a store.

    The store at ``directory`` keeps every decision and measurement; ``evolog --store
    DIRECTORY ledger --graveyard`` replays the same deaths from it.
    """
    out = out or sys.stdout
    root = Path(directory)
    if root.exists() and any(root.iterdir()):
        raise SurvivalError(f"{root}: expected a new or empty directory for the demo store")
    poisoned = {m.id for m in STORAGE_MEMORIES if m.poisoned}
    out.write(f"survival loop: {len(STORAGE_MEMORIES)} memories, 12 files per cycle, a real "
              f"disk under {root}\n")  # fmt: skip
    out.write(f"poisoned (unknown to the ledger): {', '.join(sorted(poisoned))}\n\n")
    out.write(f"{'cycle':>5} {'pop':>4} {'energy':>7} {'bytes Δ':>10}  deaths\n")

    def show(run: RunResult) -> None:
        for c in range(len(run.deltas)):
            deaths = ", ".join(
                f"{name} {cause}" + (" (POISON)" if name in poisoned else "")
                for name, cause in run.deaths[c]
            )
            out.write(f"{c:>5} {run.population[c]:>4} {run.energy[c]:>7.2f} "
                      f"{run.deltas[c]:>+10.0f}  {deaths}\n")  # fmt: skip

    run = run_arm("survival", StorageEnv(root / "sandbox", seed=seed), STORAGE_MEMORIES,
                  seed=seed, cycles=cycles, store=root / "store")  # fmt: skip
    show(run)
    buried = {name for name, _, _ in run.graveyard}
    out.write(f"\npoisoned memories still alive: {len(poisoned - buried)}\n")
    out.write(
        f"replay the deaths from the log: evolog --store {root / 'store'} ledger --graveyard\n"
    )
    return 0
