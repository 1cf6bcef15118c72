"""``evolog doctor``: is this installation set up so that Claude Code records, recalls and
reaches the MCP tools? One line per check; a problem's line says what to run."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any, NamedTuple

from ._paths import evolog_command, mcp_add_line, plugin_install_lines, shell_line

__all__ = ["Check", "run_checks"]

#: Claude Code's wait for its MCP servers before a session goes on without them
#: (``MCP_CONNECT_TIMEOUT_MS``, read from its 2.1 client).
CONNECT_WAIT_MS = 5000
#: What a shell started with a bare environment searches (what a hook's shell may have).
_BARE_PATH = "/usr/local/bin:/usr/bin:/bin"
#: The protocol version Claude Code 2.1 asks for in ``initialize``.
_CLAUDE_PROTOCOL = "2025-11-25"


class Check(NamedTuple):
    name: str
    level: str  # "ok", "FIX" or "note"
    text: str


def _claude_home() -> str:
    return os.path.join(os.path.expanduser("~"), ".claude")


def _load(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _settings_files(cwd: str) -> list[str]:
    return [
        os.path.join(_claude_home(), "settings.json"),
        os.path.join(cwd, ".claude", "settings.json"),
        os.path.join(cwd, ".claude", "settings.local.json"),
    ]


def check_executable() -> Check:
    """The command printed for hooks runs from a shell with a bare environment."""
    line = shell_line("--version")
    env = {"HOME": os.path.expanduser("~"), "PATH": _BARE_PATH}
    try:
        done = subprocess.run(
            ["/bin/sh", "-c", line], env=env, capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Check("executable", "FIX", f"`{line}` did not run: {exc}")
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return Check("executable", "FIX", f"`{line}` fails from a bare shell: {why}")
    return Check("executable", "ok", f"{shlex.join(evolog_command())} ({done.stdout.strip()})")


def check_store(store: str) -> Check:
    """The store exists and takes writes, or can be created."""
    from evolog.eventlog import Paths

    root = os.path.abspath(store)
    if not os.path.exists(root):
        parent = os.path.dirname(root)
        if os.access(parent, os.W_OK):
            return Check("store", "ok", f"{root} (created at the first hook)")
        return Check("store", "FIX", f"{root}: {parent} is not writable: choose --store elsewhere")
    if not os.path.exists(Paths.of(root).marker):
        if os.path.isdir(root) and not os.listdir(root):
            return Check("store", "ok", f"{root} (empty; made a store at the first hook)")
        return Check("store", "FIX", f"{root} is not an evolog store: `{shell_line('init', root)}`")
    try:
        with tempfile.NamedTemporaryFile(dir=root, prefix=".doctor-"):
            pass
    except OSError as exc:
        return Check("store", "FIX", f"{root} is not writable ({exc.strerror}): fix its mode")
    return Check("store", "ok", f"{root} (writable)")


def _plugin(cwd: str) -> tuple[dict[str, Any], str] | None:
    """The evolog plugin's options and where it is enabled, if it is."""
    for path in _settings_files(cwd):
        data = _load(path)
        enabled = data.get("enabledPlugins") or {}
        for key, on in enabled.items() if isinstance(enabled, dict) else ():
            if key.split("@")[0] == "evolog" and on:
                configs = data.get("pluginConfigs") or {}
                options = (configs.get(key) or {}).get("options") or {}
                return dict(options), path
    return None


def _evolog_hooks(cwd: str) -> Iterator[tuple[str, dict[str, Any], str]]:
    """(event, hook, settings file) for every hook that sends to evolog."""
    for path in _settings_files(cwd):
        hooks = _load(path).get("hooks") or {}
        for event, groups in hooks.items() if isinstance(hooks, dict) else ():
            for group in groups if isinstance(groups, list) else ():
                for hook in (group.get("hooks") or []) if isinstance(group, dict) else ():
                    text = str(hook.get("command") or hook.get("url") or "")
                    if "hook claude-code" in text or "/hook/claude-code" in text:
                        yield event, hook, path


def _program(command: str) -> str | None:
    """The program a shell command line runs (after any NAME=value assignments)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    for word in words:
        name = word.split("=", 1)[0]
        if "=" in word and name.isidentifier():
            continue
        return word
    return None


def _unreachable(program: str | None) -> str | None:
    """Why a hook's shell would not find ``program``, if it would not."""
    if program is None:
        return "an unreadable command line"
    if os.sep in program:
        path = os.path.expanduser(program)
        return None if os.access(path, os.X_OK) else f"{program} does not exist"
    found = shutil.which(program, path=_BARE_PATH)
    return None if found else f"a bare `{program}`, which a hook's shell may not find"


def check_hooks(store: str, cwd: str) -> Check:
    from evolog.hook import HOOK_EVENTS

    plugin = _plugin(cwd)
    if plugin is not None:
        options, where = plugin
        exe = str(options.get("evolog") or "")
        why = _unreachable(exe or "evolog")
        if why:
            fix = plugin_install_lines(store)[1]
            return Check("hooks", "FIX", f"the evolog plugin ({where}) runs {why}: `{fix}`")
        target = options.get("store") or "the default store"
        return Check("hooks", "ok", f"the evolog plugin, enabled in {where}, into {target}")
    found = list(_evolog_hooks(cwd))
    fix = f"the output of `{shell_line('hook', 'claude-code', '--print-settings', store=store)}`"
    if not found:
        lines = " && ".join(plugin_install_lines(store))
        return Check(
            "hooks",
            "FIX",
            f"none configured: `{lines}` (or paste {fix} into {_settings_files(cwd)[0]})",
        )
    for _, hook, path in found:
        if hook.get("type", "command") == "command":
            why = _unreachable(_program(str(hook.get("command"))))
            if why:
                return Check("hooks", "FIX", f"{path} runs {why}: replace it with {fix}")
    missing = [e for e in HOOK_EVENTS if e not in {event for event, _, _ in found}]
    if missing:
        return Check("hooks", "FIX", f"no evolog hook for {', '.join(missing)}: paste {fix}")
    return Check("hooks", "ok", f"all {len(HOOK_EVENTS)} events, in {found[0][2]}")


def check_mcp_config(store: str, cwd: str) -> Check:
    if _plugin(cwd) is not None:
        return Check("mcp", "ok", "served by the evolog plugin")
    sources = [
        (os.path.join(os.path.expanduser("~"), ".claude.json"), None),
        (os.path.join(cwd, ".mcp.json"), None),
    ]
    for path, _ in sources:
        data = _load(path)
        tables = [data.get("mcpServers") or {}]
        project = (data.get("projects") or {}).get(cwd) or {}
        tables.append(project.get("mcpServers") or {})
        for table in tables:
            server = table.get("evolog") if isinstance(table, dict) else None
            if not isinstance(server, dict):
                continue
            if server.get("type") in ("http", "sse"):
                return Check("mcp", "ok", f"{server.get('url')} (in {path})")
            why = _unreachable(str(server.get("command") or "") or None)
            if why:
                return Check("mcp", "FIX", f"{path} runs {why}: `{mcp_add_line(store)}`")
            return Check("mcp", "ok", f"{server.get('command')} (in {path})")
    return Check("mcp", "FIX", f"no evolog MCP server configured: `{mcp_add_line(store)}`")


def _send(stdin: Any, message: dict[str, Any]) -> None:
    stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    stdin.flush()


def _time_start(cmd: list[str]) -> tuple[float, Any, str]:
    """Start ``cmd`` (``evolog mcp``) and connect as Claude Code does: (milliseconds until
    connected, the tools, stderr)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdin is not None and proc.stdout is not None
    init = {
        "protocolVersion": _CLAUDE_PROTOCOL,
        "capabilities": {},
        "clientInfo": {"name": "evolog-doctor", "version": "0"},
    }
    _send(proc.stdin, {"id": 1, "method": "initialize", "params": init})
    _send(proc.stdin, {"method": "notifications/initialized"})
    # What Claude Code asks for while connecting: it counts the server connected (and its
    # tools callable) once all three are answered.
    for ident, method in ((2, "tools/list"), (3, "prompts/list"), (4, "resources/list")):
        _send(proc.stdin, {"id": ident, "method": method})
    tools, pending = None, {2, 3, 4}
    for line in proc.stdout:
        msg = json.loads(line)
        pending.discard(msg.get("id"))
        if msg.get("id") == 2:
            tools = msg.get("result", {}).get("tools")
        if not pending:
            break
    ms = (time.perf_counter() - t0) * 1000
    err = proc.communicate(timeout=60)[1]  # closes stdin: the server ends
    return ms, tools, err


def check_mcp_start() -> Check:
    """``evolog mcp`` answers ``tools/list`` within Claude Code's wait. It runs on a scratch
    store (nothing is written to the user's). The first start after an install or upgrade
    waits for the MCP SDK and fills the handshake cache; if it was slow, a second start
    shows what the next session will see."""
    import importlib.util

    if importlib.util.find_spec("mcp") is None:
        return Check("mcp start", "FIX", "the MCP SDK is missing: pip install 'evolog[server]'")
    with tempfile.TemporaryDirectory(prefix="evolog-doctor-") as scratch:
        cmd = [*evolog_command(), "--store", os.path.join(scratch, "store"), "mcp"]
        try:
            ms, tools, err = _time_start(cmd)
            first = ""
            if tools and ms > CONNECT_WAIT_MS:
                first = f" (the first start, which filled the cache: {ms:.0f} ms)"
                ms, tools, err = _time_start(cmd)
        except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
            return Check("mcp start", "FIX", f"`{shlex.join(cmd)}` failed: {exc}")
    if not tools:
        why = (err.strip().splitlines() or ["no answer to tools/list"])[-1]
        return Check("mcp start", "FIX", f"`evolog mcp` did not list its tools: {why}")
    if ms > CONNECT_WAIT_MS:
        return Check(
            "mcp start",
            "FIX",
            f"tools/list took {ms:.0f} ms, more than Claude Code "
            f"waits ({CONNECT_WAIT_MS} ms): set MCP_CONNECT_TIMEOUT_MS=15000",
        )
    return Check("mcp start", "ok", f"{len(tools)} tools listed in {ms:.0f} ms{first}")


def check_worker(store: str) -> Check:
    import urllib.request

    try:
        from evolog.worker import status_of
    except ImportError:
        return Check("worker", "note", "not part of this installation (command hooks only)")
    start = shell_line("worker", "start", store=store)
    if not os.path.isdir(store):
        return Check("worker", "note", f"not running (optional: `{start}`)")
    status = status_of(os.path.abspath(store))
    if not status.get("running"):
        return Check("worker", "note", f"not running (optional: `{start}`)")
    try:
        with urllib.request.urlopen(f"{status['url']}/healthz", timeout=2) as r:
            ok = r.status == 200
    except OSError as exc:
        return Check(
            "worker",
            "FIX",
            f"pid {status['pid']} does not answer at {status['url']}"
            f" ({exc}): `{shell_line('worker', 'stop', store=store)}` then `{start}`",
        )
    if not ok:
        return Check("worker", "FIX", f"{status['url']}/healthz is not healthy: restart it")
    from evolog.worker import read_record, stale

    record = read_record(os.path.abspath(store))
    why = stale(record) if record is not None else None
    if why is not None:
        # The next SessionStart that reaches Python replaces it; until then hooks run old code.
        stop = shell_line("worker", "stop", store=store)
        return Check(
            "worker",
            "FIX",
            f"pid {status['pid']} runs another evolog ({why}): `{stop}` then `{start}`",
        )
    return Check(
        "worker", "ok", f"running at {status['url']} (pid {status['pid']}, {status['version']})"
    )


def run_checks(store: str, cwd: str, mcp_start: bool = True) -> list[Check]:
    checks = [
        check_executable(),
        check_store(store),
        check_hooks(store, cwd),
        check_mcp_config(store, cwd),
    ]
    if mcp_start:
        checks.append(check_mcp_start())
    checks.append(check_worker(store))
    return checks


def print_checks(checks: list[Check]) -> int:
    for c in checks:
        sys.stdout.write(f"{c.level:<5} {c.name}: {c.text}\n")
    return 1 if any(c.level == "FIX" for c in checks) else 0
