"""Setting Claude Code up: the printed settings and commands run this installation by
absolute path from a bare shell, the plugin in the repository installs and records, and
``evolog doctor`` names each problem with the line that fixes it."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from _fake_anthropic import FakeAnthropic, ToolCall, claude_cli, main_requests, run_claude
from _server_util import free_port
from evolog.eventlog import Attempt, EventLog, Signal, Step

from evolog.doctor._paths import evolog_command
from evolog.doctor._plugin import plugin_hooks_text
from evolog.hook._recall import HOOK_EVENTS, settings_text

REPO = Path(__file__).resolve().parents[2]
# The tools evolog mcp lists: the shipped handshake is the SDK's own answer (a test keeps it so).
TOOLS = len(
    json.loads((REPO / "evolog" / "mcp" / "handshake.json").read_text())["lists"]["tools/list"][
        "tools"
    ]
)
PLUGIN = REPO / "plugin"
BARE = {"PATH": "/usr/bin:/bin"}  # a hook's shell: no virtual environment on its PATH
EVOLOG = [sys.executable, "-m", "evolog"]


def _evolog(*args: str, cwd: Path, env: dict[str, str] | None = None) -> Any:
    full = {k: v for k, v in os.environ.items() if k != "EVOLOG_STORE"}
    return subprocess.run(
        [*EVOLOG, *args],
        cwd=cwd,
        env={**full, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


def _payload(event: str, **fields: Any) -> str:
    return json.dumps({"hook_event_name": event, "session_id": "setup", **fields})


def _kinds(store: Path) -> list[Any]:
    with EventLog(store) as log:
        return list(log.replay())


def test_print_settings_runs_this_installation_from_a_bare_shell(tmp_path: Path) -> None:
    done = _evolog(
        "hook", "claude-code", "--print-settings", cwd=tmp_path, env={"EVOLOG_STORE": "rel/store"}
    )
    assert done.returncode == 0
    store = tmp_path / "rel" / "store"
    assert not store.exists()  # printing makes no store
    exe = shlex.join([*evolog_command(), "hook", "claude-code"])
    assert done.stdout.strip() == settings_text(exe, shlex.quote(str(store)))
    assert os.path.isabs(evolog_command()[0])
    assert not done.stderr  # the block alone, ready to paste
    hooks = json.loads(done.stdout)["hooks"]
    assert set(hooks) == set(HOOK_EVENTS)
    command = hooks["UserPromptSubmit"][0]["hooks"][0]["command"]
    ran = subprocess.run(
        ["/bin/sh", "-c", command],
        cwd="/",
        env=BARE,
        timeout=60,
        input=_payload("UserPromptSubmit", prompt="ship it"),
        capture_output=True,
        text=True,
    )
    assert ran.returncode == 0, ran.stderr
    assert [e.task for e in _kinds(store) if isinstance(e, Attempt)] == ["ship it"]
    # --store wins over EVOLOG_STORE, and is printed absolute too.
    other = _evolog(
        "--store",
        "b",
        "hook",
        "claude-code",
        "--print-settings",
        cwd=tmp_path,
        env={"EVOLOG_STORE": "a"},
    )
    assert f"EVOLOG_STORE={tmp_path / 'b'} " in other.stdout
    # The worker's settings: the SessionStart fallback runs this installation too.
    http = _evolog(
        "--store", "b", "hook", "claude-code", "--print-settings", "--http", cwd=tmp_path
    )
    start = json.loads(http.stdout)["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    assert f"{exe} --start-worker" in start


def test_docs_show_the_printed_settings() -> None:
    readme = (REPO / "docs" / "claude-code.md").read_text()
    shown = settings_text("/home/me/evolog/.venv/bin/evolog hook claude-code", "/home/me/.evolog")
    assert shown in readme


def test_plugin_hooks_cover_every_event_and_run_the_configured_evolog(tmp_path: Path) -> None:
    """The plugin's hook command, with what Claude Code substitutes into it, from a bare
    shell; without a configured executable and none on PATH, one line says what to do."""
    text = (PLUGIN / "hooks" / "hooks.json").read_text()
    assert text == plugin_hooks_text(), (
        "plugin/hooks/hooks.json is out of date: "
        "python -m evolog.doctor._plugin > plugin/hooks/hooks.json"
    )
    hooks = json.loads(text)["hooks"]
    assert set(hooks) == set(HOOK_EVENTS)
    for event, groups in hooks.items():
        assert ("matcher" in groups[0]) == (
            event in ("PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionDenied")
        )
        assert groups[0]["hooks"][0]["type"] == "command"
    template = hooks["SessionStart"][0]["hooks"][0]["command"]
    assert all(g[0]["hooks"][0]["command"] == template for g in hooks.values())
    store = tmp_path / "store"
    bare = {**BARE, "EVOLOG_WORKER_PORT": str(free_port()), "EVOLOG_WORKER_DREAM_AFTER": "-1"}

    def run(exe: str, store_option: str, payload: str | None = None) -> Any:
        command = (
            template.replace("${CLAUDE_PLUGIN_ROOT}", str(PLUGIN))
            .replace("${user_config.evolog}", exe)
            .replace("${user_config.store}", store_option)
        )
        return subprocess.run(
            ["/bin/sh", "-c", command],
            cwd="/",
            env=bare,
            timeout=60,
            input=payload or _payload("SessionStart", source="startup"),
            capture_output=True,
            text=True,
        )

    (exe,) = evolog_command()  # the script of this environment (an absolute path)
    try:
        # No worker yet: the command hook records the event and starts the worker.
        assert run(exe, str(store)).returncode == 0
        assert any(isinstance(e, Signal) and "session_start" in e.signals for e in _kinds(store))
        status = _worker(store, bare, "status")
        assert status["running"] is True
        # Now the event is posted to the worker with curl (its metrics count it).
        tool = {"tool_name": "Bash", "tool_input": {"command": "make -j4"}, "tool_use_id": "t1"}
        assert run(exe, str(store), _payload("PreToolUse", **tool)).returncode == 0
        assert _worker(store, bare, "status")["pid"] == status["pid"]
        assert _hook_requests(store, status["url"]) == 1
        # The worker gone mid-session: the event falls back, is recorded, and a worker starts.
        _worker(store, bare, "stop")
        done = {"tool_response": {"stdout": "built", "stderr": ""}}
        assert run(exe, str(store), _payload("PostToolUse", **tool, **done)).returncode == 0
        assert _worker(store, bare, "status")["pid"] != status["pid"]
    finally:
        _worker(store, bare, "stop")
    recorded = _kinds(store)  # each once: the curl path and the fallback never both record
    kinds = [type(e).__name__ for e in recorded if isinstance(e, Attempt | Step)]
    assert kinds == ["Attempt", "Step"]
    missing = run("", str(store))
    assert missing.returncode == 1
    assert missing.stderr.count("\n") == 1 and "--config evolog=" in missing.stderr
    mcp = json.loads((PLUGIN / ".mcp.json").read_text())["mcpServers"]["evolog"]
    assert mcp["args"] == ["mcp"] and mcp["env"]["EVOLOG_BIN"] == "${user_config.evolog}"


def _worker(store: Path, env: dict[str, str], action: str) -> Any:
    done = subprocess.run([*EVOLOG, "--store", str(store), "worker", action], capture_output=True,
                          text=True, env={**os.environ, **env}, timeout=60)  # fmt: skip
    return json.loads(done.stdout)


def _hook_requests(store: Path, url: str) -> int:
    from evolog.worker._files import read_token

    auth = {"Authorization": f"Bearer {read_token(str(store))}"}
    text = httpx.get(f"{url}/metrics", headers=auth, timeout=30).text
    prefix = 'evolog_http_requests_total{route="hook",status="200"} '
    counts = [line[len(prefix) :] for line in text.splitlines() if line.startswith(prefix)]
    return sum(int(float(n)) for n in counts)


def _doctor(home: Path, store: Path, cwd: Path, *args: str) -> tuple[int, dict[str, str]]:
    done = _evolog("--store", str(store), "doctor", *args, cwd=cwd, env={"HOME": str(home)})
    lines = {}
    for line in done.stdout.splitlines():
        level, rest = line.split(None, 1)
        name, text = rest.split(": ", 1)
        lines[name] = f"{level} {text}"
    return done.returncode, lines


def test_doctor_says_what_to_fix_and_then_is_satisfied(tmp_path: Path) -> None:
    home, cwd, store = tmp_path / "home", tmp_path / "project", tmp_path / "store"
    home.mkdir()
    cwd.mkdir()
    code, checks = _doctor(home, store, cwd, "--no-mcp-start")
    assert code == 1
    assert checks["executable"].startswith("ok ") and checks["store"].startswith("ok ")
    assert (
        checks["hooks"].startswith("FIX ")
        and "claude plugin install evolog@evolog" in (checks["hooks"])
    )
    mcp_line = f"claude mcp add evolog -- {shlex.join(evolog_command())} --store {store} mcp"
    assert checks["mcp"] == f"FIX no evolog MCP server configured: `{mcp_line}`"
    assert checks["worker"].startswith("note not running")

    # What the fixes say: the printed settings, and the server `claude mcp add` writes.
    printed = _evolog("--store", str(store), "hook", "claude-code", "--print-settings", cwd=cwd)
    (home / ".claude").mkdir()
    (home / ".claude" / "settings.json").write_text(printed.stdout)
    argv = shlex.split(mcp_line.split(" -- ", 1)[1])
    server = {"type": "stdio", "command": argv[0], "args": argv[1:], "env": {}}
    (home / ".claude.json").write_text(json.dumps({"mcpServers": {"evolog": server}}))
    code, checks = _doctor(home, store, cwd)
    assert code == 0, checks
    assert checks["mcp start"].startswith(f"ok {TOOLS} tools listed in ")
    assert not store.exists()  # the start-up check ran on a scratch store

    # A hook that runs a bare `evolog` (what the settings used to say) is named.
    settings = json.loads(printed.stdout)
    for groups in settings["hooks"].values():
        groups[0]["hooks"][0]["command"] = "EVOLOG_STORE=~/.evolog evolog hook claude-code"
    (home / ".claude" / "settings.json").write_text(json.dumps(settings))
    code, checks = _doctor(home, store, cwd, "--no-mcp-start")
    assert code == 1 and "a bare `evolog`, which a hook's shell may not find" in checks["hooks"]


def test_doctor_names_a_store_it_cannot_write(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    not_a_store = tmp_path / "notes"
    not_a_store.mkdir()
    (not_a_store / "todo.txt").write_text("x")
    code, checks = _doctor(home, not_a_store, tmp_path, "--no-mcp-start")
    assert code == 1 and checks["store"].startswith(f"FIX {not_a_store} is not an evolog store")


@pytest.fixture(scope="module")
def claude() -> str:
    found = claude_cli()
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but the Claude Code CLI is missing (.ci/run installs it)")
        pytest.skip("the Claude Code CLI is not installed (npm i -g @anthropic-ai/claude-code)")
    return found


def test_claude_code_installs_the_plugin_and_it_records(claude: str, tmp_path: Path) -> None:
    """The real CLI: the manifests validate, `marketplace add` + `install` with the lines
    doctor prints, its MCP health check connects, and a (model-less) session's hooks land
    in the configured store."""
    home, cwd, store = tmp_path / "home", tmp_path / "project", tmp_path / "store"
    home.mkdir()
    cwd.mkdir()
    env = {
        "HOME": str(home),
        "PATH": os.environ["PATH"],
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        # The plugin's hooks start the store's worker: on a port of this test's own.
        "EVOLOG_WORKER_PORT": str(free_port()),
        "EVOLOG_WORKER_DREAM_AFTER": "-1",
    }

    def cli(*args: str, **extra: str) -> str:
        done = subprocess.run(
            [claude, *args],
            cwd=cwd,
            env={**env, **extra},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, f"claude {args}: {done.stdout}{done.stderr}"
        return done.stdout + done.stderr

    cli("plugin", "validate", "--strict", str(PLUGIN))
    cli("plugin", "validate", "--strict", str(REPO))
    _, checks = _doctor(home, store, cwd, "--no-mcp-start")
    lines = checks["hooks"].split("`")[1].split(" && ")
    assert lines[0] == f"claude plugin marketplace add {REPO}"
    for line in lines:
        cli(*shlex.split(line)[1:])
    assert "✔ Connected" in cli("mcp", "list")
    code, checks = _doctor(home, store, cwd, "--no-mcp-start")
    assert code == 0
    assert checks["hooks"].startswith("ok the evolog plugin") and checks["mcp"].startswith("ok ")
    # No model: the API is a closed local port, so the session ends after its first turn.
    try:
        _run_without_a_model(claude, cwd, env)
        assert _worker(store, env, "status")["running"] is True  # started by SessionStart
    finally:
        _worker(store, env, "stop")
    recorded = _kinds(store)
    assert any(isinstance(e, Signal) and "session_start" in e.signals for e in recorded)
    assert [e.task for e in recorded if isinstance(e, Attempt)] == ["deploy the web service"]


def _run_without_a_model(claude: str, cwd: Path, env: dict[str, str]) -> None:
    subprocess.run(
        [claude, "-p", "deploy the web service", "--max-turns", "1"],
        cwd=cwd,
        env={
            **env,
            "ANTHROPIC_API_KEY": "sk-ant-test-not-a-key",
            "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
            "CLAUDE_CODE_MAX_RETRIES": "0",
            "API_TIMEOUT_MS": "2000",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("doctor_first", [True, False], ids=["after-doctor", "cold"])
def test_the_first_mcp_tool_call_of_a_session_succeeds(
    claude: str, tmp_path: Path, doctor_first: bool
) -> None:
    """A session whose first action is an evolog MCP tool, with Claude Code's default
    connection settings, after `evolog doctor` has made a first start (which fills the
    handshake cache) or cold, the very first start after the install (no cache: the
    handshake shipped with evolog answers): the tool is listed and its call answered, not
    "still connecting"."""
    home, cwd, store = tmp_path / "home", tmp_path / "project", tmp_path / "store"
    home.mkdir()
    cwd.mkdir()
    cache = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    note = "Deploy the web service with the blue green script, then check /health."
    assert _evolog("--store", str(store), "init", cwd=cwd).returncode == 0
    assert _evolog("--store", str(store), "remember", "deploy", note, cwd=cwd).returncode == 0
    if doctor_first:
        doctor = _evolog("--store", str(store), "doctor", cwd=cwd, env={"HOME": str(home), **cache})
        assert f"ok    mcp start: {TOOLS} tools listed" in doctor.stdout, doctor.stdout
    else:
        assert not (tmp_path / "cache").exists()
    server = {
        "type": "stdio",
        "command": evolog_command()[0],
        "args": ["--store", str(store), "mcp"],
        "env": cache,
    }
    mcp = {"mcpServers": {"evolog": server}}
    settings = {"permissions": {"allow": ["mcp__evolog__recall"]}}
    plan = [ToolCall("mcp__evolog__recall", {"query": "how do I deploy the web service"})]
    with FakeAnthropic(plan=plan) as api:
        result = run_claude(
            claude,
            api,
            "deploy the web service",
            cwd=str(cwd),
            home=str(home),
            settings=settings,
            mcp=mcp,
        )
    assert result["is_error"] is False
    requests = main_requests(api.seen)
    assert "mcp__evolog__recall" in {t["name"] for t in requests[0].body["tools"]}
    (answer,) = [
        c for c in requests[1].body["messages"][-1]["content"] if c.get("type") == "tool_result"
    ]
    assert not answer.get("is_error"), answer
    assert "blue green script" in json.dumps(answer["content"])
