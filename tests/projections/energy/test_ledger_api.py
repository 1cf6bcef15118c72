"""``ledger()`` on demand, ``dead_entries`` and its checkpoint, and the CLI commands."""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import evolog.projections.energy._cache as cache_module
import pytest
from evolog.eventlog import (
    Attempt,
    DreamBegin,
    DreamEnd,
    EventLog,
    Feedback,
    Lifecycle,
    Merge,
    Outcome,
    Retraction,
    StoreNotFoundError,
    Tick,
)
from evolog.projections._errors import InvalidParameterError
from evolog.projections.energy._cache import LedgerCache, dead_entries, deaths
from evolog.projections.energy._config import LedgerConfig
from evolog.projections.energy._ledger import ledger, replay_ledger

from evolog.cli._main import main
from tests.projections.energy.test_ledger_equivalence import random_events, snapshot, store_of

T0 = 1_767_225_600_000_000


def poison_log(path: Path) -> EventLog:
    """m-good earns, m-poison is executed at tick 0, m-idle starves at tick 19."""
    log = EventLog(path, create=True, durability="none")
    log.append_many([Lifecycle(entry="m-idle", ts=T0)])
    for k in range(3):
        log.append_many([
            Attempt(action_id=f"p{k}", decided_by=["m-poison"], supported_by=["m-good"], ts=T0 + k),
            Outcome(action_id=f"p{k}", delta=-3.0, ts=T0 + k),
            Outcome(action_id=f"g{k}", delta=2.0, decided_by=["m-good"], ts=T0 + k),
        ])  # fmt: skip
    for t in range(25):
        log.append(Tick(ts=T0 + 1_000_000 * (t + 1), reason="test"))
    return log


def test_the_ledger_reports_balances_states_and_causes(tmp_path: Path) -> None:
    log = poison_log(tmp_path / "s")
    view = ledger(log)
    poison, good, idle = (view.entry(x) for x in ("m-poison", "m-good", "m-idle"))
    assert poison is not None and good is not None and idle is not None
    assert (poison.alive, poison.cause, poison.died_tick) == (False, "executed", 0)
    assert (idle.alive, idle.cause, idle.died_tick) == (False, "starved", 19)
    assert good.alive and good.cause is None and good.died_tick is None
    assert [e.id for e in view.graveyard()] == ["m-poison", "m-idle"]
    assert [e.id for e in view.entries()] == ["m-idle", "m-poison", "m-good"]
    assert view.summary()["deaths"]["executed"] == 1
    assert view.tick == 25 and view.as_of_seq == log.stats()["events"]
    assert view.entry("never-seen") is None


def test_as_of_a_seq_or_a_time_is_a_point_in_history(tmp_path: Path) -> None:
    log = poison_log(tmp_path / "s")
    early = ledger(log, 3)  # the first settle only
    poison = early.entry("m-poison")
    assert poison is not None and poison.alive
    assert poison.energy == 1.0 + 0.6 * math.tanh(-3.0)
    by_time = ledger(log, as_of_ts=T0 + 5_000_000)  # five ticks in
    assert by_time.tick == 5
    with pytest.raises(InvalidParameterError, match="as_of"):
        ledger(log, -1)


def test_another_config_is_a_counterfactual_and_writes_nothing(tmp_path: Path) -> None:
    log = poison_log(tmp_path / "s")
    before = sorted(p for p in Path(log.path).rglob("*"))
    lenient = ledger(log, config={"credit_gain": 0.1, "upkeep": 0.01})
    assert lenient.entry("m-poison").alive  # type: ignore[union-attr]
    assert lenient.entry("m-idle").alive  # type: ignore[union-attr]
    assert sorted(p for p in Path(log.path).rglob("*")) == before


def test_history_on_request(tmp_path: Path) -> None:
    log = poison_log(tmp_path / "s")
    view = ledger(log, history=["m-poison"])
    notes = view.entry("m-poison").history  # type: ignore[union-attr]
    assert notes is not None
    assert [n.what for n in notes] == ["born", "decided", "decided", "died:executed"]
    assert view.entry("m-good").history is None  # type: ignore[union-attr]


def test_sealed_and_unsealed_logs_replay_the_same(tmp_path: Path) -> None:
    log = store_of(tmp_path / "s", random_events(random.Random(3), 400))
    want = snapshot(replay_ledger(log)[0])
    log.seal()
    assert snapshot(replay_ledger(log)[0]) == want
    assert snapshot(replay_ledger(str(tmp_path / "s"))[0]) == want


def test_a_retracted_dream_merge_never_happened(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "s", create=True, durability="none")
    log.append_many([
        Outcome(action_id="a1", decided_by=["n1"], supported_by=["n2"], delta=1.0),
        DreamBegin(cycle="c1"),
        Merge(cycle="c1", node="n1", merged="n2"),
        DreamEnd(cycle="c1"),
    ])  # fmt: skip
    merged = ledger(log)
    assert merged.entry("n2").cause == "merged"  # type: ignore[union-attr]
    assert merged.entry("n1").lineage == ["n2"]  # type: ignore[union-attr]
    c = 0.6 * math.tanh(1.0)
    assert merged.entry("n1").energy == (1.0 + c) + (1.0 + c * 0.25)  # type: ignore[union-attr]
    assert dead_entries(log) == {"n2"}
    log.append(Retraction(target_cycle="c1"))
    assert ledger(log).entry("n2").alive  # type: ignore[union-attr]
    assert dead_entries(log) == frozenset()


def test_bad_sources_are_refused(tmp_path: Path) -> None:
    with pytest.raises(StoreNotFoundError):
        ledger(tmp_path / "nothing")
    with pytest.raises(InvalidParameterError, match="store"):
        ledger(42)


@pytest.mark.parametrize("rewrite_after", [0, 10_000])
def test_dead_entries_from_the_checkpoint_equal_a_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rewrite_after: int
) -> None:
    """Later batches reuse action keys of earlier ones: late and duplicate outcomes hit the
    checkpoint's key hashes and must be dropped exactly as a replay drops them."""
    monkeypatch.setattr(cache_module, "REWRITE_AFTER", rewrite_after)
    rng = random.Random(11)
    log = store_of(tmp_path / "s", random_events(rng, 300))
    full = lambda: dead_entries(log, cache=False)  # noqa: E731
    assert dead_entries(log) == full()
    cache_dir = tmp_path / "s" / "cache" / "ledger"
    assert len(list(cache_dir.glob("*.msgpack"))) == 1
    for _ in range(3):
        log.append_many(random_events(rng, 120))
        assert dead_entries(log) == full()
    log.seal()
    log.append_many(random_events(rng, 50))
    assert dead_entries(log) == full()
    follower = LedgerCache(log, LedgerConfig()).follower()
    want = replay_ledger(log)[0]
    assert snapshot(follower.rules) == snapshot(want)
    assert want.state.counters.dropped > 0
    assert set(deaths(log).values()) <= {"executed", "starved", "merged", "forgotten"}


def test_the_checkpoint_is_only_a_cache(tmp_path: Path) -> None:
    log = poison_log(tmp_path / "s")
    want = dead_entries(log)
    (path,) = (tmp_path / "s" / "cache" / "ledger").glob("*.msgpack")
    path.write_bytes(b"garbage")
    assert dead_entries(log) == want
    os.remove(path)
    assert dead_entries(log) == want
    lenient = {"credit_gain": 0.1, "upkeep": 0.01}
    assert dead_entries(log, config=lenient) == frozenset()
    assert len(list((tmp_path / "s" / "cache" / "ledger").glob("*.msgpack"))) == 2
    assert dead_entries(log, as_of=3) == frozenset()


def cli(store: Path, *argv: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run ``evolog --store STORE ARGV...``; return the exit code, stdout and stderr."""
    code = main(["--store", str(store), *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_ledger_json_has_every_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    poison_log(tmp_path / "s").close()
    code, out, _ = cli(tmp_path / "s", "ledger", "--json", capsys=capsys)
    doc: dict[str, Any] = json.loads(out)
    assert code == 0 and doc["tick"] == 25
    by_id = {e["id"]: e for e in doc["entries"]}
    assert set(by_id) == {"m-idle", "m-poison", "m-good"}
    for e in doc["entries"]:
        assert {"id", "energy", "alive", "cause", "born_tick", "died_tick"} <= e.keys()
    assert by_id["m-poison"]["cause"] == "executed" and by_id["m-good"]["cause"] is None
    code, out, _ = cli(tmp_path / "s", "ledger", "--graveyard", "--json", capsys=capsys)
    assert [e["id"] for e in json.loads(out)["entries"]] == ["m-poison", "m-idle"]


def test_cli_table_entry_tick_and_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    poison_log(tmp_path / "s").close()
    code, out, _ = cli(tmp_path / "s", "ledger", capsys=capsys)
    assert code == 0 and "m-poison" in out and "executed" in out
    code, out, _ = cli(tmp_path / "s", "ledger", "--entry", "m-poison", capsys=capsys)
    assert code == 0 and "died:executed" in out
    code, out, _ = cli(tmp_path / "s", "tick", "--ticks", "3", capsys=capsys)
    assert code == 0 and json.loads(out)["ticks"] == 3
    code, out, _ = cli(tmp_path / "s", "ledger", "--json", "--as-of", "4", capsys=capsys)
    assert json.loads(out)["tick"] == 0
    code, out, _ = cli(tmp_path / "s", "ledger", "--json", capsys=capsys)
    assert json.loads(out)["tick"] == 28
    code, _, err = cli(tmp_path / "s", "ledger", "--config", '{"upkeep": -1}', capsys=capsys)
    assert code == 2 and "upkeep" in err
    code, _, err = cli(tmp_path / "s", "ledger", "--entry", "nope", capsys=capsys)
    assert code == 2 and "nope" in err
    code, _, err = cli(tmp_path / "s", "tick", "--ticks", "0", capsys=capsys)
    assert code == 2
    code, _, err = cli(tmp_path / "missing", "ledger", capsys=capsys)
    assert code == 1 and "store" in err


def test_a_huge_tick_event_replays_at_once(tmp_path: Path) -> None:
    log = poison_log(tmp_path / "s")
    log.append_many([Attempt(action_id="late", decided_by=["m-good"]), Tick(ticks=2**62)])
    log.append(Outcome(action_id="late", delta=1.0))
    view = ledger(log)
    assert view.tick == 25 + 2**62
    assert view.summary()["alive"] == 0 and view.summary()["dropped"] == 1


def test_tick_cadences(tmp_path: Path) -> None:
    day = 86_400_000_000
    log = EventLog(tmp_path / "s", create=True, durability="none")
    log.append_many([
        Outcome(action_id="a", decided_by=["m"], delta=1.0, ts=T0),
        Outcome(action_id="b", decided_by=["m"], delta=1.0, ts=T0 + 1),
        Tick(ts=T0 + 2, ticks=4),
        DreamEnd(cycle="c", ts=T0 + 3),
        Outcome(action_id="c", decided_by=["m"], delta=1.0, ts=T0 + 2 * day + 5),
    ])  # fmt: skip
    assert ledger(log).tick == 4
    assert ledger(log, config={"explicit_ticks": False}).tick == 0
    assert ledger(log, config={"ticks_per_dream": 2, "explicit_ticks": False}).tick == 2
    assert ledger(log, config={"outcomes_per_tick": 2, "explicit_ticks": False}).tick == 1
    by_day = ledger(log, config={"tick_every_us": day, "explicit_ticks": False})
    assert by_day.tick == 2  # (T0 is midnight UTC) two day boundaries before the last one
    assert by_day.entry("m").last_used_tick == 2  # type: ignore[union-attr]


def test_a_checkpoint_at_the_head_answers_deaths_without_the_rules(tmp_path: Path) -> None:
    rng = random.Random(5)
    log = store_of(tmp_path / "s", random_events(rng, 300))
    first = deaths(log)  # writes the checkpoint at the head
    cache = LedgerCache(log, LedgerConfig())
    assert first and cache.dead_at_head() == first == deaths(log, cache=False)
    code = (
        "import sys\nfrom evolog.eventlog import EventLog\nfrom evolog.projections import deaths\n"
        "with EventLog(sys.argv[1]) as log:\n    print(len(deaths(log)), 'numpy' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "s")], capture_output=True, text=True
    )
    assert out.stdout.split() == [str(len(first)), "False"], out.stderr
    log.append_many(random_events(rng, 5))
    assert cache.dead_at_head() is None  # behind the head: the rules apply what is new
    assert deaths(log) == deaths(log, cache=False)


def test_attempts_after_the_checkpoint_answer_deaths_without_the_rules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent's attempt lands between two routes: no rule buries at an attempt, so the
    checkpoint's graveyard is still the head's (a route then restores no rules)."""
    rng = random.Random(7)
    log = store_of(tmp_path / "s", random_events(rng, 300))
    first = deaths(log)  # the checkpoint at the head
    cache = LedgerCache(log, LedgerConfig())
    # Other kinds than the ledger's and attempts only (new entries, known ones, a repeat).
    quiet = [e for e in random_events(rng, 40) if isinstance(e, Attempt)]
    log.append_many([*quiet, Feedback(target="m1", rating=1.0), quiet[0]])
    restored: list[int] = []
    monkeypatch.setattr(LedgerCache, "follower", lambda self: restored.append(1))
    assert cache.dead_at_head() == first == deaths(log) == deaths(log, cache=False)
    assert restored == []
    monkeypatch.undo()
    monkeypatch.setattr(cache_module, "REWRITE_AFTER", 0)  # each call checkpoints the head
    louder = (Outcome(action_id=quiet[0].action_id, delta=-9.0), Tick(ticks=1))
    for loud in (*louder, Lifecycle(entry="m2", op="forget"), Retraction(target_cycle="c1")):
        deaths(log)
        log.append(loud)
        assert cache.dead_at_head() is None, loud  # it may bury: the rules apply it
        assert deaths(log) == deaths(log, cache=False)


def test_a_quiet_tail_is_not_trusted_with_a_clock_sealed_or_long(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(8)
    log = store_of(tmp_path / "s", random_events(rng, 200))
    clock = LedgerConfig(tick_every_us=1_000_000)
    deaths(log, config=clock)
    deaths(log)
    log.append(Attempt(action_id="late", decided_by=["m1"], ts=T0 + 10**12))
    assert LedgerCache(log, clock).dead_at_head() is None  # the attempt's time may tick
    assert LedgerCache(log, LedgerConfig()).dead_at_head() is not None
    monkeypatch.setattr(cache_module, "QUIET_TAIL", 1)
    log.append(Attempt(action_id="later", decided_by=["m2"]))
    assert LedgerCache(log, LedgerConfig()).dead_at_head() is None  # past the bound
    monkeypatch.setattr(cache_module, "QUIET_TAIL", 1024)
    log.seal()
    assert LedgerCache(log, LedgerConfig()).dead_at_head() is None  # sealed since
    assert deaths(log) == deaths(log, cache=False)


def test_every_kind_the_ledger_reads_but_attempts_may_bury() -> None:
    from evolog.projections.energy._config import LEDGER_KINDS

    assert set(LEDGER_KINDS) - {Attempt} <= set(cache_module.MAY_BURY)
    assert Attempt not in cache_module.MAY_BURY and Retraction in cache_module.MAY_BURY


def test_deaths_through_quiet_and_loud_batches_equal_a_replay(tmp_path: Path) -> None:
    rng = random.Random(9)
    log = store_of(tmp_path / "s", random_events(rng, 200))
    for _ in range(12):
        batch = random_events(rng, 30)
        if rng.random() < 0.6:
            batch = [e for e in batch if isinstance(e, Attempt)]
        log.append_many(batch)
        assert dead_entries(log) == dead_entries(log, cache=False)
