"""Honest credit: the real hook, fed Claude Code's payload sequences, credits a task only on
evidence, once, with the session's signals; and the capture controls (pause, forget, status)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from evolog.eventlog import Attempt, ChildStep, Constraint, EventLog, Node, Outcome, Step
from evolog.projections.graph._memgraph import load_memgraph

from evolog import Memory

PROMPT = "deploy the web service to production please"


def hook(store: Path, payload: dict[str, Any]) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "evolog", "--store", str(store), "hook", "claude-code"],
        input=json.dumps(payload).encode(),
        capture_output=True,
        timeout=60,
        # A loaded machine must not cut recall short (its bound is a share of this).
        env={**os.environ, "EVOLOG_HOOK_LOCK_TIMEOUT": "20"},
    )
    assert result.returncode == 0 and result.stderr == b"", result.stderr
    return result.stdout.decode()


def cli(store: Path, *args: str, cwd: Path | None = None) -> tuple[int, Any, str]:
    result = subprocess.run(
        [sys.executable, "-m", "evolog", "--store", str(store), *args],
        capture_output=True,
        timeout=60,
        cwd=cwd,
    )
    out = result.stdout.decode()
    return result.returncode, json.loads(out) if out.strip() else None, result.stderr.decode()


def events(store: Path) -> list[Any]:
    with EventLog(store) as log:
        return list(log.replay())


def outcomes(store: Path) -> list[Outcome]:
    return [e for e in events(store) if isinstance(e, Outcome)]


def pre(tid: str, tool: str = "Bash", command: str = "./bluegreen.sh") -> dict[str, Any]:
    return {"hook_event_name": "PreToolUse", "tool_name": tool, "tool_use_id": tid,
            "tool_input": {"command": command}}  # fmt: skip


def post(tid: str, ok: bool, tool: str = "Bash", command: str = "./bluegreen.sh",
         **extra: Any) -> dict[str, Any]:  # fmt: skip
    response = (
        {"stdout": "done", "exit_code": 0}
        if ok
        else {"stdout": "", "stderr": "ModuleNotFoundError: No module named 'x'", "exit_code": 1}
    )
    return {"hook_event_name": "PostToolUse", "tool_name": tool, "tool_use_id": tid,
            "tool_input": {"command": command}, "tool_response": response, **extra}  # fmt: skip


def turn(store: Path, sid: str, *payloads: dict[str, Any], cwd: str = "/src/proj") -> str:
    """One prompt, the payloads, and whatever the first answer injected."""
    base = {"session_id": sid, "cwd": cwd}
    injected = hook(store, {**base, "hook_event_name": "UserPromptSubmit", "prompt": PROMPT})
    for p in payloads:
        hook(store, {**base, **p})
    return injected


def stop(sid: str) -> dict[str, Any]:
    return {"hook_event_name": "Stop", "stop_hook_active": False, "session_id": sid}


def energy(store: Path) -> float:
    with Memory(store) as mem:
        entry = mem.ledger().entry("n-deploy")
        assert entry is not None
        return float(entry.energy)


def tries(store: Path) -> tuple[int, int]:
    with EventLog(store) as log:
        got: tuple[int, int] = load_memgraph(log).outcomes("n-deploy")
        return got


@pytest.fixture
def store(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    with Memory(root) as mem:
        mem.append_many(
            [
                Node(
                    cycle="c1",
                    node="n-deploy",
                    goal="deploy the web service to production",
                    summary="blue green switch",
                    confidence=0.8,
                ),
                ChildStep(cycle="c1", node="n-deploy", index=0, action="run ./bluegreen.sh"),
                ChildStep(cycle="c1", node="n-deploy", index=1, action="curl /health"),
            ]
        )
    return root


def test_a_tool_denied_at_the_permission_prompt_is_no_success(store: Path) -> None:
    # Claude Code's permission prompt refused the call: only PreToolUse fired.
    before = energy(store)
    turn(store, "d1", pre("t1"), stop("d1"))
    (outcome,) = outcomes(store)
    assert outcome.status == "denied" and outcome.delta is None
    assert "Bash" in (outcome.note or "") and outcome.decided_by == ["n-deploy"]
    (step,) = [e for e in events(store) if isinstance(e, Step)]
    assert step.ok is False and step.tool == "Bash" and "never ran" in (step.error or "")
    assert energy(store) == before and tries(store) == (0, 0)


def test_permission_denied_event_is_recorded_as_denied(store: Path) -> None:
    denied = {"hook_event_name": "PermissionDenied", "tool_name": "Bash", "tool_use_id": "t1",
              "tool_input": {"command": "rm -rf /"}, "reason": "auto mode classifier"}  # fmt: skip
    turn(store, "d2", pre("t1"), denied, stop("d2"))
    (outcome,) = outcomes(store)
    assert outcome.status == "denied" and outcome.delta is None
    (step,) = [e for e in events(store) if isinstance(e, Step)]
    assert step.ok is False and "permission denied: auto mode classifier" in (step.error or "")
    assert "tool_denied:Bash" in outcome.signals
    assert tries(store) == (0, 0)


def test_only_failed_mcp_calls_is_a_failure(store: Path) -> None:
    failing = {"content": [{"type": "text", "text": "Error: connection refused"}], "isError": True,
               "is_error": True}  # fmt: skip
    calls = []
    for i in range(2):
        call = post(f"m{i}", True, tool="mcp__db__query")
        calls += [pre(f"m{i}", tool="mcp__db__query"), {**call, "tool_response": failing}]
    before = energy(store)
    turn(store, "f1", *calls, stop("f1"))
    (outcome,) = outcomes(store)
    assert outcome.status == "failed" and outcome.delta == -1.0
    assert energy(store) < before and tries(store) == (0, 1)


def test_a_text_only_turn_is_unknown_and_not_credited(store: Path) -> None:
    before = energy(store)
    turn(store, "u1", stop("u1"))
    (outcome,) = outcomes(store)
    assert outcome.status == "unknown" and outcome.delta is None
    assert energy(store) == before and tries(store) == (0, 0)


def test_interrupt_and_api_error_are_recorded_as_such(store: Path) -> None:
    interrupted = {"hook_event_name": "PostToolUseFailure", "tool_name": "Bash",
                   "tool_use_id": "t1", "tool_input": {"command": "sleep 99"},
                   "error": "Interrupted by user", "is_interrupt": True}  # fmt: skip
    turn(store, "i1", pre("t1"), interrupted, stop("i1"))
    turn(store, "a1", pre("t2"), post("t2", True),
         {"hook_event_name": "StopFailure", "error": "rate_limit"})  # fmt: skip
    got = {o.session: (o.status, o.delta) for o in outcomes(store)}
    assert got == {"i1": ("interrupted", None), "a1": ("api_error", None)}
    assert "rate_limit" in (next(o for o in outcomes(store) if o.session == "a1").note or "")
    assert tries(store) == (0, 0)


def test_success_needs_a_tool_that_ran_and_keeps_claude_codes_duration(store: Path) -> None:
    turn(store, "s1", pre("t1"), post("t1", True, duration_ms=14), stop("s1"))
    (outcome,) = outcomes(store)
    assert outcome.status == "success" and outcome.delta == 1.0
    (step,) = [e for e in events(store) if isinstance(e, Step)]
    assert step.duration_ms == 14.0
    assert tries(store) == (1, 0)


def test_a_reproduction_before_the_fix_is_no_constraint_and_signals_are_kept(
    store: Path,
) -> None:
    repro = "python3 -c 'import nonexistent_mod'"
    turn(store, "r1", pre("t1", command=repro), post("t1", False, command=repro),
         pre("t2"), post("t2", True), stop("r1"))  # fmt: skip
    (outcome,) = outcomes(store)
    assert outcome.status == "success"
    assert not [e for e in events(store) if isinstance(e, Constraint)]
    # The outcome carries what the session observed: its edge has a key, not "(none)".
    assert "log_error" in outcome.signals and "tool_error:Bash" in outcome.signals
    assert outcome.key != "" and outcome.error_signature
    # The next attempt of the session is opened with those signals.
    turn(store, "r1", pre("t3"), post("t3", True), stop("r1"))
    attempts = [e for e in events(store) if isinstance(e, Attempt)]
    assert "log_error" in attempts[1].signals and attempts[1].key != ""
    # A failed attempt keeps the failed call as a constraint of the followed strategy.
    turn(store, "r2", pre("t4", command=repro), post("t4", False, command=repro), stop("r2"))
    (constraint,) = [e for e in events(store) if isinstance(e, Constraint)]
    assert constraint.node == "n-deploy" and constraint.session == "r2"


# -- one task, one outcome: hooks and MCP together --------------------------------------
def _mcp(store: Path, cwd: Path, calls: list[dict[str, Any]]) -> list[Any]:
    pytest.importorskip("mcp", reason="the server extra (evolog[server]) is not installed")
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "evolog", "--store", str(store), "mcp"],
        env=dict(os.environ),
        cwd=str(cwd),
    )

    async def run() -> list[Any]:
        out = []
        async with Client(params) as c:
            for args in calls:
                r = await c.call_tool("record_outcome", args)
                out.append(json.loads(r.content[0].text))  # type: ignore[union-attr]
        return out

    return asyncio.run(run())


def test_hooks_and_mcp_together_credit_a_task_once(store: Path, tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    before = energy(store)
    injected = turn(store, "m1", pre("t1"), post("t1", True), cwd=str(proj))
    context = json.loads(injected)["hookSpecificOutput"]["additionalContext"]
    (attempt,) = [e for e in events(store) if isinstance(e, Attempt)]
    assert f"attempt {attempt.action_id}" in context  # the block names the attempt
    # The model reports through MCP, once with the named id, once with none (it joins too).
    said = _mcp(store, proj, [
        {"status": "success", "action_id": attempt.action_id, "note": "deployed"},
        {"status": "success", "note": "deployed"},
    ])  # fmt: skip
    assert [s["joined"] for s in said] == [attempt.action_id] * 2
    assert outcomes(store) == []  # written once, by the hook, at the turn's end
    hook(store, stop("m1"))
    (outcome,) = outcomes(store)
    assert outcome.action_id == attempt.action_id and outcome.status == "success"
    assert "reported over MCP: success (deployed)" in (outcome.note or "")
    assert energy(store) > before and tries(store) == (1, 0)
    # A report after the turn closed is a duplicate of the hook's outcome, not a second one.
    (late,) = _mcp(store, proj, [{"status": "success", "action_id": attempt.action_id}])
    assert late["duplicate"] is True and late["credited"] == []
    assert len(outcomes(store)) == 1 and tries(store) == (1, 0)


def test_an_mcp_report_cannot_turn_a_denied_task_into_a_success(
    store: Path, tmp_path: Path
) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    turn(store, "m2", pre("t1"), cwd=str(proj))
    (said,) = _mcp(store, proj, [{"status": "success"}])
    assert said["joined"]
    hook(store, stop("m2"))
    (outcome,) = outcomes(store)
    assert outcome.status == "denied" and outcome.delta is None and tries(store) == (0, 0)


def test_twelve_sessions_credit_exactly_the_tasks_that_succeeded(
    store: Path, tmp_path: Path
) -> None:
    """The issue's run: successes, denials, failed MCP calls, text-only turns, some also
    reported over MCP; the node counts 5 successes for the 5 tasks that succeeded."""
    proj = tmp_path / "proj"
    proj.mkdir()
    plans: list[tuple[str, list[dict[str, Any]]]] = []
    for i in range(5):
        plans.append(("success", [pre(f"s{i}"), post(f"s{i}", True)]))
    for i in range(3):
        plans.append(("denied", [pre(f"d{i}")]))
    for i in range(2):
        plans.append(("failed", [pre(f"f{i}"), post(f"f{i}", False)]))
    plans += [("unknown", []), ("unknown", [])]
    for n, (want, payloads) in enumerate(plans):
        sid = f"run-{n}"
        turn(store, sid, *payloads, cwd=str(proj))
        if n % 2 == 0:  # half of them also say "success" over MCP
            (said,) = _mcp(store, proj, [{"status": "success"}])
            assert said["joined"]
        hook(store, {**stop(sid), "cwd": str(proj)})
        assert outcomes(store)[-1].status == want, (n, want)
    assert len(outcomes(store)) == 12
    assert tries(store) == (5, 2)


# -- the controls: pause / resume, forget, status ---------------------------------------
def test_pause_and_resume_a_project_and_a_session(store: Path, tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    (proj / "sub").mkdir(parents=True)
    code, doc, _ = cli(store, "pause", cwd=proj)
    assert code == 0 and doc["projects"] == [str(proj)]
    count = len(events(store))
    assert turn(store, "p1", pre("t1"), post("t1", True), stop("p1"), cwd=str(proj / "sub")) == ""
    assert len(events(store)) == count  # nothing recorded, nothing injected
    turn(store, "other", stop("other"), cwd=str(tmp_path))  # another project still records
    assert [o.session for o in outcomes(store)] == ["other"]
    assert cli(store, "resume", "--project", str(proj))[0] == 0
    code, doc, _ = cli(store, "pause", "--session", "p2")
    assert code == 0 and doc["sessions"] == ["p2"] and doc["projects"] == []
    # A session paused mid-turn: its open attempt is closed unknown, no credit.
    hook(store, {"session_id": "p3", "cwd": str(proj), "hook_event_name": "UserPromptSubmit",
                 "prompt": PROMPT})  # fmt: skip
    assert cli(store, "pause", "--session", "p3")[0] == 0
    hook(store, {**stop("p3"), "cwd": str(proj)})
    assert [(o.session, o.status, o.delta) for o in outcomes(store)][-1] == ("p3", "unknown", None)
    code, _, err = cli(store, "resume", "--session", "nope")
    assert code == 2 and err.count("\n") == 1 and "'nope' is not paused" in err


def test_forget_an_item_and_a_session(store: Path) -> None:
    turn(store, "g1", pre("t1"), post("t1", True), stop("g1"))
    assert tries(store) == (1, 0)
    code, doc, _ = cli(store, "forget", "--session", "g1")
    assert code == 0 and doc["forgotten_events"] >= 4
    # History stays; the ledger and graph no longer count the session's outcome.
    assert len(outcomes(store)) == 1 and tries(store) == (0, 0)
    code, doc, _ = cli(store, "forget", "n-deploy")
    assert code == 0 and doc["kind"] == "strategy"
    with Memory(store) as mem:
        assert "n-deploy" not in mem.recall(PROMPT, record=False).text
    code, _, err = cli(store, "forget", "n-deploy")
    assert code == 2 and "no live memory item 'n-deploy'" in err
    with Memory(store) as mem:
        note = mem.remember("deploy", "Deploy the web service with the canary script first.")
        assert "canary" in mem.recall("deploy the web service canary", record=False).text
    code, doc, _ = cli(store, "forget", note.item, "--reason", "wrong")
    assert code == 0 and doc["kind"] == "note"
    with Memory(store) as mem:
        assert "canary" not in mem.recall("deploy the web service canary", record=False).text
    code, _, err = cli(store, "forget", "--session", "never")
    assert code == 2 and "recorded no events" in err


def test_status_reports_store_injections_and_open_attempts(store: Path) -> None:
    injected = turn(store, "st1", pre("t1"))
    context = json.loads(injected)["hookSpecificOutput"]["additionalContext"]
    code, doc, _ = cli(store, "status")
    assert code == 0 and doc["items"] == {"strategy": 1} and doc["kinds"]["attempt"] == 1
    (last,) = doc["injected"]["recent"]
    assert last["chars"] == len(context) and last["est_tokens"] == -(-len(context) // 4)
    assert last["session"] == "st1" and last["items"] == 1
    (open_attempt,) = doc["capture"]["open_attempts"]
    assert open_attempt["session"] == "st1" and open_attempt["action_id"] == last["action_id"]
    assert doc["worker"]["running"] is False


def test_a_huge_mcp_report_cannot_push_the_session_state_past_its_cap(
    store: Path, tmp_path: Path
) -> None:
    from evolog.hook._credit import Report, join_report

    turn(store, "big", pre("t1"), post("t1", True), cwd=str(tmp_path))
    report = Report("failed", note="x" * (4 << 20), supported_by=[f"i{n}" for n in range(10**4)])
    assert join_report(str(store), "", str(tmp_path), report) is not None
    (state,) = (store / "hooks" / "claude-code").iterdir()
    assert state.stat().st_size < 64 * 1024
    hook(store, stop("big"))
    (outcome,) = outcomes(store)
    assert outcome.status == "failed" and len(outcome.supported_by) <= 64
