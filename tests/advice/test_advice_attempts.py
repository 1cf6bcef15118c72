"""Attempts closed by action id exactly once, and evolver's outcome inference (spec §8)."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path
from typing import Any

import pytest
from evolog.advice import (
    AdviceEngine,
    AttemptAlreadyClosedError,
    InvalidInputError,
    UnknownAttemptError,
    close_attempt,
    infer_outcome,
    open_attempts,
    outcome_id,
)
from evolog.advice._outcomes import infer_from_signals, js_to_number, parse_evolution_event_outcome
from evolog.eventlog import Attempt, EventLog, Outcome

T0 = 1_767_225_600_000_000


@pytest.fixture
def log(tmp_path: Path) -> Any:
    with EventLog(tmp_path / "store", create=True, durability="none") as lg:
        yield lg


def test_several_open_attempts_closed_by_id(log: EventLog) -> None:
    log.append(Attempt(id="a1", ts=T0, signals=["x"], gene="g1", agent="alice"))
    log.append(Attempt(id="a2", ts=T0, signals=["y"], gene="g2", agent="bob"))
    assert [a.action_id for a in open_attempts(log)] == ["a1", "a2"]
    seq = close_attempt(log, "a2", "success", score=0.9)
    assert [a.action_id for a in open_attempts(log)] == ["a1"]
    out = next(e for e in log.replay() if e.seq == seq)
    assert isinstance(out, Outcome) and out.id == outcome_id("a2") == "outcome:a2"
    assert (out.key, out.gene, out.agent, out.signals) == ("y", "g2", "bob", ["y"])
    close_attempt(log, "a1", "failed")
    assert open_attempts(log) == []
    assert [a.action_id for a in open_attempts(log, as_of=2)] == ["a1", "a2"]
    answer = AdviceEngine(log).advise(["y"], [{"type": "Gene", "id": "g2"}])
    assert answer.scored[0]["success"] == pytest.approx(1.0, rel=1e-6)  # decayed for a moment


def test_closing_twice_is_an_error_never_a_double_count(log: EventLog) -> None:
    log.append(Attempt(id="a1", ts=T0, signals=["x"], gene="g1"))
    first = close_attempt(log, "a1", "success")
    with pytest.raises(AttemptAlreadyClosedError) as err:
        close_attempt(log, "a1", "success")
    assert err.value.outcome_seq == first and err.value.action_id == "a1"
    engine = AdviceEngine(log)
    assert engine.advise(["x"], ["g1"]).scored[0]["outcomes"] == 1


def test_closing_an_unknown_attempt_is_an_error(log: EventLog) -> None:
    with pytest.raises(UnknownAttemptError, match="'nope'"):
        close_attempt(log, "nope", "success")
    assert list(log.replay()) == []


def test_an_attempt_closed_by_another_writer_counts_as_closed(log: EventLog) -> None:
    log.append(Attempt(id="a1", ts=T0, gene="g1"))
    seq = log.append(Outcome(id="a1-outcome", ts=T0, action_id="a1", status="failed"))
    with pytest.raises(AttemptAlreadyClosedError) as err:
        close_attempt(AdviceEngine(log), "a1", "success")
    assert err.value.outcome_seq == seq


@pytest.mark.parametrize(
    ("args", "match"),
    [(("", "success"), "action_id"), (("a", ""), "status"), (("a", "success", "x"), "score")],
)
def test_bad_close_arguments(log: EventLog, args: tuple[Any, ...], match: str) -> None:
    score = args[2] if len(args) > 2 else None
    with pytest.raises(InvalidInputError, match=match):
        close_attempt(log, args[0], args[1], score=score)


def test_long_action_ids_get_a_bounded_outcome_id() -> None:
    assert len(outcome_id("x" * 1000)) <= 256
    assert outcome_id("x" * 1000) != outcome_id("x" * 999)


def _close_in_child(path: str, barrier: Any, results: Any) -> None:
    with EventLog(path) as log:
        engine = AdviceEngine(log, use_cache=False)
        engine.state()  # both see the attempt open before either appends
        barrier.wait()
        try:
            close_attempt(engine, "a1", "success")
            results.put("closed")
        except AttemptAlreadyClosedError:
            results.put("already")


def test_two_processes_closing_at_once_count_once(tmp_path: Path) -> None:
    path = str(tmp_path / "store")
    with EventLog(path, create=True) as log:
        log.append(Attempt(id="a1", ts=T0, gene="g1"))
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_close_in_child, args=(path, barrier, results)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert sorted(results.get(timeout=5) for _ in procs) == ["already", "closed"]
    with EventLog(path) as log:
        assert sum(isinstance(e, Outcome) for e in log.replay()) == 1


def test_the_race_window_is_closed_by_the_outcome_id(log: EventLog) -> None:
    # Force the interleaving the two processes above race for: this caller saw the attempt
    # open, then another closed it before this caller's append.
    log.append(Attempt(id="a1", ts=T0, gene="g1"))
    slow = AdviceEngine(log, use_cache=False)
    seen_open = slow.state()
    first = close_attempt(AdviceEngine(log, use_cache=False), "a1", "success")
    slow.state = lambda as_of=None: seen_open  # type: ignore[method-assign]
    with pytest.raises(AttemptAlreadyClosedError, match="concurrently") as err:
        close_attempt(slow, "a1", "failed")
    assert err.value.outcome_seq == first
    assert sum(isinstance(e, Outcome) for e in log.replay()) == 1


# -- outcome inference ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("before", "after", "want"),
    [
        (True, False, ("success", 0.85, "error_cleared")),
        (True, True, ("failed", 0.2, "error_persisted")),
        (False, True, ("failed", 0.15, "new_error_appeared")),
        (False, False, ("success", 0.6, "stable_no_error")),
    ],
)
def test_signal_table(before: bool, after: bool, want: tuple[str, float, str]) -> None:
    got = infer_from_signals(before, after)
    assert (got.status, got.score, got.note) == want
    enhanced = infer_outcome(before, after)
    assert (enhanced.status, enhanced.score, enhanced.note) == (
        want[0],
        want[1],
        want[2] + "|heuristic_delta",
    )


def test_heuristic_deltas_are_clamped() -> None:
    got = infer_outcome(
        True,
        False,
        {"recent_error_count": 40, "scan_ms": 1000},
        {"recent_error_count": 0, "scan_ms": 100},
    )
    assert got.score == 1.0  # 0.85 + 0.12 + 0.06, clamped to 1
    worse = infer_outcome(
        False,
        True,
        {"recent_error_count": 0, "scan_ms": 100},
        {"recent_error_count": 3, "scan_ms": 150},
    )
    assert worse.status == "failed" and worse.score == pytest.approx(0.15 - 3 / 50 - 0.06)
    ignored = infer_outcome(False, False, {"recent_error_count": "4"}, {"recent_error_count": 1})
    assert ignored.score == 0.6  # only finite numbers count
    zero_scan = infer_outcome(False, False, {"scan_ms": 0}, {"scan_ms": 10})
    assert zero_scan.score == 0.6


def _ev(outcome: Any) -> str:
    return json.dumps({"type": "EvolutionEvent", "outcome": outcome})


def test_evolution_event_in_the_evidence_wins() -> None:
    tail = "\n".join([_ev({"status": "failed", "score": 0.1}), "noise", _ev({"status": "success"})])
    got = infer_outcome(True, True, None, {"evidence": {"recent_session_tail": tail}})
    assert (got.status, got.score, got.note) == ("success", 0.75, "evolutionevent_observed")
    today = _ev({"score": 0.3})
    got = infer_outcome(False, False, None, {"evidence": {"today_log_tail": today}})
    assert (got.status, got.score) == ("failed", 0.3)
    nothing = infer_outcome(False, False, None, {"evidence": {"today_log_tail": "no events"}})
    assert nothing.note == "stable_no_error|heuristic_delta"


def test_evolution_event_quirks() -> None:
    assert parse_evolution_event_outcome(_ev({"score": None})) is not None  # null reads as 0
    assert parse_evolution_event_outcome(_ev({"score": None})).score == 0.0  # type: ignore[union-attr]
    assert parse_evolution_event_outcome(_ev({"score": 7})).score == 1.0  # type: ignore[union-attr]
    assert parse_evolution_event_outcome(_ev({"status": "partial"})) is None
    assert parse_evolution_event_outcome(_ev([1])) is None
    old = _ev({"status": "success"})
    assert parse_evolution_event_outcome("\n".join([old] + ["x"] * 400)) is None  # last 400 only


@pytest.mark.parametrize(
    ("value", "want"),
    [
        (None, 0.0),
        (True, 1.0),
        ("", 0.0),
        (" 12 ", 12.0),
        ("0x1A", 26.0),
        ("1.", 1.0),
        ("abc", None),
        ([], 0.0),
        ([5], 5.0),
        ([1, 2], None),
        ({}, None),
        ("1_0", None),
    ],
)
def test_js_number_coercion(value: Any, want: float | None) -> None:
    got = js_to_number(value)
    assert (got != got) if want is None else got == want
