"""`evolog hook claude-code`: real processes reading real payloads; it must never fail."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from evolog.eventlog import EventLog, Outcome, Signal, Step


def hook(store: Path, payload: Any, raw: bytes | None = None) -> subprocess.CompletedProcess[str]:
    data = raw if raw is not None else json.dumps(payload).encode()
    result = subprocess.run(
        [sys.executable, "-m", "evolog", "--store", str(store), "hook", "claude-code"],
        input=data,
        capture_output=True,
        timeout=60,
    )
    return subprocess.CompletedProcess(
        result.args, result.returncode, result.stdout.decode(), result.stderr.decode()
    )


def events(store: Path) -> list[Any]:
    with EventLog(store) as log:
        return list(log.replay())


def session(store: Path, sid: str, tool_ok: bool) -> None:
    response = (
        {"stdout": "3 passed", "exit_code": 0}
        if tool_ok
        else {"stdout": "", "stderr": "E AssertionError in /src/app.py:12", "exit_code": 1}
    )
    for payload in (
        {"hook_event_name": "SessionStart", "source": "startup"},
        {"hook_event_name": "UserPromptSubmit", "prompt": "make the tests pass"},
        {
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_use_id": "t1",
            "tool_input": {"command": "pytest -q"},
        },
        {
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_use_id": "t1",
            "tool_input": {"command": "pytest -q"},
            "tool_response": response,
        },
        {"hook_event_name": "Stop", "stop_hook_active": False},
    ):
        result = hook(store, {"session_id": sid, **payload})
        assert result.returncode == 0 and result.stderr == ""


def test_a_session_becomes_attempt_steps_and_outcome(tmp_path: Path) -> None:
    store = tmp_path / "s"
    session(store, "sess-1", tool_ok=False)
    kinds = [type(e).__name__ for e in events(store)]
    assert kinds == ["Signal", "Attempt", "Step", "Signal", "Outcome"]
    _, attempt, step, error, outcome = events(store)
    assert attempt.task == "make the tests pass" and attempt.session == "sess-1"
    assert isinstance(step, Step) and step.action_id == attempt.action_id
    assert step.ok is False and step.tool == "Bash" and step.action == "Bash pytest -q"
    assert step.duration_ms is not None and step.duration_ms >= 0
    assert isinstance(error, Signal) and "log_error" in error.signals
    assert error.error_signature == "e assertionerror in <path>"
    assert isinstance(outcome, Outcome) and outcome.status == "failed"
    assert outcome.action_id == attempt.action_id


def test_successful_tool_gives_success_and_no_error_signal(tmp_path: Path) -> None:
    store = tmp_path / "s"
    session(store, "sess-2", tool_ok=True)
    evs = events(store)
    assert [type(e).__name__ for e in evs] == ["Signal", "Attempt", "Step", "Outcome"]
    assert evs[-1].status == "success" and evs[2].ok is True


def test_bad_payloads_exit_zero_and_are_kept(tmp_path: Path) -> None:
    store = tmp_path / "s"
    for raw in (b"not json", b"[1, 2]", b"\xff\xfe", b""):
        result = hook(store, None, raw=raw)
        assert result.returncode == 0
        assert result.stderr.count("\n") == 1 and "dead-letter" in result.stderr
    lines = (store / "dead-letter.ndjson").read_text().splitlines()
    assert len(lines) == 4
    assert json.loads(lines[0])["payload"] == "not json"


def test_unwritable_store_still_exits_zero(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = hook(blocker / "store", {"session_id": "s", "hook_event_name": "SessionStart"})
    assert result.returncode == 0 and result.stderr.startswith("evolog hook: not recorded")


def test_unknown_hook_events_record_nothing(tmp_path: Path) -> None:
    store = tmp_path / "s"
    assert hook(store, {"session_id": "s", "hook_event_name": "Notification"}).returncode == 0
    assert events(store) == []


def test_parallel_tool_hooks_keep_one_attempt_and_distinct_steps(tmp_path: Path) -> None:
    store = tmp_path / "s"
    hook(store, {"session_id": "p", "hook_event_name": "UserPromptSubmit", "prompt": "go"})

    def post(i: int) -> int:
        return hook(
            store,
            {
                "session_id": "p",
                "hook_event_name": "PostToolUse",
                "tool_name": "Read",
                "tool_use_id": f"t{i}",
                "tool_input": {"file_path": f"/f{i}"},
                "tool_response": {"content": "ok"},
            },
        ).returncode

    with ThreadPoolExecutor(max_workers=6) as pool:
        assert list(pool.map(post, range(12))) == [0] * 12
    steps = [e for e in events(store) if isinstance(e, Step)]
    assert sorted(s.index for s in steps) == list(range(12))
    assert len({s.action_id for s in steps}) == 1


def test_hook_does_not_load_pyarrow_or_duckdb(tmp_path: Path) -> None:
    code = (
        "import sys, io; sys.argv=['evolog','--store',sys.argv[1],'hook','claude-code'];"
        'sys.stdin=io.TextIOWrapper(io.BytesIO(b\'{"session_id":"s","hook_event_name":'
        '"UserPromptSubmit","prompt":"x"}\'));'
        "from evolog.cli._main import main; main();"
        "bad=[m for m in sys.modules if m.split('.')[0] in "
        "('pyarrow','duckdb','usearch','anthropic','numpy')]; print(bad)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "s")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("cmd", [["append", '{"kind":"signal","signals":["a"]}']])
def test_cli_append_does_not_load_heavy_modules(tmp_path: Path, cmd: list[str]) -> None:
    store = str(tmp_path / "s")
    subprocess.run([sys.executable, "-m", "evolog", "init", store], check=True, capture_output=True)
    code = (
        "import sys; from evolog.cli._main import main; main(sys.argv[1:]);"
        "bad=[m for m in sys.modules if m.split('.')[0] in "
        "('pyarrow','duckdb','usearch','anthropic','numpy')]; print(bad, file=sys.stderr)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, "--store", store, *cmd],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ),
    )
    assert out.stderr.strip() == "[]"
