"""The Claude Code loop: the hook injects recalled memory and credits what it injected."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from evolog.eventlog import (
    Attempt,
    ChildStep,
    Constraint,
    EventLog,
    Node,
    Note,
    Outcome,
    Recall,
    Retraction,
)

from evolog import Memory
from evolog.hook._hooks import handle_claude_code
from evolog.hook._recall import bounded


def hook(store: Path, payload: Any, *args: str, env: dict[str, str] | None = None) -> Any:
    result = subprocess.run(
        [sys.executable, "-m", "evolog", "--store", str(store), "hook", "claude-code", *args],
        input=json.dumps(payload).encode(),
        capture_output=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )
    return result.returncode, result.stdout.decode(), result.stderr.decode()


def events(store: Path) -> list[Any]:
    with EventLog(store) as log:
        return list(log.replay())


@pytest.fixture
def store(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    with Memory(root) as mem:
        mem.remember("backbone", "The user prefers short answers and uses uv for Python.")
        mem.remember("myproj", "The test suite of myproj runs with make check, not pytest.")
        mem.remember("deploy", "Deploy the web service with the blue green script.")
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
        # Recall's strategy is the router's: its caches (vector index, null sample) are
        # built here as a dream and the Stop after it leave them for the next prompt.
        mem.route("deploy the web service")
    return root


def test_session_start_injects_backbone_and_project_notes(store: Path) -> None:
    code, out, err = hook(
        store,
        {
            "hook_event_name": "SessionStart",
            "session_id": "s1",
            "cwd": "/home/me/myproj",
            "source": "startup",
        },
    )
    assert code == 0 and err == ""
    body = json.loads(out)["hookSpecificOutput"]
    assert body["hookEventName"] == "SessionStart"
    ctx = body["additionalContext"]
    assert "uses uv for Python" in ctx and "make check" in ctx and "blue green" not in ctx
    rec = [e for e in events(store) if isinstance(e, Recall)]
    assert len(rec) == 1 and len(rec[0].items) == 2 and rec[0].chars == len(ctx)


def test_prompt_injection_attribution_and_credit(store: Path) -> None:
    payload = {
        "hook_event_name": "UserPromptSubmit",
        "session_id": "s2",
        "prompt": "deploy the web service to production please",
    }
    code, out, _ = hook(store, payload)
    ctx = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert "Strategy [n-deploy]" in ctx and '1) "run ./bluegreen.sh" 2) "curl /health"' in ctx
    attempt = next(e for e in events(store) if isinstance(e, Attempt))
    recall = next(e for e in events(store) if isinstance(e, Recall))
    assert attempt.decided_by == ["n-deploy"] and attempt.gene == "n-deploy"
    assert set(recall.items) == {"n-deploy", *attempt.supported_by}
    assert recall.action_id == attempt.action_id
    # A failed tool becomes a constraint of the strategy that was followed, once the
    # attempt ends failed.
    code, out, _ = hook(
        store,
        {
            "hook_event_name": "PostToolUseFailure",
            "session_id": "s2",
            "tool_name": "Bash",
            "tool_input": {"command": "./bluegreen.sh"},
            "error": "permission denied",
        },
    )
    assert code == 0 and out == ""
    assert not any(isinstance(e, Constraint) for e in events(store))
    assert hook(store, {"hook_event_name": "Stop", "session_id": "s2"})[0] == 0
    constraint = next(e for e in events(store) if isinstance(e, Constraint))
    assert constraint.node == "n-deploy" and "permission denied" in constraint.description
    outcome = next(e for e in events(store) if isinstance(e, Outcome))
    assert outcome.status == "failed" and outcome.delta == -1.0
    assert outcome.decided_by == ["n-deploy"] and outcome.supported_by == attempt.supported_by
    with Memory(store) as mem:
        entry = mem.ledger().entry("n-deploy")
        assert entry is not None and entry.energy < 1.0  # credited (negatively)
        again = mem.recall("deploy the web service to production", record=False)
        assert "Do not: \"Bash ./bluegreen.sh failed: 'permission denied'\"" in again.text


def test_unrelated_prompt_injects_nothing(store: Path) -> None:
    code, out, _ = hook(
        store,
        {
            "hook_event_name": "UserPromptSubmit",
            "session_id": "s3",
            "prompt": "write a birthday card message for my aunt",
        },
    )
    assert (code, out) == (0, "")
    attempt = next(e for e in events(store) if isinstance(e, Attempt))
    assert attempt.supported_by == [] and attempt.decided_by == []
    assert not any(isinstance(e, Recall) for e in events(store))


def test_a_broken_config_or_no_time_means_no_context_but_the_attempt_is_kept(store: Path) -> None:
    (store / "memory.json").write_text('{"injection": {"budget_chars": "lots"}}')
    prompt = {
        "hook_event_name": "UserPromptSubmit",
        "session_id": "s4",
        "prompt": "deploy the web service to production",
    }
    assert hook(store, prompt) == (0, "", "")
    (store / "memory.json").unlink()
    assert hook(store, {**prompt, "session_id": "s5"}, env={"EVOLOG_HOOK_LOCK_TIMEOUT": "0"})[
        :2
    ] == (0, "")
    attempts = [e for e in events(store) if isinstance(e, Attempt)]
    assert len(attempts) == 2 and all(a.supported_by == [] for a in attempts)


def test_bounded_interrupts_work_that_overruns() -> None:
    import time

    with pytest.raises(Exception, match="longer than"), bounded(0.05):
        time.sleep(1)


def test_in_process_handler_returns_the_context(store: Path) -> None:
    seqs, ctx = handle_claude_code(
        {
            "hook_event_name": "UserPromptSubmit",
            "session_id": "s6",
            "prompt": "deploy the web service",
        },
        str(store),
    )
    assert len(seqs) == 2 and "n-deploy" in ctx


def test_rebuilding_the_index_of_a_young_store_needs_no_pyarrow(tmp_path: Path) -> None:
    """Every event in the WAL: a rebuild (a retraction forces one) reads the tail only."""
    root = tmp_path / "young"
    with Memory(root) as mem:
        mem.remember("deploy", "Deploy the web service with the blue green script.")
        mem.append(Retraction(targets=["some-undone-merge"]))
    code = (
        "import sys; from evolog.eventlog import EventLog;"
        "from evolog.projections.memory import ItemIndex;"
        "log = EventLog(sys.argv[1]); index = ItemIndex(log.paths, cache=False);"
        "fold = index.refresh(log.snapshot(), log); print(len(fold.state.items));"
        "print([m for m in sys.modules if m.split('.')[0] in ('pyarrow', 'numpy')])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(root)], capture_output=True, text=True, check=True
    )
    assert out.stdout.split("\n")[:2] == ["1", "[]"]


def test_a_warm_prompt_injects_without_pyarrow_duckdb_or_numpy(store: Path) -> None:
    """After a turn's Stop, the next prompt reads the index checkpoint and the WAL tail."""
    for payload in (
        {"hook_event_name": "UserPromptSubmit", "prompt": "deploy the web service"},
        {"hook_event_name": "Stop"},
    ):
        assert hook(store, {"session_id": "w", **payload})[0] == 0
    code = (
        "import sys, io; sys.argv=['evolog','--store',sys.argv[1],'hook','claude-code'];"
        'sys.stdin=io.TextIOWrapper(io.BytesIO(b\'{"session_id":"w","hook_event_name":'
        '"UserPromptSubmit","prompt":"deploy the web service to production"}\'));'
        "from evolog.cli._main import main; main();"
        "bad=[m for m in sys.modules if m.split('.')[0] in "
        "('pyarrow','duckdb','usearch','anthropic','numpy')]; print(bad, file=sys.stderr)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(store)], capture_output=True, text=True, check=True
    )
    assert "n-deploy" in out.stdout
    assert out.stderr.strip() == "[]"


def test_session_end_archives_cold_branches(tmp_path: Path) -> None:
    root = tmp_path / "s"
    with Memory(root) as mem:
        for i in range(3):
            mem.remember("cold", f"old note {i} about {('fortran', 'cobol', 'pascal')[i]} builds")
        for w in ("nginx", "redis", "kafka"):
            mem.remember("hot", f"restart {w} after changing its config")
        for _ in range(3):
            mem.recall("restart nginx after changing its config")
    assert hook(root, {"hook_event_name": "SessionEnd", "session_id": "e"})[0] == 0
    notes = [e for e in events(root) if isinstance(e, Note) and e.reason == "archive"]
    assert len(notes) == 1 and notes[0].branch == "cold" and len(notes[0].sources) == 3
    assert notes[0].session == "e" and "was:cold" in notes[0].tags


def test_a_prompt_longer_than_a_query_may_be_recalls_on_its_first_line(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A pasted log after the task: the whole prompt is past MAX_TASK_CHARS, which recall
    # refuses, so the hook recalls on its first line instead of injecting nothing.
    from evolog.advice import MAX_TASK_CHARS

    monkeypatch.setenv("EVOLOG_HOOK_LOCK_TIMEOUT", "60")
    prompt = "deploy the web service to production\n" + "log line 42 ok\n" * MAX_TASK_CHARS
    assert len(prompt) > MAX_TASK_CHARS
    _, ctx = handle_claude_code(
        {"hook_event_name": "UserPromptSubmit", "session_id": "s9", "prompt": prompt},
        str(store),
    )
    assert "n-deploy" in ctx
    attempt = next(e for e in events(store) if isinstance(e, Attempt))
    assert attempt.decided_by == ["n-deploy"]
