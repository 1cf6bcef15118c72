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
PermissionDenied   a step that did not run and a signal ``permission_denied``
Stop               outcome of the open attempt on its evidence (:mod:`._credit`): steps
                   for calls that never ran, then ``success``, ``failed``, ``denied``,
                   ``interrupted`` or ``unknown``; a failed one's constraints; a
                   success that overcame a failed call, its lesson (opt-in:
                   :mod:`evolog.hook._reflect`)
StopFailure        outcome ``api_error``
SessionEnd         outcome ``abandoned`` for an attempt still open; cold branches of
                   memory notes archived (:func:`evolog.hook._recall.archive`)
=================  ==========================================================

What a step keeps of prompts, tool inputs and results is the content policy of
:mod:`evolog.hook._content` (default: no tool results, only their size and hash; secrets
redacted). It never breaks the agent: it always exits 0; a payload it could not record goes
to the dead letter and stderr gets one line saying where (or that it could not be kept).
Nor does it keep the agent waiting: when another process holds the store's write lock (a
stopped writer, say) it gives up once ``EVOLOG_HOOK_LOCK_TIMEOUT`` seconds (default 2) have
passed since it started, and the payload goes to the dead letter.
Which attempt is open is kept per session (:mod:`evolog.hook._files`); capture paused for
the session or its project (:mod:`evolog.hook._controls`) records nothing.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from typing import Any

import msgspec

from evolog.eventlog import (
    Attempt,
    Constraint,
    Event,
    EventLog,
    Signal,
    Step,
    init_store,
)

from ._content import (
    MAX_TEXT,
    content_policy,
    input_summary,
    kept,
    redact,
    result_summary,
    text_for,
    tool_failure,
)
from ._controls import paused
from ._credit import (
    HOOK_PREFIX,
    MAX_SIGNALS,
    SessionState,
    close_attempt,
    deny,
    keep_pending,
    observe,
    reset_evidence,
)
from ._files import keep_dead_letter, locked_state, prune_states, state_dir, state_name
from ._recall import Injection, archive, for_prompt, for_session, output, warm
from ._reflect import note_call

__all__ = ["MAX_TEXT", "answer_claude_code", "handle_claude_code", "record_claude_code", "run_hook"]

ATTEMPT_LINE = (
    "(evolog: this task is attempt {}; to report how it ended, call record_outcome "
    "with that action_id)"
)
"""The block's last line, naming the attempt it serves (see :mod:`._credit`)."""
MAX_STARTED = 256
"""Tool calls remembered as started (PreToolUse without its PostToolUse yet) per session."""
MAX_CONSTRAINT = 300
"""Characters of a failed tool's constraint (action and error) kept."""
MAX_PAYLOAD_BYTES = 64 << 20
"""Most bytes of one hook payload read from stdin."""
LOCK_TIMEOUT_S = 2.0
"""Seconds a hook waits in all for the store's write lock (``EVOLOG_HOOK_LOCK_TIMEOUT``)."""
_KNOWN = frozenset(
    {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure",
     "PermissionDenied", "Stop", "StopFailure", "SessionEnd"}
)  # fmt: skip
_CLOSING = frozenset({"Stop", "StopFailure", "SessionEnd"})
_State = SessionState


def run_hook(agent_kind: str, store: str) -> int:
    """Record one payload from stdin; always 0 (the agent must never see a failing hook)."""
    raw = b""
    try:
        policy, warning = content_policy()
        if warning:
            _say(f"evolog hook: {warning}")
        raw = _read_payload(sys.stdin.buffer)
        payload = msgspec.json.decode(raw)
        if not isinstance(payload, dict):
            raise ValueError(f"expected a JSON object; got {type(payload).__name__}")
        answer = answer_claude_code(payload, store, policy)
    except BaseException as exc:  # even Ctrl-C or SystemExit: keep the payload, exit 0
        if isinstance(exc, _PayloadTooLarge):
            raw = exc.head
        with contextlib.suppress(BaseException):
            dead_letter(store, raw, exc)
        return 0
    if answer:
        with contextlib.suppress(BaseException):
            sys.stdout.buffer.write(answer)
            sys.stdout.flush()
    return 0


def answer_claude_code(payload: dict[str, Any], store: str, policy: str = "summary") -> bytes:
    """Record one payload and return the hook's JSON answer (b"" for none): what the command
    hook prints, and what the worker answers an http hook with."""
    _, context = handle_claude_code(payload, store, policy)
    return output(str(payload.get("hook_event_name")), context) if context else b""


def _read_payload(stream: Any) -> bytes:
    """stdin in bounded reads, refused past :data:`MAX_PAYLOAD_BYTES` (``/dev/zero``, a
    runaway producer) before it is all in memory."""
    chunks: list[bytes] = []
    size = 0
    while chunk := stream.read(min(1 << 20, MAX_PAYLOAD_BYTES + 1 - size)):
        size += len(chunk)
        if size > MAX_PAYLOAD_BYTES:
            # The dead letter keeps the start of what was read (it cuts every entry).
            chunks.append(chunk[:1024])
            raise _PayloadTooLarge(b"".join(chunks)[:65536])
        chunks.append(chunk)
    return b"".join(chunks)


class _PayloadTooLarge(ValueError):
    def __init__(self, head: bytes) -> None:
        self.head = head
        super().__init__(
            f"stdin: expected a hook payload of at most {MAX_PAYLOAD_BYTES} bytes; got more"
        )


def dead_letter(store: str, raw: bytes, exc: BaseException) -> None:
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
    return handle_claude_code(payload, store, policy)[0]


def handle_claude_code(
    payload: dict[str, Any], store: str, policy: str = "summary"
) -> tuple[list[int], str]:
    """Append the events for one hook payload; return their seqs and the context to inject
    (at ``SessionStart`` and ``UserPromptSubmit``; "" for none)."""
    deadline = time.monotonic() + _lock_timeout()
    event_name = str(payload.get("hook_event_name") or "")
    paths = init_store(store)
    if event_name not in _KNOWN:
        return [], ""
    session = str(payload.get("session_id") or "unknown")
    directory = state_dir(paths.root)
    if paused(paths.root, session, str(payload.get("cwd") or "")):
        return _paused(paths.root, directory, session, deadline), ""
    if event_name in ("SessionStart", "SessionEnd"):
        prune_states(directory)
    # Reading (recall) takes no lock; the appends below open their own bounded writer.
    with EventLog(paths.root) as reader:
        if event_name == "SessionStart":  # no attempt is involved: leave the state alone
            events = _events_for(event_name, payload, session, _State(), policy)
            env = {"agent": "claude-code", "session": session}
            got = for_session(reader, str(payload.get("cwd") or ""), env, _left(deadline) * 0.75)
            events.extend([got.event] if got.event is not None else [])
            return _append(paths.root, events, deadline), got.text
        with locked_state(os.path.join(directory, state_name(session)), _State) as held:
            held.state.cwd = str(payload.get("cwd") or held.state.cwd)[:4096]
            held.state.session = session
            # Stop forgets the attempt's evidence; a reflection reads it after.
            before = msgspec.structs.replace(held.state)
            events = _events_for(event_name, payload, session, held.state, policy)
            got = Injection()
            if event_name == "UserPromptSubmit":
                events, got = _inject(reader, payload, held.state, events, deadline)
            elif event_name == "Stop" and before.overcome:
                events.extend(_reflection(reader, before, events, deadline))
            elif event_name == "SessionEnd":  # Living Memory's root-level compression
                env = {"agent": "claude-code", "session": session}
                events.extend(archive(reader, env, _left(deadline) * 0.5))
            # The session is over: its state has nothing left worth keeping. After Stop it
            # keeps the signals the session saw, for the next attempt.
            held.remove = event_name == "SessionEnd"
            seqs = _append(paths.root, events, deadline)
        if event_name in _CLOSING:
            warm(reader, _left(deadline))
        return seqs, got.text


def _left(deadline: float) -> float:
    return max(deadline - time.monotonic(), 0.0)


def _reflection(log: EventLog, st: _State, events: list[Event], deadline: float) -> list[Event]:
    """A lesson for an attempt that ended ``success`` after overcoming a failure (opt-in)."""
    from evolog.eventlog import Outcome

    from ._reflect import reflect

    done = next((e for e in events if isinstance(e, Outcome)), None)
    if done is None or done.status != "success":
        return []
    env = {"agent": "claude-code", "session": st.session}
    return reflect(log, st, done.action_id, env, _left(deadline) * 0.5)


def _inject(
    log: EventLog, payload: dict[str, Any], st: _State, events: list[Event], deadline: float
) -> tuple[list[Event], Injection]:
    """Recall for the prompt; the new attempt names what was injected."""
    attempt = events[-1]
    prompt = payload.get("prompt")
    if not isinstance(attempt, Attempt) or not isinstance(prompt, str) or not prompt.strip():
        return events, Injection()
    env = {"agent": attempt.agent, "session": attempt.session}
    # The block names the attempt it serves, so an MCP record_outcome can join it (one
    # task, one outcome) instead of opening another. The line goes inside the block, whose
    # budget leaves room for it, and the id (it holds Claude Code's session id) is shown
    # as any other recorded text is.
    from evolog.advice.recall import FOOTER
    from evolog.projections.memory import safe_text

    line = ATTEMPT_LINE.format(safe_text(attempt.action_id, 200))
    got = for_prompt(
        log, prompt, attempt.action_id, env, _left(deadline) * 0.75, reserve=len(line) + 1
    )
    if got.event is None:
        return events, got
    text = f"{got.text.removesuffix(FOOTER)}{line}\n{FOOTER}"
    recorded = msgspec.structs.replace(got.event, chars=len(text))
    got = msgspec.structs.replace(got, text=text, event=recorded)
    st.decided = list(got.decided)
    st.supported = [i for i in got.supported if i not in st.decided]
    attempt = msgspec.structs.replace(
        attempt,
        decided_by=st.decided,
        supported_by=st.supported,
        gene=st.decided[0] if st.decided else None,
    )
    return [*events[:-1], attempt, recorded], got


def _append(root: str, events: list[Event], deadline: float) -> list[int]:
    if not events:
        return []
    with EventLog(root, auto_seal="background", lock_timeout=_left(deadline)) as log:
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
        source = _short(p.get("source", "unknown"), 64)
        return [Signal(signals=["session_start", f"source:{source}"], **env)]
    if name == "UserPromptSubmit":
        out = close_attempt(st, "interrupted", "a new prompt arrived before Stop", env)
        return [*out, _open(st, text_for(p.get("prompt"), policy), env)]
    if name == "PreToolUse":
        opened: list[Event] = [] if st.action_id else [_open(st, None, env)]
        tool_id = str(p.get("tool_use_id") or p.get("tool_name") or "")
        st.started[tool_id] = time.time_ns() // 1000
        st.names[tool_id] = _short(p.get("tool_name") or "unknown", 200)
        if len(st.started) > MAX_STARTED:  # calls whose PostToolUse never came
            oldest = min(st.started, key=st.started.__getitem__)
            del st.started[oldest]
            st.names.pop(oldest, None)
        return opened
    if name in ("PostToolUse", "PostToolUseFailure", "PermissionDenied"):
        return _tool_events(name, p, st, env, policy)
    if name == "Stop":
        return close_attempt(st, "", "", env, evidence=True)
    if name == "StopFailure":
        error = _short(p.get("error") or "unknown", 64)
        return close_attempt(st, "api_error", f"the turn ended on an API error ({error})", env)
    reason = _short(p.get("reason", "unknown"), 200)
    return close_attempt(st, "abandoned", f"session ended ({reason})", env)


def _short(value: Any, n: int) -> str:
    """A short payload field (a tool name, a reason) as kept: redacted like free text."""
    return redact(str(value)[: 4 * n])[:n]


def _open(st: _State, task: str | None, env: dict[str, Any]) -> Attempt:
    reset_evidence(st)
    st.task = (task or "")[:400]
    st.turn += 1
    st.action_id = f"{HOOK_PREFIX}{env['session']}-{st.turn}-{time.time_ns() // 1000}"
    # The attempt is about what the session saw before it (errors of an earlier turn).
    st.carried = st.seen[-MAX_SIGNALS:]
    return Attempt(id=st.action_id, action_id=st.action_id, task=task, signals=st.carried, **env)


def _paused(root: str, directory: str, session: str, deadline: float) -> list[int]:
    """Capture is paused: record nothing, but close an attempt left open (no credit)."""
    path = os.path.join(directory, state_name(session))
    if not os.path.exists(path):
        return []
    with locked_state(path, _State) as held:
        env = {"agent": "claude-code", "session": session}
        events = close_attempt(held.state, "unknown", "capture paused before the turn ended", env)
        held.remove = True
        return _append(root, events, deadline)


def _tool_events(
    name: str, p: dict[str, Any], st: _State, env: dict[str, Any], policy: str
) -> list[Event]:
    out: list[Event] = [] if st.action_id else [_open(st, None, env)]
    tool = _short(p.get("tool_name") or "unknown", 200)
    tool_id = str(p.get("tool_use_id") or tool)
    response = p.get("tool_response")
    if name == "PermissionDenied":
        failure: str | None = "permission denied: " + str(p.get("reason") or "no reason given")
        deny(st, tool)
    else:
        failure = tool_failure(response) if name == "PostToolUse" else _reported_failure(p)
        st.interrupted = st.interrupted or p.get("is_interrupt") is True
    error = None if failure is None else text_for(failure, policy) or "failed"
    started = st.started.pop(tool_id, None)
    st.names.pop(tool_id, None)
    now = time.time_ns() // 1000
    # Claude Code's own figure when it sends one: hook-to-hook time adds both hooks' start-up.
    own = _duration(p.get("duration_ms"))
    duration = own if own is not None else (now - started) / 1000 if started else None
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
            duration_ms=duration,
            **env,
        )
    )
    st.steps += 1
    if name == "PermissionDenied":  # not run: neither evidence of success nor of failure
        signals = ["permission_denied", f"tool_denied:{tool}"]
        observe(st, signals)
        out.append(Signal(signals=signals, **env))
        return out
    st.last_failed = error is not None
    note_call(st, tool, action, error)
    if error is None:
        st.ran_ok += 1
    else:
        st.ran_failed += 1
        signals = ["log_error", f"tool_error:{tool}", f"errsig:{error}"]
        observe(st, signals)
        out.append(Signal(signals=signals, **env))
        found = _constraints(st, action, error, env)
        keep_pending(st, [c for c in found if isinstance(c, Constraint)])
    return out


def _duration(value: Any) -> float | None:
    """Claude Code's ``duration_ms`` if it is a plausible one."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value) if 0 <= value < float("inf") else None
    return None


def _constraints(st: _State, action: str, error: str, env: dict[str, Any]) -> list[Event]:
    """A strategy the agent was told to follow just failed a tool: remember not to. The
    error is kept as its signature (type, exit code, status, first line): an error's prose
    is the tool's (a fetched page's, say), and a constraint is read back as a lesson."""
    if not st.decided:
        return []
    # Imported here: only a failure while following a recalled strategy pays for it.
    from evolog.projections.memory import error_signature, safe_text

    text = f"{safe_text(action, 160)} failed: {error_signature(error, 120)}"
    return [
        Constraint(
            node=node,
            trace=st.action_id or "",
            description=text[:MAX_CONSTRAINT],
            failure_class="tool_error",
            **env,
        )
        for node in st.decided
    ]


def _reported_failure(p: dict[str, Any]) -> str:
    """The error of a ``PostToolUseFailure`` payload (``error``; ``is_interrupt``)."""
    error = p.get("error") or p.get("error_message")
    text = error if isinstance(error, str) else msgspec.json.encode(error).decode() if error else ""
    if p.get("is_interrupt") is True:
        return f"interrupted: {text}" if text else "interrupted"
    return text or "failed"
