"""What an event must hold beyond its types, refused the same way at every entry point.

Event times past year 9999 once made every later query fail with OverflowError; outcomes
with no attempt or a misspelt status, and steps with a negative index, were stored forever.
A re-append of a known id with other content answered ``duplicate`` and said nothing more.
"""

from __future__ import annotations

import json
from pathlib import Path

import evolog.eventlog as eventlog
import pytest
from _eventlog_util import hash_tree
from evolog.eventlog import (
    STATUSES,
    TS_MAX,
    Attempt,
    EventLog,
    InvalidEventError,
    Note,
    Outcome,
    Signal,
    Step,
    from_builtins,
    from_json,
)

BAD_EVENTS = [
    (Note(ts=TS_MAX + 1), "ts", "9999-12-31"),
    (Note(ts=253402300800000000), "ts", "from 0 to"),
    (Note(ts=2**63 - 1), "ts", "from 0 to"),
    (Note(ts=-1), "ts", "from 0 to"),
    (Outcome(), "action_id", "expected what the outcome is about"),
    (Outcome(status="success", score=1.0), "action_id", "got none of them"),
    (Outcome(action_id="a", status="sucess"), "status", "got 'sucess'"),
    (Outcome(action_id="a"), "status", "or none with a measured delta"),
    (Outcome(action_id="a", status="SUCCESS"), "status", "expected one of"),
    (Step(action_id="a", index=-1), "index", "got -1"),
]


@pytest.mark.parametrize(("event", "field", "text"), BAD_EVENTS)
def test_bad_events_are_refused_by_every_append(
    tmp_path: Path, event: eventlog.Event, field: str, text: str
) -> None:
    with EventLog(tmp_path / "s", create=True) as log:
        log.append(Note(id="before", text="kept"))
        before = hash_tree(tmp_path / "s")
        for call in (
            lambda: log.append(event),
            lambda: log.append_many([Note(), event]),
            lambda: log.append_receipts([event], "line ", validated=True),
        ):
            with pytest.raises(InvalidEventError) as info:
                call()
            assert info.value.field == field
            assert text in str(info.value) and "\n" not in str(info.value)
        assert hash_tree(tmp_path / "s") == before
        assert [e.id for e in log.replay()] == ["before"]


def test_the_edges_of_the_ranges_are_accepted(tmp_path: Path) -> None:
    with EventLog(tmp_path / "s", create=True) as log:
        log.append_many(
            [
                Note(id="last", ts=TS_MAX),
                Note(id="first", ts=1),
                Step(id="s", action_id="a", index=0),
                Outcome(id="m", action_id="a", delta=-2.5),  # a measured outcome: no status
                *[Outcome(id=s, action_id="a", status=s) for s in sorted(STATUSES)],
            ]
        )
        log.seal()
        assert [e.ts for e in log.replay(kinds=["note"])] == [TS_MAX, 1]


def test_json_and_builtins_refuse_times_outside_the_range() -> None:
    for ts in ("10000-01-01T00:00:00Z", "0001-01-01T00:00:00Z", "1969-12-31T23:59:59Z"):
        with pytest.raises(InvalidEventError) as info:
            from_json(json.dumps({"kind": "note", "ts": ts}), "line 3")
        assert str(info.value).startswith("line 3: ") and info.value.field == "ts"
    with pytest.raises(InvalidEventError, match="from 0 to"):
        from_builtins({"kind": "note", "ts": "0001-01-01T00:00:00"}, "hook")
    assert from_json('{"kind":"note","ts":"9999-12-31T23:59:59.999999Z"}').ts == TS_MAX


def test_deep_nesting_is_one_line_not_a_recursion_error(tmp_path: Path) -> None:
    deep = "[" * 5000 + "]" * 5000
    for text in (
        f'{{"kind":"note","tags":{deep}}}',
        f'{{"kind":"signal","observed":{{"a":{deep}}}}}',
    ):
        with pytest.raises(InvalidEventError, match="nested"):
            from_json(text, "argument")
    nested: dict[str, object] = {}
    cur = nested
    for _ in range(5000):
        cur["a"] = {}
        cur = cur["a"]  # type: ignore[assignment]
    event = from_builtins({"kind": "signal", "observed": nested}, "hook")
    with EventLog(tmp_path / "s", create=True) as log:
        for call in (lambda: log.append(event), lambda: log.append_many([Note(), event])):
            with pytest.raises(InvalidEventError, match="field 'observed'"):
                call()
        assert list(log.replay()) == []


def test_a_duplicate_with_other_content_is_told_apart(tmp_path: Path) -> None:
    with EventLog(tmp_path / "s", create=True) as log:
        first = [
            Attempt(id="a", gene="g", signals=["log_error"]),
            Note(id="n", text="hi"),
            Note(id="t", ts=5, text="timed"),
        ]
        log.append_many(first)
        for _ in range(2):  # the stored events in the WAL, then sealed
            again = [
                Attempt(id="a", gene="g", signals=["log_error"]),  # key and action id derived
                Attempt(id="a", gene="other", signals=["log_error"]),
                Note(id="n", text="hi"),  # ts 0 ("now") matches the stored time
                Note(id="n", text="changed"),
                Note(id="t", ts=6, text="timed"),
                Signal(id="n"),  # another kind under the same id
            ]
            receipts = log.append_receipts(again)
            assert all(r.duplicate for r in receipts)
            pairs = [(e, r.seq) for e, r in zip(again, receipts, strict=True)]
            assert log.stored_differs(pairs) == [False, True, False, True, True, True]
            log.seal()
        assert len(list(log.replay())) == 3


def test_imported_evolver_statuses_are_kept_losslessly(tmp_path: Path) -> None:
    from evolog.advice import import_evolver, to_evolver

    lines = [
        {"type": "MemoryGraphEvent", "kind": "outcome", "id": "o1", "ts": "2026-01-01T00:00:00Z",
         "action": {"id": "a1"}, "outcome": {"status": "partial", "score": 0.5}},
        {"type": "MemoryGraphEvent", "kind": "outcome", "id": "o2", "ts": "2026-01-01T00:00:01Z",
         "action": {"id": "a2"}, "outcome": {"status": "weird-status", "score": 0.1}},
        {"type": "MemoryGraphEvent", "kind": "outcome", "id": "o3", "ts": "2026-01-01T00:00:02Z",
         "signal": {"key": "(none)", "signals": []}, "outcome": {"score": 0.9}},
    ]  # fmt: skip
    src = tmp_path / "memory_graph.jsonl"
    src.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with EventLog(tmp_path / "s", create=True) as log:
        import_evolver(log, src)
        stored = {e.id: e for e in log.replay()}
        assert [stored[i].status for i in ("o1", "o2", "o3")] == ["partial", "unknown", "unknown"]  # type: ignore[attr-defined]
        back = [to_evolver(e) for e in log.replay()]
    assert [json.dumps(x) for x in back] == [json.dumps(x) for x in lines]


def test_every_status_the_hook_writes_is_accepted(tmp_path: Path) -> None:
    import subprocess
    import sys

    from _eventlog_util import REPO

    store = tmp_path / "s"
    for name in ("UserPromptSubmit", "UserPromptSubmit", "SessionEnd"):
        payload = {"session_id": "s1", "hook_event_name": name, "prompt": "p", "reason": "exit"}
        proc = subprocess.run(
            [sys.executable, "-m", "evolog", "--store", str(store), "hook", "claude-code"],
            input=json.dumps(payload).encode(), capture_output=True, cwd=REPO, timeout=60,
        )  # fmt: skip
        assert proc.returncode == 0 and proc.stderr == b"", proc.stderr
    with EventLog(store) as log:
        statuses = [e.status for e in log.replay(kinds=["outcome"])]  # type: ignore[attr-defined]
    assert statuses == ["interrupted", "abandoned"]
    assert not (store / "dead-letter.ndjson").exists()
