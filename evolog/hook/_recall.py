"""What the Claude Code hook injects, and the settings that install it.

``SessionStart`` injects the backbone and the project's notes (the branch named after the
session's working directory), ``UserPromptSubmit`` what :func:`evolog._recall.recall` finds
for the prompt; both within the budgets of the store's ``memory.json``. The items injected
for a prompt become the attempt's ``supported_by`` (and, for the best strategy among them
and every lesson, ``decided_by``; the strategy, or else the first lesson, is the ``gene``),
so the outcome at ``Stop`` credits them.

Injection may never break or stall the agent: the work runs under a wall-clock bound
(:func:`bounded` on the main thread, :func:`within` on any), and any failure or overrun
means "no context" (the payload is still recorded, and names no item the agent was not
shown). ``Stop`` refreshes the item index and the ledger's graveyard after appending
the outcome, so the next prompt's recall reads only the few events appended since.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Final, TypeVar

import msgspec

from evolog.eventlog import EventLog, Note, Recall

__all__ = [
    "Injection",
    "answer_by",
    "archive",
    "bounded",
    "for_prompt",
    "for_session",
    "output",
    "settings",
    "settings_text",
    "warm",
    "within",
    "worker_url",
]

_T = TypeVar("_T")
_answer = threading.local()

HOOK_EVENTS: Final = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    # A call auto mode's classifier refused, and a turn an API error ended: without them
    # the outcome is still honest (a call with no PostToolUse never ran), but their cause
    # is recorded for what it was.
    "PermissionDenied",
    "Stop",
    "StopFailure",
    "SessionEnd",
)
TOOL_EVENTS: Final = frozenset(
    {"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionDenied"}
)


class Injection(msgspec.Struct, frozen=True):
    """The context to print, the ``recall`` event that records it, and the provenance."""

    text: str = ""
    event: Recall | None = None
    decided: list[str] = []
    supported: list[str] = []


class _Overrun(Exception):
    pass


@contextlib.contextmanager
def bounded(seconds: float) -> Iterator[None]:
    """Raise inside the block once ``seconds`` have passed (main thread only; elsewhere
    the block runs unbounded). Only read-only work may run under it."""
    if seconds <= 0:
        raise _Overrun("no time left")
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _alarm(signum: int, frame: object) -> None:
        raise _Overrun(f"injection took longer than {seconds:.2f} s")

    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@contextlib.contextmanager
def answer_by(deadline: float) -> Iterator[None]:
    """Injection on this thread gives up at ``deadline`` (``time.monotonic()``), when the
    worker's answer is due, in place of the command hook's own bound."""
    _answer.deadline = deadline
    try:
        yield
    finally:
        _answer.deadline = None


def within(seconds: float, work: Callable[[], _T]) -> _T:
    """``work()``, or :class:`_Overrun` once ``seconds`` (or the thread's :func:`answer_by`)
    have passed. On the main thread SIGALRM interrupts it; elsewhere (the worker) nothing
    can, so it runs on a thread of its own and is abandoned when late: it only reads, and
    what it finds is dropped, so the attempt never names what the agent was not shown."""
    if threading.current_thread() is threading.main_thread():
        with bounded(seconds):
            return work()
    deadline: float | None = getattr(_answer, "deadline", None)
    if deadline is not None:
        # The worker's bound is its answer's due time: the command hook's share of the lock
        # timeout is sized for a process that must exit, and a worker's first recall after
        # a dream loads readers a warm one keeps.
        seconds = deadline - time.monotonic()
    if seconds <= 0:
        raise _Overrun("no time left")
    box: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            box.append((True, work()))
        except BaseException as exc:
            box.append((False, exc))

    thread = threading.Thread(target=run, name="evolog-recall", daemon=True)
    thread.start()
    thread.join(seconds)
    if not box:
        raise _Overrun(f"injection took longer than {seconds:.2f} s")
    ok, value = box[0]
    if not ok:
        raise value
    result: _T = value
    return result


def _index(log: EventLog) -> Any:
    from evolog.projections.memory import ItemIndex

    return ItemIndex(log.paths)


def for_prompt(
    log: EventLog,
    prompt: str,
    action_id: str,
    env: dict[str, Any],
    seconds: float,
    reserve: int = 0,
) -> Injection:
    """Recall for a prompt (nothing on any problem); the event is left to the caller.

    ``reserve``: characters of the budget kept for a line the caller adds to the block."""
    from evolog import digest, recall
    from evolog.advice import MAX_TASK_CHARS
    from evolog.projections.memory import LESSON, STRATEGY, load_config

    # A pasted log or file can make a prompt longer than any query may be (recall refuses
    # it). What it pastes would drown the task in the embedding anyway, so such a prompt is
    # recalled on its first line, where people state what they want.
    query = prompt
    if len(prompt) > MAX_TASK_CHARS:
        query = next((line for line in prompt.splitlines() if line.strip()), "")[:1000]

    def work() -> Any:
        cfg = load_config(log.path)
        return recall(
            log,
            _index(log),
            query,
            budget_chars=max(0, cfg.prompt_budget_chars - reserve),
            record=False,
            config=cfg,
            url=worker_url(log.path),
        )

    try:
        result = within(seconds, work)
    except Exception:
        return Injection()
    if not result.text:
        return Injection()
    ids = [i.id for i in result.items]
    # A lesson injected decides with the strategy: it was written as advice to follow, and
    # credited as a mere supporter it would need four times the failures to die.
    lessons = [i.id for i in result.items if i.kind == LESSON]
    decided = [i.id for i in result.items if i.kind == STRATEGY][:1] + lessons
    event = Recall(
        digest=digest(prompt),
        items=ids,
        scores=[i.score for i in result.items],
        action_id=action_id,
        chars=len(result.text),
        budget=result.budget,
        encoder=result.encoder,
        **env,
    )
    return Injection(result.text, event, decided, ids)


def worker_url(root: str) -> str:
    """Where this store's worker answers ("" when none runs): the block names it as a
    place to fetch details from, beside the MCP tool."""
    from evolog.worker import running

    try:
        record = running(root)
    except Exception:
        return ""
    return f"http://{record.host}:{record.port}" if record is not None and record.ready else ""


def for_session(log: EventLog, cwd: str, env: dict[str, Any], seconds: float) -> Injection:
    """The backbone and the project's notes at a session's start."""
    from evolog import digest, session_items
    from evolog.advice.recall import render
    from evolog.projections.memory import load_config

    project = os.path.basename(os.path.normpath(cwd)) if cwd else ""

    def work() -> tuple[Any, list[Any], str, int]:
        cfg = load_config(log.path)
        index = _index(log)
        with log.snapshot() as snap:
            ids = session_items(index, snap, log, [project] if project else [])
            fold = index.fold
            dead = index.dead_entries(log, snap) if ids else frozenset()
        items = [fold.state.items[i] for i in ids if i not in dead]
        counts = [fold.evidence(i) for i in items]
        return (cfg, items, *render(items, cfg.session_budget_chars, counts=counts))

    try:
        cfg, items, text, kept = within(seconds, work)
    except Exception:
        return Injection()
    if not text:
        return Injection()
    ids = [i.id for i in items[:kept]]
    event = Recall(
        digest=digest(f"session:{project}"),
        items=ids,
        scores=[1.0] * len(ids),
        chars=len(text),
        budget=cfg.session_budget_chars,
        **env,
    )
    return Injection(text, event, [], ids)


def archive(log: EventLog, env: dict[str, Any], seconds: float) -> list[Note]:
    """The archive notes of cold branches at a session's end (nothing on any problem)."""
    from evolog.eventlog import new_id
    from evolog.projections.memory import archive_notes, load_config

    try:
        with bounded(seconds):
            cfg = load_config(log.path)
            index = _index(log)
            with log.snapshot() as snap:
                fold = index.refresh(snap, log)
            notes = archive_notes(fold, cfg)
    except Exception:
        return []
    return [msgspec.structs.replace(n, id=new_id(), **env) for n in notes]


def warm(log: EventLog, seconds: float) -> None:
    """Bring the item index and its graveyard to the head and keep them (after ``Stop``),
    and the router's caches when there are strategies."""
    from evolog.projections.memory import STRATEGY

    with contextlib.suppress(Exception), bounded(seconds):
        index = _index(log)
        dead: frozenset[str] = frozenset()
        with log.snapshot() as snap:
            fold = index.refresh(snap, log)
            if fold.state.items:
                dead = frozenset(index.dead_entries(log, snap))
            index.save(snap)
        if any(i.kind == STRATEGY for i in fold.state.items.values()):
            from evolog import routed_strategy

            # The router's vector index and null sample are caches too: built here, the
            # next prompt's route reads them instead of embedding.
            routed_strategy(log, "warm the router's caches", dead=dead)


def output(event_name: str, text: str) -> bytes:
    """Claude Code's hook output carrying ``text`` as additional context."""
    body = {"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": text}}
    return msgspec.json.encode(body) + b"\n"


def settings_text(command: str = "evolog hook claude-code", store: str = "~/.evolog") -> str:
    """:func:`settings` as the README shows it: one line per hook event."""
    import json

    hooks = settings(command, store)["hooks"]
    lines = [
        f"    {json.dumps(name) + ':':<22}{json.dumps(value)}" for name, value in hooks.items()
    ]
    return '{\n  "hooks": {\n' + ",\n".join(lines) + "\n  }\n}"


def settings(command: str = "evolog hook claude-code", store: str = "~/.evolog") -> dict[str, Any]:
    """The ``~/.claude/settings.json`` hooks block that installs recording and recall."""
    hooks: dict[str, Any] = {}
    for name in HOOK_EVENTS:
        entry: dict[str, Any] = {
            "hooks": [{"type": "command", "command": f"EVOLOG_STORE={store} {command}"}]
        }
        hooks[name] = [{"matcher": "*", **entry} if name in TOOL_EVENTS else entry]
    return {"hooks": hooks}
