"""``evolog hook claude-code``: record a Claude Code hook payload (JSON on stdin).

=================  ==========================================================
hook event         events appended
=================  ==========================================================
SessionStart       signal ``session_start``, ``source:<startup|resume|...>``
UserPromptSubmit   attempt (task = the prompt); an attempt still open is closed
                   first with outcome ``interrupted``
PreToolUse         an attempt if none is open (a tool call outside a prompt)
PostToolUse        step (tool, input summary, result, ok, duration); when the tool
                   failed (see :func:`evolog.hook._content.tool_failure`), also a
                   signal ``log_error``, ``tool_error:<tool>``, ``errsig:<message>``
PostToolUseFailure a failed step and its error signal (``error``; ``is_interrupt``)
Stop               outcome of the open attempt: ``failed`` if its last tool step
                   failed, else ``success`` (a heuristic, noted in the outcome)
SessionEnd         outcome ``abandoned`` for an attempt still open
=================  ==========================================================

What a step keeps of prompts, tool inputs and results is the content policy of
:mod:`evolog.hook._content` (default: no tool results, only their size and hash; secrets
redacted). It never breaks the agent: it always exits 0; a payload it could not record goes
to the dead letter and stderr gets one line saying where (or that it could not be kept).
Nor does it keep the agent waiting: when another process holds the store's write lock (a
stopped writer, say) it gives up once ``EVOLOG_HOOK_LOCK_TIMEOUT`` seconds (default 2) have
passed since it started, and the payload goes to the dead letter.
Which attempt is open is kept per session (:mod:`evolog.hook._files`).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from typing import Any

import msgspec

from evolog.eventlog import Attempt, Event, EventLog, Outcome, Signal, Step, init_store

from ._content import (
    MAX_TEXT,
    content_policy,
    input_summary,
    kept,
    result_summary,
    text_for,
    tool_failure,
)
from ._files import keep_dead_letter, locked_state, prune_states, state_dir, state_name

__all__ = ["MAX_TEXT", "record_claude_code", "run_hook"]

MAX_STARTED = 256
"""Tool calls remembered as started (PreToolUse without its PostToolUse yet) per session."""
LOCK_TIMEOUT_S = 2.0
"""Seconds a hook waits in all for the store's write lock (``EVOLOG_HOOK_LOCK_TIMEOUT``)."""
_KNOWN = frozenset(
    {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure",
     "Stop", "SessionEnd"}
)  # fmt: skip


class _State(msgspec.Struct):
    action_id: str | None = None
    turn: int = 0
    steps: int = 0
    last_failed: bool = False
    started: dict[str, int] = {}


def run_hook(agent_kind: str, store: str) -> int:
    """Record one payload from stdin; always 0 (the agent must never see a failing hook)."""
    raw = b""
    try:
        policy, warning = content_policy()
        if warning:
            _say(f"evolog hook: {warning}")
        raw = sys.stdin.buffer.read()
        payload = msgspec.json.decode(raw)
        if not isinstance(payload, dict):
            raise ValueError(f"expected a JSON object; got {type(payload).__name__}")
        record_claude_code(payload, store, policy)
    except BaseException as exc:  # even Ctrl-C or SystemExit: keep the payload, exit 0
        with contextlib.suppress(BaseException):
            _dead_letter(store, raw, exc)
    return 0


def _dead_letter(store: str, raw: bytes, exc: BaseException) -> None:
    msg = (kept(f"{type(exc).__name__}: {exc}") or "").replace("\n", " ")[:500]
    try:
        path, why = keep_dead_letter(os.path.abspath(store), raw, msg)
    except Exception as err:  # the report below must still be honest
        path, why = None, f"{type(err).__name__}: {err}"
    if path is not None:
        _say(f"evolog hook: not recorded ({msg}); payload kept in {path}")
    else:
        _say(f"evolog hook: not recorded ({msg}); payload lost, no dead letter written ({why})")


def _say(line: str) -> None:
    """One line to stderr; a closed or broken stderr is silenced, never raised."""
    try:
        sys.stderr.write(line.replace("\n", " ") + "\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        # Point fd 2 at /dev/null so the interpreter's final flush of what is still buffered
        # cannot fail either (that would turn the exit status into 120).
        with contextlib.suppress(OSError):
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 2)
            os.close(null)


def record_claude_code(payload: dict[str, Any], store: str, policy: str = "summary") -> list[int]:
    """Append the events for one hook payload; return their seqs."""
    deadline = time.monotonic() + _lock_timeout()
    event_name = str(payload.get("hook_event_name") or "")
    paths = init_store(store)
    if event_name not in _KNOWN:
        return []
    session = str(payload.get("session_id") or "unknown")
    directory = state_dir(paths.root)
    if event_name in ("SessionStart", "SessionEnd"):
        prune_states(directory)
    if event_name == "SessionStart":  # no attempt is involved: leave the state alone
        events = _events_for(event_name, payload, session, _State(), policy)
        return _append(paths.root, events, deadline)
    with locked_state(os.path.join(directory, state_name(session)), _State) as held:
        events = _events_for(event_name, payload, session, held.state, policy)
        # The attempt is closed: the session's state has nothing left worth keeping.
        held.remove = event_name in ("Stop", "SessionEnd")
        return _append(paths.root, events, deadline)


def _append(root: str, events: list[Event], deadline: float) -> list[int]:
    if not events:
        return []
    left = max(deadline - time.monotonic(), 0.0)
    with EventLog(root, auto_seal="background", lock_timeout=left) as log:
        return log.append_many(events)


def _lock_timeout() -> float:
    raw = os.environ.get("EVOLOG_HOOK_LOCK_TIMEOUT", "")
    try:
        value = float(raw) if raw else LOCK_TIMEOUT_S
    except ValueError:
        return LOCK_TIMEOUT_S
    return value if 0 <= value < float("inf") else LOCK_TIMEOUT_S


def _events_for(name: str, p: dict[str, Any], session: str, st: _State, policy: str) -> list[Event]:
    env: dict[str, Any] = {"agent": "claude-code", "session": session}
    if name == "SessionStart":
        source = str(p.get("source", "unknown"))[:64]
        return [Signal(signals=["session_start", f"source:{source}"], **env)]
    if name == "UserPromptSubmit":
        out = _close(st, "interrupted", "a new prompt arrived before Stop", env)
        return [*out, _open(st, text_for(p.get("prompt"), policy), env)]
    if name == "PreToolUse":
        tool_id = str(p.get("tool_use_id") or p.get("tool_name") or "")
        st.started[tool_id] = time.time_ns() // 1000
        if len(st.started) > MAX_STARTED:  # calls whose PostToolUse never came
            del st.started[min(st.started, key=st.started.__getitem__)]
        return [] if st.action_id else [_open(st, None, env)]
    if name in ("PostToolUse", "PostToolUseFailure"):
        return _tool_events(name, p, st, env, policy)
    if name == "Stop":
        status = "failed" if st.last_failed else "success"
        return _close(st, status, "inferred at Stop from the last tool result", env)
    reason = str(p.get("reason", "unknown"))[:200]
    return _close(st, "abandoned", f"session ended ({reason})", env)


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


def _tool_events(
    name: str, p: dict[str, Any], st: _State, env: dict[str, Any], policy: str
) -> list[Event]:
    out: list[Event] = [] if st.action_id else [_open(st, None, env)]
    tool = str(p.get("tool_name") or "unknown")[:200]
    tool_id = str(p.get("tool_use_id") or tool)
    response = p.get("tool_response")
    failure = tool_failure(response) if name == "PostToolUse" else _reported_failure(p)
    error = None if failure is None else text_for(failure, policy) or "failed"
    started = st.started.pop(tool_id, None)
    now = time.time_ns() // 1000
    step_id = f"{st.action_id}-{p['tool_use_id']}" if p.get("tool_use_id") else ""
    action = f"{tool} {input_summary(p.get('tool_input'), policy)}".strip()
    out.append(
        Step(
            id=step_id,
            action_id=st.action_id or "",
            index=st.steps,
            tool=tool,
            action=action[:MAX_TEXT],
            result=result_summary(response, policy),
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


def _reported_failure(p: dict[str, Any]) -> str:
    """The error of a ``PostToolUseFailure`` payload (``error``; ``is_interrupt``)."""
    error = p.get("error") or p.get("error_message")
    text = error if isinstance(error, str) else msgspec.json.encode(error).decode() if error else ""
    if p.get("is_interrupt") is True:
        return f"interrupted: {text}" if text else "interrupted"
    return text or "failed"
