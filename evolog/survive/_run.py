"""The survival loop, event-sourced: decisions and measurements go to a real store, and
the ledger that decides who lives is read back from that log.

One run = one arm x one environment x one seed. Every cycle, for each task: the agent
retrieves among the memories its arm keeps, the best hit decides and the rest support, the
environment acts and measures; an ``Attempt`` (naming the deciding and supporting
memories) and its ``Outcome`` (the measured delta) are appended, and the ledger follower
applies them (a poisoned memory driven broke dies at that settle). A ``Tick`` closes the
cycle (upkeep, starvation). Arms differ only in who is evicted:

* ``survival``: the ledger's dead are gone;
* ``random_matched``: as many evictions per cycle as the survival run of the same seed
  had, victims drawn at random (appended as ``forget`` lifecycle events);
* ``keep_everything``: nobody is ever evicted.

At the end the follower's state is checked against a full replay of the store.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from evolog.eventlog import Attempt, Event, EventLog, Lifecycle, Outcome, Tick
from evolog.projections import LedgerConfig, LedgerRules, replay_ledger
from evolog.projections.energy import LedgerFollower, events_after
from evolog.projections.energy.rules import ALIVE, CAUSES

from ._env import Environment
from ._errors import SurvivalError
from ._memory import Memory, decide, decision_polarity, retrieve

ARMS = ("survival", "random_matched", "keep_everything")
T0_US = 1_767_225_600_000_000  # simulated time: reruns write identical events
CYCLE_US = 600_000_000


@dataclass
class RunResult:
    """What one run measured, cycle by cycle."""

    arm: str
    env: str
    seed: int
    store: str
    deltas: list[float] = field(default_factory=list)
    poison_alive: list[int] = field(default_factory=list)
    population: list[int] = field(default_factory=list)
    evictions: list[int] = field(default_factory=list)
    energy: list[float] = field(default_factory=list)
    deaths: list[list[tuple[str, str]]] = field(default_factory=list)
    graveyard: list[tuple[str, str, int]] = field(default_factory=list)


class _Run:
    """The state of one run: its store, its follower, its arm's evictions."""

    def __init__(
        self,
        arm: str,
        env: Environment,
        memories: Sequence[Memory],
        seed: int,
        store: Path,
        config: LedgerConfig,
    ) -> None:
        if arm not in ARMS:
            raise SurvivalError(f"arm: expected one of {', '.join(ARMS)}; got {arm!r}")
        self.arm, self.env, self.memories, self.seed = arm, env, list(memories), seed
        self.prefix = f"{arm}-{env.name}-{seed}"
        self.log = EventLog(store, create=True, durability="none")
        self.follower = LedgerFollower(LedgerRules(config))
        self.forgotten: set[str] = set()
        self.rng = random.Random(seed * 1000 + 17)
        self.result = RunResult(arm, env.name, seed, str(store))
        births: list[Event] = [
            Lifecycle(id=f"{self.prefix}-birth-{m.id}", ts=T0_US, entry=m.id, op="birth")
            for m in self.memories
        ]
        self.append(births)

    def append(self, events: list[Event]) -> None:
        self.log.append_many(events)
        with self.log.snapshot() as snap:
            self.follower.apply_all(events_after(snap, self.follower.seq))

    def population(self) -> list[Memory]:
        if self.arm == "keep_everything":
            return self.memories
        if self.arm == "random_matched":
            return [m for m in self.memories if m.id not in self.forgotten]
        st = self.follower.rules.state
        return [m for m in self.memories if st.cols["status"][st.index[m.id]] == ALIVE]

    def energies(self) -> dict[str, float]:
        st = self.follower.rules.state
        return {m.id: float(st.cols["energy"][st.index[m.id]]) for m in self.memories}

    def cycle(self, c: int, evict: int) -> None:
        total = 0.0
        ts = T0_US + c * CYCLE_US
        for t, task in enumerate(self.env.tasks(c)):
            decision = decide(retrieve(task.prompt, self.population(), self.energies()))
            measured = self.env.verify(task, decision.text)
            key = f"{self.prefix}-c{c}-t{t}"
            dec = [decision.decider] if decision.decider else []
            self.append([
                Attempt(id=f"{key}-attempt", ts=ts + 2 * t + 1, action_id=key, task=task.prompt,
                        decided_by=dec, supported_by=list(decision.supporters)),
                Outcome(id=f"{key}-outcome", ts=ts + 2 * t + 2, action_id=key, status="measured",
                        delta=measured.delta, note=measured.detail),
            ])  # fmt: skip
            total += measured.delta
        self.append([Tick(id=f"{self.prefix}-tick-{c}", ts=ts + CYCLE_US - 1, reason=f"cycle {c}")])
        victims: list[str] = []
        if self.arm == "random_matched" and evict:
            alive = sorted(m.id for m in self.population())
            victims = self.rng.sample(alive, min(evict, len(alive)))
            self.forgotten.update(victims)
            self.append([
                Lifecycle(id=f"{self.prefix}-evict-{c}-{v}", ts=ts + CYCLE_US - 1, entry=v,
                          op="forget")
                for v in victims
            ])  # fmt: skip
        self._record(c, total, len(victims))

    def _record(self, c: int, total: float, evicted: int) -> None:
        st = self.follower.rules.state
        population = self.population()
        active = {m.id for m in population if m.poisoned and decision_polarity(m.text)}
        r = self.result
        r.deltas.append(total)
        r.poison_alive.append(len(active))
        r.population.append(len(population))
        energy = st.view("energy")
        r.energy.append(float(sum(energy[st.index[m.id]] for m in population)))
        died = np.flatnonzero(st.view("died_tick") == c)
        died = died[np.argsort(st.view("died_seq")[died], kind="stable")]
        r.deaths.append([(st.ids[i], str(CAUSES[int(st.cols["cause"][i])])) for i in died])
        natural = sum(cause in ("executed", "starved") for _, cause in r.deaths[-1])
        r.evictions.append(natural if self.arm == "survival" else evicted)

    def finish(self) -> RunResult:
        rules, _ = replay_ledger(self.log, config=self.follower.rules.config)
        mine, full = self.follower.rules.state, rules.state
        if [mine.ids[i] for i in mine.graveyard] != [full.ids[i] for i in full.graveyard]:
            raise SurvivalError(f"{self.result.store}: the followed ledger differs from a replay")
        for i in full.graveyard:
            self.result.graveyard.append(
                (full.ids[i], _cause(full.cols["cause"][i]), int(full.cols["died_tick"][i]))
            )
        self.log.close()
        self.env.close()
        return self.result


def _cause(code: int) -> str:
    return str(CAUSES[int(code)])


def run_arm(
    arm: str,
    env: Environment,
    memories: Sequence[Memory],
    *,
    seed: int,
    cycles: int,
    store: Path,
    config: LedgerConfig | None = None,
    evictions: Sequence[int] = (),
    on_cycle: Callable[[int, RunResult], None] | None = None,
) -> RunResult:
    """One run of ``cycles`` cycles into a new store at ``store``."""
    if cycles < 1:
        raise SurvivalError(f"cycles: expected at least 1; got {cycles}")
    run = _Run(arm, env, memories, seed, store, config or LedgerConfig())
    try:
        for c in range(cycles):
            run.cycle(c, evictions[c] if c < len(evictions) else 0)
            if on_cycle is not None:
                on_cycle(c, run.result)
    except BaseException:
        run.log.close()
        env.close()
        raise
    return run.finish()
