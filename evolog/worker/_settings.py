"""The Claude Code settings that send hooks to the worker, and the hook that starts it.

Claude Code posts every hook event but ``SessionStart`` (and ``Setup``) to an http hook, so
``SessionStart`` is a command hook: ``curl`` posts the payload to the worker (milliseconds,
where a Python process costs 0.3 s or more), and when no worker answers, the command hook
``evolog hook claude-code --start-worker`` records it as ever and starts the worker. The
http hooks
carry the store's worker secret in an ``Authorization`` header, so the settings printed
hold it: keep the settings file private (``chmod 600``), or set ``EVOLOG_WORKER_TOKEN`` in
Claude Code's environment and print them with ``--token-env``.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import sys
import time
from collections.abc import Callable
from typing import Any

from evolog.hook import HOOK_EVENTS, TOOL_EVENTS

__all__ = [
    "CURL_TIMEOUT_S",
    "START_READY_S",
    "http_settings",
    "http_settings_text",
    "print_http_settings",
    "session_start",
    "start_worker",
]

CURL_TIMEOUT_S = 5
"""Longest the ``SessionStart`` curl waits for the worker's answer before the fallback."""
START_READY_S = 8.0
"""How long ``--start-worker`` waits for a worker it started to listen (once per start)."""


def http_settings(
    store: str, port: int, token: str | None, command: str = "evolog hook claude-code"
) -> dict[str, Any]:
    """The hooks block: a command hook at ``SessionStart``, http hooks for the rest.

    ``token`` None: the header names ``$EVOLOG_WORKER_TOKEN`` (Claude Code interpolates the
    variables an http hook lists in ``allowedEnvVars``)."""
    url = f"http://127.0.0.1:{port}/hook/claude-code"
    hook: dict[str, Any] = {"type": "http", "url": url, "timeout": 10}
    if token is None:
        hook["headers"] = {"Authorization": "Bearer $EVOLOG_WORKER_TOKEN"}
        hook["allowedEnvVars"] = ["EVOLOG_WORKER_TOKEN"]
    else:
        hook["headers"] = {"Authorization": f"Bearer {token}"}
    hooks: dict[str, Any] = {}
    for name in HOOK_EVENTS:
        if name == "SessionStart":
            start = {"type": "command", "command": session_start(store, port, command)}
            hooks[name] = [{"hooks": [start]}]
            continue
        entry: dict[str, Any] = {"hooks": [hook]}
        hooks[name] = [{"matcher": "*", **entry} if name in TOOL_EVENTS else entry]
    return {"hooks": hooks}


def session_start(store: str, port: int, command: str = "evolog hook claude-code") -> str:
    """The ``SessionStart`` command: the payload to the worker with ``curl``, else (no worker,
    no curl, a refusal) to the command hook, which starts the worker."""
    from ._files import header_file

    q = shlex.quote
    env = f"EVOLOG_STORE={q(store)}" + (f" EVOLOG_WORKER_PORT={port}" if port != 8421 else "")
    url = f"http://127.0.0.1:{port}/hook/claude-code"
    curl = (
        f"curl -sf --max-time {CURL_TIMEOUT_S} -H @{q(header_file(store))} "
        f"-H 'Content-Type: application/json' --data-binary @- {url} 2>/dev/null"
    )
    fallback = f"{env} {command} --start-worker"
    return f"p=$(cat); printf '%s' \"$p\" | {curl} || printf '%s' \"$p\" | {fallback}"


def http_settings_text(
    store: str, port: int, token: str | None, command: str = "evolog hook claude-code"
) -> str:
    """:func:`http_settings` with one line per hook event."""
    hooks = http_settings(store, port, token, command)["hooks"]
    lines = [f"    {json.dumps(n) + ':':<22}{json.dumps(v)}" for n, v in hooks.items()]
    return '{\n  "hooks": {\n' + ",\n".join(lines) + "\n  }\n}"


def start_worker(store: str, hook: Callable[[], int]) -> int:
    """Run ``hook`` with the store's worker starting beside it if none runs; a worker started
    now is then waited for, so the session's first http hook finds it listening. Never
    raises (a hook must not fail): a worker that cannot start is one line on stderr."""
    import importlib.util

    started, root = False, store
    try:
        from evolog.eventlog import init_store

        from ._files import ensure_started, header_file, worker_port

        root = init_store(store).root
        # Without the server extra a worker would exit at once: starting one per event
        # would only double each command hook's cost.
        if importlib.util.find_spec("uvicorn") is not None:
            header_file(root)  # what the plugin's launcher posts with
            started = ensure_started(root, worker_port())[1]
    except Exception as exc:
        _say(exc)
    code = hook()
    with contextlib.suppress(Exception):
        from ._files import running

        deadline = time.monotonic() + START_READY_S
        while started and time.monotonic() < deadline:
            now = running(root)
            if now is None or now.ready:
                break
            time.sleep(0.05)
    return code


def _say(exc: Exception) -> None:
    with contextlib.suppress(OSError, ValueError):
        print(f"evolog hook: worker not started: {type(exc).__name__}: {exc}", file=sys.stderr)


def print_http_settings(store: str) -> int:
    """``evolog hook claude-code --print-settings --http``: the block, and the MCP command."""
    from evolog.doctor import evolog_command
    from evolog.eventlog import init_store

    from ._files import read_token, worker_port

    root = init_store(store).root
    port, token = worker_port(), read_token(root)
    # The fallback command by absolute path: a hook's shell need not have evolog on PATH.
    command = shlex.join([*evolog_command(), "hook", "claude-code"])
    sys.stdout.write(http_settings_text(root, port, token, command) + "\n")
    print(
        "# MCP from the worker: claude mcp add --transport http evolog "
        f"http://127.0.0.1:{port}/mcp --header 'Authorization: Bearer {token}'",
        file=sys.stderr,
    )
    return 0
