"""The batched replay, the per-row replay and the per-event follower agree, bit for bit.

Random logs mix attempts (some never settled), outcomes (late, duplicated, ticketless,
gene-decided, without delta), ticks, lifecycle events, dream merges, nodes and retractions,
with deltas large enough to hit the cap and to kill. Every entry column (energies compared
exactly), the graveyard order, the pending tickets and the counters must match.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import evolog.projections.energy._replay as replay_module
import pytest
from evolog.eventlog import (
    AnyEvent,
    Attempt,
    DreamEnd,
    Event,
    EventLog,
    Lifecycle,
    Merge,
    Node,
    Outcome,
    Retraction,
    Tick,
)
from evolog.projections.energy._follow import LedgerFollower
from evolog.projections.energy._ledger import replay_ledger
from evolog.projections.energy.rules._rules import LedgerRules
from evolog.projections.energy.rules._state import UNBORN


def random_events(
    rng: random.Random, n: int, pool: int = 10, tick_p: float = 0.03, life_p: float = 0.02
) -> list[Event]:
    """A random ledger-shaped history of ``n`` events over ``pool`` entry ids."""
    ids = [f"m{i}" for i in range(pool)]
    actions: list[str] = []
    events: list[Event] = []
    for k in range(n):
        x = rng.random()
        if x < tick_p:
            events.append(Tick(ticks=rng.choice([1, 1, 1, 2, 7, 0])))
        elif x < tick_p + life_p:
            events.append(_lifecycle(rng, ids))
        elif x < tick_p + life_p + 0.01:
            cycle = rng.choice(["c1", "c2", "c3"])
            a, b = rng.sample(ids, 2)
            events.append(Merge(cycle=cycle, node=a, merged=b))
        elif x < tick_p + life_p + 0.015:
            events.append(Node(cycle=rng.choice(["c1", "c2"]), node=rng.choice([*ids, "n9"])))
        elif x < tick_p + life_p + 0.02:
            events.append(DreamEnd(cycle=rng.choice(["c1", "c2"])))
        elif x < tick_p + life_p + 0.31:
            action = f"a{k}" if rng.random() < 0.9 or not actions else rng.choice(actions)
            actions.append(action)
            events.append(_attempt(rng, ids, action))
        else:
            events.append(_outcome(rng, ids, actions, k))
    if rng.random() < 0.3:
        events.insert(rng.randrange(len(events) + 1), Retraction(target_cycle="c2"))
    return events


def _names(rng: random.Random, ids: list[str], most: int) -> list[str]:
    return [rng.choice([*ids, ""]) for _ in range(rng.randint(0, most))]


def _lifecycle(rng: random.Random, ids: list[str]) -> Lifecycle:
    op = rng.choice(["birth", "birth", "pin", "unpin", "forget"])
    return Lifecycle(
        entry=rng.choice(ids),
        op=op,
        energy=rng.choice([None, 0.3, 2.0, 9.0]),
        pinned=rng.choice([None, False, True]),
        probation=rng.choice([None, None, 0, 1, 2]),
    )


def _attempt(rng: random.Random, ids: list[str], action: str) -> Attempt:
    return Attempt(
        action_id=action,
        decided_by=_names(rng, ids, 2),
        supported_by=_names(rng, ids, 3),
        gene=rng.choice([None, None, "g1", "g2"]),
    )


def _outcome(rng: random.Random, ids: list[str], actions: list[str], k: int) -> Outcome:
    own = rng.random() < 0.4
    action = rng.choice(actions) if actions and rng.random() < 0.7 else rng.choice([f"o{k}", ""])
    delta = rng.choice([None, 0.0, rng.gauss(0.4, 1.5), rng.gauss(3.0, 2.0), -rng.expovariate(0.5)])
    decided = _names(rng, ids, 2) if own else []
    supported = _names(rng, ids, 2) if own else []
    gene = rng.choice([None, "g1", "g3"])
    # The log's rules: an outcome is about something, and has a verdict or a measured delta.
    if not (action or decided or supported or gene):
        gene = "g1"
    return Outcome(
        action_id=action,
        status="" if delta is not None else "success",
        delta=delta,
        decided_by=decided,
        supported_by=supported,
        gene=gene,
    )


def store_of(path: Path, events: list[Event]) -> EventLog:
    log = EventLog(path, create=True, durability="none")
    log.append_many(events)
    return log


def follow(
    log: EventLog, config: dict[str, Any] | None = None, as_of: int | None = None
) -> LedgerRules:
    """The reference: every (unretracted) event through the per-event rules."""
    events = list(log.replay(as_of))
    gone_ids = {t for e in events if isinstance(e, Retraction) for t in e.targets}
    gone_cycles = {e.target_cycle for e in events if isinstance(e, Retraction)}
    follower = LedgerFollower(LedgerRules(config))
    for e in events:
        if isinstance(e, Retraction) or e.id in gone_ids:
            continue
        if getattr(e, "cycle", None) in gone_cycles:
            continue
        follower.apply(e)
    return follower.rules


def snapshot(rules: LedgerRules) -> dict[str, Any]:
    """Everything observable, keyed by entry id (ordinals may differ between paths)."""
    st = rules.state
    entries = {}
    for i, name in enumerate(st.ids):
        if st.cols["status"][i] == UNBORN:
            continue
        entries[name] = tuple(
            float(st.cols[c][i]).hex() if c == "energy" else int(st.cols[c][i]) for c in st.cols
        )
    return {
        "entries": entries,
        "graveyard": [st.ids[i] for i in st.graveyard],
        "pending": {
            k: ([st.ids[i] for i in t.deciders], [st.ids[i] for i in t.supporters], t.born_tick)
            for k, t in st.pending.items()
        },
        "pending_order": list(st.pending),
        "counters": st.counters,
        "tick": st.tick,
        "lineage": {st.ids[i]: v for i, v in st.lineage.items()},
        "merged_into": {st.ids[i]: v for i, v in st.merged_into.items()},
    }


def assert_same(got: LedgerRules, want: LedgerRules) -> None:
    a, b = snapshot(got), snapshot(want)
    for key in a:
        if key == "entries":
            assert a[key].keys() == b[key].keys()
            for name in a[key]:
                assert a[key][name] == b[key][name], f"entry {name}"
        else:
            assert a[key] == b[key], key


CONFIGS: list[dict[str, Any]] = [
    {},
    {"expire_after": 3, "max_energy": 2.0},
    {"tick_every_us": 1000, "outcomes_per_tick": 17, "ticks_per_dream": 1, "gene_decides": False},
    {"admission_window": 2, "upkeep": 0.2},
]


@pytest.mark.parametrize("seed", range(12))
def test_batched_replay_equals_per_event_rules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    rng = random.Random(seed)
    config = CONFIGS[seed % len(CONFIGS)]
    events = random_events(rng, 600, pool=rng.choice([4, 10, 30]), tick_p=rng.choice([0.01, 0.05]))
    if config.get("tick_every_us"):
        events = [
            e.__class__(**{**_fields(e), "ts": 1_000_000 + i * rng.randint(0, 400)})
            for i, e in enumerate(events)
        ]
    log = store_of(tmp_path / "s", events)
    want = follow(log, config)
    per_row, _ = replay_ledger(log, config=config, batch=False)
    assert_same(per_row, want)
    monkeypatch.setattr(replay_module, "MIN_BATCH", 1)
    batched, _ = replay_ledger(log, config=config)
    assert_same(batched, want)


@pytest.mark.parametrize("seed", range(8))
def test_probation_pins_and_forgets_replay_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """Many lifecycle events: demoted and withheld decisions, refused forgets, in every path."""
    rng = random.Random(1000 + seed)
    events = random_events(rng, 500, pool=rng.choice([3, 6]), tick_p=0.04, life_p=0.12)
    log = store_of(tmp_path / "s", events)
    want = follow(log)
    per_row, _ = replay_ledger(log, batch=False)
    assert_same(per_row, want)
    monkeypatch.setattr(replay_module, "MIN_BATCH", 1)
    batched, _ = replay_ledger(log)
    assert_same(batched, want)


def _fields(e: AnyEvent) -> dict[str, Any]:
    return {f: getattr(e, f) for f in e.__struct_fields__ if f != "ts"}


@pytest.mark.parametrize("seed", range(3))
def test_as_of_equals_a_prefix(tmp_path: Path, seed: int) -> None:
    rng = random.Random(100 + seed)
    log = store_of(tmp_path / "s", random_events(rng, 300))
    for as_of in (1, 57, 150, 299):
        got, head = replay_ledger(log, as_of)
        assert head == as_of
        assert_same(got, follow(log, None, as_of))


def test_clock_state_matches_the_follower(tmp_path: Path) -> None:
    rng = random.Random(5)
    config = {"tick_every_us": 1000, "outcomes_per_tick": 7}
    events = [
        e.__class__(**{**_fields(e), "ts": 1_000_000 + i * rng.randint(0, 400)})
        for i, e in enumerate(random_events(rng, 300))
    ]
    log = store_of(tmp_path / "s", events)
    got, _ = replay_ledger(log, config=config)
    want = follow(log, config)
    assert (got.state.period, got.state.outcomes) == (want.state.period, want.state.outcomes)
