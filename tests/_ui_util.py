"""A store for the viewer's tests, written the way agents write one: notes, then Claude Code
sessions recorded by the real hook (``evolog hook claude-code``, or a worker's hook route),
then an offline dream."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evolog import Memory

EVOLOG = str(Path(sys.executable).with_name("evolog"))
#: Recorded text that would run as script if the page did not escape it.
HOSTILE = '<script>document.title="pwned"</script><img src=x onerror="document.title=1">'
NOTE = "ORCA-12: build the gizmo with make -j4"


def sessions() -> list[list[dict[str, Any]]]:
    """Two sessions: one whose tools succeed, one whose last tool fails."""
    out = []
    for sid, fail in (("sess-ok", False), ("sess-bad", True)):
        payloads: list[dict[str, Any]] = [
            {"hook_event_name": "UserPromptSubmit", "session_id": sid,
             "prompt": "build the gizmo with make"},
            {"hook_event_name": "PostToolUse", "session_id": sid, "tool_name": "Bash",
             "tool_use_id": f"{sid}-1", "tool_input": {"command": "make step1"},
             "tool_response": {"stdout": "ok", "stderr": ""}},
        ]  # fmt: skip
        if fail:
            payloads.append({"hook_event_name": "PostToolUseFailure", "session_id": sid,
                             "tool_name": "Bash", "tool_use_id": f"{sid}-2",
                             "tool_input": {"command": "make step2"},
                             "error": f"make: *** [step2] Error 2 {HOSTILE}"})  # fmt: skip
        payloads.append({"hook_event_name": "Stop", "session_id": sid})
        out.append(payloads)
    return out


def command_hook(store: str) -> Callable[[dict[str, Any]], None]:
    def send(payload: dict[str, Any]) -> None:
        subprocess.run([EVOLOG, "--store", store, "hook", "claude-code"],
                       input=json.dumps(payload), capture_output=True, text=True,
                       check=True, timeout=60)  # fmt: skip

    return send


def build_store(store: str, send: Callable[[dict[str, Any]], None] | None = None) -> None:
    """Notes (one hostile), two sessions through ``send`` (default: the command hook)."""
    with Memory(store) as memory:
        memory.remember("proj", NOTE)
        memory.remember("scratch", f"a note that says {HOSTILE}")
    hook = send or command_hook(store)
    for session in sessions():
        for payload in session:
            hook(payload)


def dream(store: str) -> None:
    subprocess.run([EVOLOG, "--store", store, "dream"], capture_output=True, check=True,
                   timeout=120)  # fmt: skip


def events(store: str) -> list[dict[str, Any]]:
    out = subprocess.run([EVOLOG, "--store", store, "replay"], capture_output=True, text=True,
                         check=True, timeout=60).stdout  # fmt: skip
    return [json.loads(line) for line in out.splitlines()]


def ledger_entry(store: str, entry: str) -> dict[str, Any]:
    from evolog.projections import ledger

    e = ledger(store).entry(entry)
    assert e is not None, f"{entry} has no ledger entry"
    return {"alive": e.alive, "cause": e.cause, "pinned": e.pinned}
