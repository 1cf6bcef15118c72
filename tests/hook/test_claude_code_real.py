"""The real Claude Code CLI, headless, against a scripted Anthropic API on 127.0.0.1.

Each test drives whole sessions (``claude -p``) through evolog's hooks and asserts what
reached the model's requests and what the store recorded: the command hooks, the http
hooks to a real worker process (started on demand by the ``SessionStart`` hook, then
dreaming in the background), MCP tools from the worker, and a tool the permission
settings deny. CI installs the CLI (``.ci/run``); there, a missing CLI fails the test.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from _fake_anthropic import FakeAnthropic, ToolCall, claude_cli, main_requests, run_claude, text_of
from _server_util import free_port

from evolog import Memory
from evolog.hook._recall import settings as command_settings
from evolog.worker._files import read_token
from evolog.worker._settings import http_settings

STRATEGY_LINE = re.compile(r"- Strategy \[(node-[^\]]+|m[0-9a-f]{6})\]")
"""A dreamed strategy's line: its node id is long, so the block shows its short id."""

EVOLOG = str(Path(sys.executable).with_name("evolog"))
MARKER = "ZEBRA-7731: run the frobnicator tests with -x first"
PROMPT = "run the frobnicator tests"


@pytest.fixture(scope="module")
def claude() -> str:
    found = claude_cli()
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but the Claude Code CLI is missing (.ci/run installs it)")
        pytest.skip("the Claude Code CLI is not installed (npm i -g @anthropic-ai/claude-code)")
    return found


def _project(tmp_path: Path) -> tuple[str, str, str]:
    """A store holding one note for the project, the project, and a private HOME."""
    project, home = tmp_path / "frob", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    store = str(tmp_path / "store")
    with Memory(store) as memory:
        memory.remember("frob", MARKER)
    return store, str(project), str(home)


def _events(store: str, kind: str) -> list[dict[str, Any]]:
    out = subprocess.run(
        [EVOLOG, "--store", store, "replay", "--kinds", kind],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [json.loads(line) for line in out.splitlines()]


def _permissions(tmp_path: Path) -> dict[str, Any]:
    return {"permissions": {"allow": ["Bash(echo:*)"], "deny": ["Bash(rm:*)"]}}


def test_command_hooks_inject_record_and_credit(claude: str, tmp_path: Path) -> None:
    store, project, home = _project(tmp_path)
    settings = {**command_settings(f"{EVOLOG} hook claude-code", store), **_permissions(tmp_path)}
    with FakeAnthropic(plan=[ToolCall("Bash", {"command": "echo alpha-out"})]) as api:
        result = run_claude(claude, api, PROMPT, cwd=project, home=home, settings=settings)
    assert result["is_error"] is False and result["result"] == "All done."
    requests = main_requests(api.seen)
    assert len(requests) == 2
    # The note reached the model in the first request, the tool's output in the second.
    assert MARKER in text_of(requests[0].body)
    last = requests[1].body["messages"][-1]["content"]
    assert [c["content"] for c in last if c.get("type") == "tool_result"] == ["alpha-out"]

    (attempt,) = _events(store, "attempt")
    assert attempt["task"] == PROMPT
    (note,) = _events(store, "note")
    assert note["id"] in attempt["supported_by"]
    (step,) = _events(store, "step")
    assert (step["tool"], step["action"], step["ok"]) == ("Bash", "Bash echo alpha-out", True)
    (outcome,) = _events(store, "outcome")
    assert outcome["action_id"] == attempt["action_id"]
    assert outcome["status"] == "success" and outcome["delta"] == 1.0
    assert note["id"] in outcome["supported_by"]


def test_http_hooks_to_an_on_demand_worker_with_mcp_and_a_denied_tool(
    claude: str, tmp_path: Path
) -> None:
    store, project, home = _project(tmp_path)
    port = free_port()
    settings = {
        **http_settings(store, port, read_token(store), f"{EVOLOG} hook claude-code"),
        **_permissions(tmp_path),
    }
    env = {"EVOLOG_WORKER_PORT": str(port), "EVOLOG_WORKER_DREAM_AFTER": "0.2"}
    keep = tmp_path / "keep"
    keep.write_text("still here")
    try:
        with FakeAnthropic(plan=[ToolCall("Bash", {"command": "echo beta-out"})]) as api:
            # No worker runs yet: the SessionStart command hook starts one, the rest post to it.
            run_claude(claude, api, PROMPT, cwd=project, home=home, settings=settings, env=env)
            first = main_requests(api.seen)
            _wait_for_dream(store)
            token = read_token(store)
            url = f"http://127.0.0.1:{port}/mcp"
            server = {"type": "http", "url": url, "headers": {"Authorization": f"Bearer {token}"}}
            mcp = {"mcpServers": {"evolog": server}}
            api.plan = [
                ToolCall("Bash", {"command": "echo gamma-out"}),
                ToolCall("Bash", {"command": f"rm -rf {keep}"}),  # denied by the settings
            ]
            api.seen.clear()
            run_claude(claude, api, PROMPT, cwd=project, home=home, settings=settings, env=env,
                       mcp=mcp)  # fmt: skip
            second = main_requests(api.seen)
    finally:
        stopped = subprocess.run([EVOLOG, "--store", store, "worker", "stop"],
                                 capture_output=True, text=True, check=False)  # fmt: skip
    assert json.loads(stopped.stdout)["stopped"] is True

    # Session 1: the note injected, the tool's output returned.
    assert MARKER in text_of(first[0].body)
    assert "beta-out" in json.dumps(first[-1].body["messages"][-1]["content"])
    # Session 2: the worker's MCP tools are offered, and what the worker dreamt from session 1
    # (its strategy, without anyone running `evolog dream`) reached the model.
    tools = {t["name"] for t in second[0].body["tools"]}
    assert {"mcp__evolog__recall", "mcp__evolog__remember"} <= tools
    text = text_of(second[0].body)
    assert STRATEGY_LINE.search(text) and "Bash echo beta-out" in text
    # The denied call's result went back to the model as an error; the command never ran.
    denied = [
        c for c in second[-1].body["messages"][-1]["content"] if c.get("type") == "tool_result"
    ]
    assert len(denied) == 1 and denied[0]["is_error"] is True
    assert "denied" in json.dumps(denied[0]["content"])
    assert keep.read_text() == "still here"

    attempts = _events(store, "attempt")
    assert [a["task"] for a in attempts] == [PROMPT, PROMPT]
    steps = _events(store, "step")
    by_attempt = [
        [(s["action"], s["ok"]) for s in steps if s["action_id"] == a["action_id"]]
        for a in attempts
    ]
    assert by_attempt[0] == [("Bash echo beta-out", True)]
    assert by_attempt[1][:1] == [("Bash echo gamma-out", True)]
    # The denied call is never recorded as a tool that succeeded, nor its turn as a success,
    # and nothing injected is credited for it.
    assert not [s for s in steps if "rm -rf" in s["action"] and s["ok"]]
    outcomes = {o["action_id"]: o for o in _events(store, "outcome")}
    assert set(outcomes) == {a["action_id"] for a in attempts}
    assert outcomes[attempts[0]["action_id"]]["status"] == "success"
    second_outcome = outcomes[attempts[1]["action_id"]]
    assert second_outcome["status"] == "denied"
    assert second_outcome.get("delta") is None
    # The second attempt was decided by the dreamt strategy, and its outcome names it.
    (node,) = attempts[1]["decided_by"]
    assert node.startswith("node-")
    assert outcomes[attempts[1]["action_id"]]["decided_by"] == [node]


def _wait_for_dream(store: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _events(store, "dream_end"):
            return
        time.sleep(0.2)
    log = Path(store, "worker", "worker.log")
    raise AssertionError(f"the worker did not dream within {timeout} s: {log.read_text()}")


def test_the_readme_plugin_setup_dreams_without_evolog_dream(claude: str, tmp_path: Path) -> None:
    """The README's two setup commands (the lines `evolog doctor` prints), then two sessions:
    the plugin's hooks start the worker, which dreams after the first session's Stop, and
    the second session's prompt is given the dreamt strategy; nobody runs `evolog dream`."""
    store, project, home = _project(tmp_path)
    port = free_port()
    env = {"EVOLOG_WORKER_PORT": str(port), "EVOLOG_WORKER_DREAM_AFTER": "0.2"}
    base = {"HOME": home, "PATH": os.environ["PATH"], "DISABLE_TELEMETRY": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}  # fmt: skip
    doctor = subprocess.run([EVOLOG, "--store", store, "doctor", "--no-mcp-start"], cwd=project,
                            env={**os.environ, **base}, capture_output=True, text=True)  # fmt: skip
    (line,) = [ln for ln in doctor.stdout.splitlines() if "claude plugin marketplace add" in ln]
    for command in line.split("`")[1].split(" && "):
        done = subprocess.run([claude, *command.split()[1:]], cwd=project, env=base,
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        assert done.returncode == 0, f"{command}: {done.stdout}{done.stderr}"
    settings = _permissions(tmp_path)
    try:
        with FakeAnthropic(plan=[ToolCall("Bash", {"command": "echo beta-out"})]) as api:
            run_claude(claude, api, PROMPT, cwd=project, home=home, settings=settings, env=env)
            first = main_requests(api.seen)
            assert json.loads(_worker_status(store, port))["running"] is True
            _wait_for_dream(store)
            api.plan = [ToolCall("Bash", {"command": "echo gamma-out"})]
            api.seen.clear()
            run_claude(claude, api, PROMPT, cwd=project, home=home, settings=settings, env=env)
            second = main_requests(api.seen)
    finally:
        subprocess.run([EVOLOG, "--store", store, "worker", "stop"], capture_output=True,
                       check=False)  # fmt: skip
    assert MARKER in text_of(first[0].body)
    text = text_of(second[0].body)
    assert STRATEGY_LINE.search(text) and "Bash echo beta-out" in text
    attempts = _events(store, "attempt")
    assert [a["task"] for a in attempts] == [PROMPT, PROMPT]
    (node,) = attempts[1]["decided_by"]
    assert node.startswith("node-")


def _worker_status(store: str, port: int) -> str:
    env = {**os.environ, "EVOLOG_WORKER_PORT": str(port)}
    return subprocess.run([EVOLOG, "--store", store, "worker", "status"], env=env,
                          capture_output=True, text=True, check=False).stdout  # fmt: skip
