"""``evolog ledger birth|pin|unpin|forget`` and the catch-up guard of ``evolog tick``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from evolog.eventlog import Attempt, EventLog, Lifecycle, Outcome
from evolog.projections.energy._ledger import ledger

from evolog.cli._main import main


def cli(store: Path, *argv: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["--store", str(store), *argv])
    out, err = capsys.readouterr()
    return code, out, err


def events(store: Path) -> int:
    with EventLog(store) as log:
        return int(log.stats()["events"])


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "s"
    EventLog(path, create=True).close()
    return path


def test_birth_pin_unpin_forget_append_lifecycle_events(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli(store, "ledger", "birth", "imp", "--probation", "2", capsys=capsys)
    assert code == 0, err
    assert json.loads(out)["op"] == "birth"
    assert cli(store, "ledger", "pin", "imp", capsys=capsys)[0] == 0
    e = ledger(store).entry("imp")
    assert e is not None and e.alive and e.pinned and e.probation == 2
    assert cli(store, "ledger", "unpin", "imp", capsys=capsys)[0] == 0
    assert cli(store, "ledger", "forget", "imp", capsys=capsys)[0] == 0
    e = ledger(store).entry("imp")
    assert e is not None and e.cause == "forgotten"
    with EventLog(store) as log:
        ops = [(ev.op, ev.entry) for ev in log.replay() if isinstance(ev, Lifecycle)]
    assert ops == [("birth", "imp"), ("pin", "imp"), ("unpin", "imp"), ("forget", "imp")]
    code, out, _ = cli(store, "ledger", "--json", capsys=capsys)
    assert code == 0 and json.loads(out)["entries"][0]["id"] == "imp"


def test_birth_options(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(store, "ledger", "birth", "g", "--energy", "2.5", "--pinned", capsys=capsys)
    assert code == 0, err
    e = ledger(store).entry("g")
    assert e is not None and e.energy == 2.5 and e.pinned


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (("forget", "pinned"), ["pinned", "unpin"]),
        (("forget", "held"), ["escrow"]),
        (("forget", "nobody"), ["never born"]),
        (("pin", "dead"), ["forgotten"]),
        (("unpin", "nobody"), ["never born"]),
        (("birth", "held"), ["already born"]),
        (("birth", "dead"), ["already born", "resurrected"]),
        (("birth", "x", "--energy", "nan"), ["--energy"]),
        (("birth", "x", "--energy", "0"), ["--energy"]),
        (("birth", "x", "--probation", "-1"), ["--probation"]),
        (("birth", ""), ["entry"]),
    ],
)
def test_refused_actions_are_one_line_and_leave_the_store_alone(
    store: Path, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], words: list[str]
) -> None:
    with EventLog(store) as log:
        log.append(Lifecycle(entry="pinned", op="birth", pinned=True))
        log.append(Attempt(action_id="a1", decided_by=["held"]))
        log.append(Lifecycle(entry="dead", op="birth"))
        log.append(Lifecycle(entry="dead", op="forget"))
    before = events(store)
    code, out, err = cli(store, "ledger", *argv, capsys=capsys)
    assert code == 2 and out == ""
    assert err.startswith("evolog: error: ") and err.count("\n") == 1
    for w in words:
        assert w in err
    assert events(store) == before


def test_a_catch_up_tick_that_would_starve_everyone_is_refused(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with EventLog(store) as log:
        for k in range(32):
            delta = -1.0 if k % 8 == 0 else 1.0  # 28 successes, 4 failures
            log.append(Outcome(action_id=f"a{k}", decided_by=["best"], delta=delta))
    before = events(store)
    code, out, err = cli(store, "tick", "--ticks", "100", capsys=capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "--force" in err and "starve" in err
    assert events(store) == before
    assert cli(store, "tick", "--ticks", "19", capsys=capsys)[0] == 0
    code, out, _ = cli(store, "tick", "--ticks", "100", "--force", capsys=capsys)
    assert code == 0 and json.loads(out)["ticks"] == 100
    e = ledger(store).entry("best")
    assert e is not None and e.cause == "starved"  # upkeep killed it, not its 4 failures
