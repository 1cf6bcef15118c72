"""``evolog hook claude-code``: record a Claude Code hook payload (JSON on stdin).

=================  ==========================================================
hook event         events appended
=================  ==========================================================
SessionStart       signal ``session_start``, ``source:<startup|resume|...>``
UserPromptSubmit   attempt (task = the prompt); an attempt still open is closed
                   first with outcome ``interrupted``
PreToolUse         an attempt if none is open (a tool call outside a prompt)
PostToolUse        step (tool, input summary, result, ok, duration); when the tool
                   failed, also a signal ``log_error``, ``tool_error:<tool>``,
                   ``errsig:<message>``
PostToolUseFailure the same as a failed PostToolUse
Stop               outcome of the open attempt: ``failed`` if its last tool step
                   failed, else ``success`` (a heuristic, noted in the outcome)
SessionEnd         outcome ``abandoned`` for an attempt still open
=================  ==========================================================

It never breaks the agent: on any error it exits 0, writes one line to stderr and keeps the
payload in ``dead-letter.ndjson`` in the store. Which attempt is open is kept per session in
``hooks/claude-code/<session>.json`` (a small cache under an flock; if it is lost, the next
prompt simply opens a new attempt).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import sys
import time
from typing import Any

import msgspec

from eventlog import Attempt, Event, EventLog, Outcome, Signal, Step, init_store
from eventlog._store import Paths

MAX_TEXT = 2000
_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


class _State(msgspec.Struct):
    action_id: str | None = None
    turn: int = 0
    steps: int = 0
    last_failed: bool = False
    started: dict[str, int] = {}


def run_hook(agent_kind: str, store: str) -> int:
    raw = b""
    try:
        raw = sys.stdin.buffer.read()
        payload = msgspec.json.decode(raw)
        if not isinstance(payload, dict):
            raise ValueError(f"expected a JSON object; got {type(payload).__name__}")
        record_claude_code(payload, store)
    except BaseException as exc:  # the agent must never see a failing hook
        if isinstance(exc, KeyboardInterrupt):
            return 0
        _dead_letter(store, raw, exc)
    return 0


def _dead_letter(store: str, raw: bytes, exc: BaseException) -> None:
    msg = f"{type(exc).__name__}: {exc}".replace("\n", " ")[:500]
    print(f"evolog hook: not recorded ({msg}); payload kept in dead-letter.ndjson", file=sys.stderr)
    with contextlib.suppress(BaseException):
        paths = Paths.of(store)
        os.makedirs(paths.root, exist_ok=True)
        line = msgspec.json.encode(
            {
                "at_us": time.time_ns() // 1000,
                "error": msg,
                "payload": raw.decode("utf-8", "replace"),
            }
        )
        with open(paths.dead_letter, "ab") as f:
            f.write(line + b"\n")


def record_claude_code(payload: dict[str, Any], store: str) -> list[int]:
    """Append the events for one hook payload; return their seqs."""
    event_name = str(payload.get("hook_event_name") or "")
    session = str(payload.get("session_id") or "unknown")
    paths = init_store(store)
    state_path = _state_path(paths, session)
    with _locked_state(state_path) as state:
        events = _events_for(event_name, payload, session, state)
        if not events:
            return []
        with EventLog(paths.root, auto_seal="background") as log:
            return log.append_many(events)


def _events_for(name: str, p: dict[str, Any], session: str, st: _State) -> list[Event]:
    env: dict[str, Any] = {"agent": "claude-code", "session": session}
    if name == "SessionStart":
        return [Signal(signals=["session_start", f"source:{p.get('source', 'unknown')}"], **env)]
    if name == "UserPromptSubmit":
        out = _close(st, "interrupted", "a new prompt arrived before Stop", env)
        return [*out, _open(st, _text(p.get("prompt")), env)]
    if name == "PreToolUse":
        tool_id = str(p.get("tool_use_id") or p.get("tool_name") or "")
        st.started[tool_id] = time.time_ns() // 1000
        return [] if st.action_id else [_open(st, None, env)]
    if name in ("PostToolUse", "PostToolUseFailure"):
        return _tool_events(name, p, st, env)
    if name == "Stop":
        status = "failed" if st.last_failed else "success"
        return _close(st, status, "inferred at Stop from the last tool result", env)
    if name == "SessionEnd":
        return _close(st, "abandoned", f"session ended ({p.get('reason', 'unknown')})", env)
    return []


def _open(st: _State, task: str | None, env: dict[str, Any]) -> Attempt:
    st.turn += 1
    st.steps = 0
    st.last_failed = False
    st.action_id = f"cc-{env['session']}-{st.turn}-{time.time_ns() // 1000}"
    return Attempt(id=st.action_id, action_id=st.action_id, task=task, **env)


def _close(st: _State, status: str, note: str, env: dict[str, Any]) -> list[Event]:
    if not st.action_id:
        return []
    action_id, st.action_id = st.action_id, None
    score = {"success": 0.6, "failed": 0.2}.get(status)
    return [
        Outcome(
            id=f"{action_id}-outcome",
            action_id=action_id,
            status=status,
            score=score,
            note=note,
            **env,
        )
    ]


def _tool_events(name: str, p: dict[str, Any], st: _State, env: dict[str, Any]) -> list[Event]:
    out: list[Event] = [] if st.action_id else [_open(st, None, env)]
    tool = str(p.get("tool_name") or "unknown")
    tool_id = str(p.get("tool_use_id") or tool)
    response = p.get("tool_response")
    error = _failure(response) if name == "PostToolUse" else _text(p.get("error")) or "failed"
    started = st.started.pop(tool_id, None)
    now = time.time_ns() // 1000
    step_id = f"{st.action_id}-{p['tool_use_id']}" if p.get("tool_use_id") else ""
    out.append(
        Step(
            id=step_id,
            action_id=st.action_id or "",
            index=st.steps,
            tool=tool,
            action=_text(f"{tool} {_summary(p.get('tool_input'))}") or tool,
            result=_text(_summary(response)) or "",
            ok=error is None,
            error=error,
            duration_ms=(now - started) / 1000 if started else None,
            **env,
        )
    )
    st.steps += 1
    st.last_failed = error is not None
    if error is not None:
        signals = ["log_error", f"tool_error:{tool}", f"errsig:{error}"]
        out.append(Signal(signals=signals, **env))
    return out


def _failure(response: Any) -> str | None:
    """The error of a tool response, or None if it looks successful (documented heuristics)."""
    if isinstance(response, dict):
        if response.get("is_error") or response.get("success") is False:
            return _text(response.get("error") or response.get("content") or "tool error")
        for key in ("exit_code", "exitCode", "returncode"):
            code = response.get(key)
            if isinstance(code, int) and code != 0:
                return _text(response.get("stderr") or f"exit code {code}")
        if response.get("interrupted"):
            return "interrupted"
        if isinstance(response.get("error"), str) and response["error"]:
            return _text(response["error"])
    if isinstance(response, str) and response.lstrip().lower().startswith("error"):
        return _text(response)
    return None


def _summary(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in ("command", "file_path", "path", "pattern", "url", "query", "stdout"):
            if isinstance(value.get(key), str):
                return str(value[key])
    return msgspec.json.encode(value).decode()


def _text(value: Any) -> str | None:
    if value is None:
        return None
    s = value if isinstance(value, str) else msgspec.json.encode(value).decode()
    return s if len(s) <= MAX_TEXT else s[: MAX_TEXT - 1] + "…"


def _state_path(paths: Paths, session: str) -> str:
    d = os.path.join(paths.root, "hooks", "claude-code")
    os.makedirs(d, exist_ok=True)
    return os.path.join(d, _SAFE.sub("_", session)[:128] + ".json")


@contextlib.contextmanager
def _locked_state(path: str) -> Any:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        # Parallel tool calls run hooks concurrently: one session's state is updated by one
        # process at a time.
        fcntl.flock(fd, fcntl.LOCK_EX)
        data = os.pread(fd, 1 << 20, 0)
        try:
            state = msgspec.json.decode(data, type=_State) if data.strip() else _State()
        except msgspec.MsgspecError:
            state = _State()
        yield state
        encoded = msgspec.json.encode(state)
        os.ftruncate(fd, 0)
        os.pwrite(fd, encoded, 0)
    finally:
        os.close(fd)
