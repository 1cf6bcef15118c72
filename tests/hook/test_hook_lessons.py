"""Lessons end to end: written over MCP (the real SDK client against ``evolog mcp``) or by the
real hook's opt-in reflection at ``Stop``, injected by the hook for a related prompt, credited
by the turn's outcome, and buried in the ledger by a run of failures, after which no recall
shows them."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from evolog.eventlog import Attempt, EventLog, Lifecycle, Note, Outcome
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from evolog import Memory

LESSON = "Deploy the web service with the blue green script, then check the health endpoint"
PROMPT = "deploy the web service to production please"


def hook(store: Path, payload: dict[str, Any]) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "evolog", "--store", str(store), "hook", "claude-code"],
        input=json.dumps(payload).encode(),
        capture_output=True,
        timeout=60,
        env={**os.environ, "EVOLOG_HOOK_LOCK_TIMEOUT": "20"},
    )
    assert result.returncode == 0 and result.stderr == b"", result.stderr
    return result.stdout.decode()


def context(out: str) -> str:
    return str(json.loads(out)["hookSpecificOutput"]["additionalContext"]) if out else ""


def bash(tid: str, command: str, ok: bool, stderr: str = "") -> dict[str, Any]:
    response = (
        {"stdout": "RESULT-TEXT-OF-THE-TOOL", "exit_code": 0}
        if ok
        else {"stdout": "", "stderr": stderr or "error: exit status 1", "exit_code": 1}
    )
    return {"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": tid,
            "tool_input": {"command": command}, "tool_response": response}  # fmt: skip


def turn(store: Path, sid: str, prompt: str, *calls: dict[str, Any]) -> str:
    """A prompt, its tool calls and Stop; what the prompt injected."""
    base = {"session_id": sid, "cwd": "/src/proj"}
    out = hook(store, {**base, "hook_event_name": "UserPromptSubmit", "prompt": prompt})
    for call in calls:
        hook(store, {**base, **call})
    hook(store, {**base, "hook_event_name": "Stop", "stop_hook_active": False})
    return context(out)


def events(store: Path) -> list[Any]:
    with EventLog(store) as log:
        return list(log.replay())


def mcp_calls(store: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "evolog", "--store", str(store), "mcp"],
        env=dict(os.environ),
        cwd=str(store.parent),
    )

    async def run() -> list[Any]:
        out = []
        async with Client(params) as c:
            for name, args in calls:
                r = await c.call_tool(name, args)
                text = r.content[0].text  # type: ignore[union-attr]
                assert not r.is_error, text
                out.append(json.loads(text))
        return out

    return asyncio.run(run())


def entry(store: Path, item: str) -> Any:
    with Memory(store) as mem:
        return mem.ledger().entry(item)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    with Memory(root) as mem:
        mem.remember("backbone", "The user prefers short answers.")
    return root


def test_an_mcp_lesson_is_injected_credited_and_buried_through_the_hook(store: Path) -> None:
    ((wrote,),) = [mcp_calls(store, [("remember", {"branch": "deploy", "text": LESSON,
                                                   "kind": "lesson"})])]  # fmt: skip
    assert wrote["kind"] == "lesson" and not wrote["superseded"]
    lesson = wrote["item"]
    assert entry(store, lesson).energy == 1.0  # born with its note

    shown = turn(store, "s1", PROMPT, bash("t1", "./bluegreen.sh", True))
    assert "- Lesson [" in shown and "(no recorded tries) by agent" in shown
    (attempt,) = [e for e in events(store) if isinstance(e, Attempt)]
    assert attempt.decided_by == [lesson]
    (outcome,) = [e for e in events(store) if isinstance(e, Outcome)]
    assert (outcome.status, outcome.decided_by, outcome.delta) == ("success", [lesson], 1.0)
    assert entry(store, lesson).energy > 1.0

    for n in range(2, 6):
        shown = turn(store, f"s{n}", PROMPT, bash("t1", "./bluegreen.sh", False))
        assert f"(worked 1 of {n - 1} tries) by agent" in shown
    dead = entry(store, lesson)
    assert not dead.alive and dead.cause == "executed"
    # Dead: the next related prompt is shown nothing of it, nor is an MCP recall.
    assert "Lesson [" not in turn(store, "s9", PROMPT, bash("t1", "./bluegreen.sh", True))
    (recalled,) = mcp_calls(store, [("recall", {"query": PROMPT})])
    assert lesson not in [i["id"] for i in recalled["items"]]


def test_mcp_recall_and_record_outcome_credit_a_lesson_until_it_dies(store: Path) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("remember", {"branch": "deploy", "text": LESSON, "kind": "strategy"})
    ]
    for n in range(3):
        calls.append(("recall", {"query": PROMPT, "action_id": f"task-{n}"}))
        calls.append(("record_outcome", {"status": "failed", "action_id": f"task-{n}"}))
    calls.append(("recall", {"query": PROMPT}))
    got = mcp_calls(store, calls)
    lesson = got[0]["item"]
    assert got[0]["kind"] == "lesson"
    assert [i["id"] for i in got[1]["items"]] == [lesson]
    assert "(no recorded tries) by agent" in got[1]["text"]
    assert "(worked 0 of 2 tries)" in got[5]["text"]
    assert lesson not in [i["id"] for i in got[-1]["items"]]
    dead = entry(store, lesson)
    assert not dead.alive and dead.uses == 3


def _lessons(store: Path) -> list[Note]:
    return [e for e in events(store) if isinstance(e, Note) and e.lesson]


RAW = (
    'Traceback (most recent call last):\n  File "run.py", line 3\n'
    "ModuleNotFoundError: No module named 'lark'\nTOOL-OUTPUT-MARKER printed by the tool\n"
)


def test_reflection_at_stop_is_opt_in_and_writes_a_lesson_from_the_trace(store: Path) -> None:
    task = "run the unit tests of the parser package"
    fail = bash("t1", "pytest tests/parser", False, RAW)
    fix = bash("t2", "uv run pytest tests/parser", True)
    turn(store, "r1", task, fail, fix)
    assert _lessons(store) == []  # off by default
    (store / "memory.json").write_text(json.dumps({"hook": {"reflect_lessons": True}}))
    # A failure never overcome, and a success with no failure, teach nothing.
    turn(store, "r2", task, fix, fail)
    turn(store, "r3", task, fix)
    assert _lessons(store) == []

    turn(store, "r4", task, fail, bash("t2", "ls", True), fix)
    (note,) = _lessons(store)
    (outcome,) = [e for e in events(store) if isinstance(e, Outcome) and e.session == "r4"]
    assert note.id == f"lesson:{outcome.action_id}" and outcome.status == "success"
    assert (note.author, note.session, note.branch) == ("reflection", "r4", "lessons")
    assert note.text.startswith(f"{task}: after Bash pytest tests/parser failed (")
    assert "No module named 'lark'" in note.text
    assert note.text.endswith(", Bash uv run pytest tests/parser worked.")
    # The error's signature only: no tool output, no traceback lines.
    assert "TOOL-OUTPUT-MARKER" not in note.text and "RESULT-TEXT" not in note.text
    assert "run.py" not in note.text
    births = [e for e in events(store) if isinstance(e, Lifecycle)]
    assert [(b.entry, b.op) for b in births] == [(note.id, "birth")]

    # The same lesson again supersedes it (one item, one ledger entry); the task that
    # taught it again was shown it, and succeeded ...
    assert "(no recorded tries) by reflection in session r4" in turn(store, "r5", task, fail, fix)
    assert len(_lessons(store)) == 2 and _lessons(store)[1].item == note.id
    assert len([e for e in events(store) if isinstance(e, Lifecycle)]) == 1
    # ... and a related task is shown it, with its provenance, and credits it.
    shown = turn(store, "r6", "run the parser unit tests again", fix)
    assert "- Lesson [" in shown and "by reflection in session r5" in shown
    attempt = [e for e in events(store) if isinstance(e, Attempt)][-1]
    assert attempt.decided_by == [note.id]
    with Memory(store) as mem:
        view = mem.ledger().entry(note.id)
        assert view is not None and view.alive and view.energy > 1.0
        assert "(worked 2 of 2 tries)" in mem.recall(task, record=False).text
