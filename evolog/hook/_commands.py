"""``evolog pause|resume|forget|status``: the controls of what the hooks capture and recall.

``pause``/``resume`` stop and restart the Claude Code hook's capture for a session
(``--session ID``) or a project directory (``--project DIR``, default: the current one; its
sessions are those whose ``cwd`` is in it); see :mod:`evolog.hook._controls`.

``forget ITEM`` appends a ``prune`` naming the item (a note or a strategy): recall stops
using it, its events stay. ``forget --session ID`` appends one ``retraction`` of every event
the session recorded (attempts, steps, outcomes, recalls, notes): the ledger, the memory
graph and the item index then read the log as if the session had not happened, and the
history still shows what it was and that it was forgotten.

``status`` prints what the store holds (events by kind, memory items), what was injected
(the last prompts' ``recall`` events: characters and estimated tokens, about four
characters a token), which sessions hold an open attempt, what is paused, and the local
worker's state.
"""

from __future__ import annotations

import os
import sys
from collections import deque
from typing import TYPE_CHECKING, Any

from evolog.cli import print_json, store_path

if TYPE_CHECKING:
    import argparse

__all__ = ["add_control_commands"]

CHARS_PER_TOKEN = 4
"""The estimate of characters per token ``status`` divides by (English prose and code)."""
RECENT = 10


_DOCS = {
    "pause": (
        "Stop recording Claude Code sessions: those of a project directory (default: the\n"
        "current one) or one session. Their hooks record and inject nothing.",
        ("evolog pause", "evolog pause --session 3f2a-4c1d"),
    ),
    "resume": (
        "Record a paused project or session again.",
        ("evolog resume --project ~/src/myproj",),
    ),
    "forget": (
        "Stop recalling a memory item (a prune event), or forget every event a session\n"
        "recorded (one retraction): nothing is deleted, the history shows both.",
        ("evolog forget note-17", "evolog forget --session 3f2a-4c1d --reason 'private'"),
    ),
    "status": (
        "What is stored, what was injected per prompt (characters, estimated tokens),\n"
        "which sessions hold an open attempt, what is paused, and the worker's state.",
        ("evolog status --recent 3",),
    ),
}


def _doc(name: str) -> dict[str, Any]:
    from evolog.cli import parser_doc

    return parser_doc(*_DOCS[name])


def add_control_commands(sub: Any) -> None:
    """Register ``pause``, ``resume``, ``forget`` and ``status``."""
    for name, text in (
        ("pause", "stop recording Claude Code sessions (one, or a project's)"),
        ("resume", "record a paused session or project again"),
    ):
        s = sub.add_parser(name, help=text, **_doc(name))
        g = s.add_mutually_exclusive_group()
        g.add_argument("--session", help="a session id (see `evolog status`)")
        g.add_argument("--project", help="a project directory (default: the current one)")
        s.set_defaults(func=run_pause, pausing=name == "pause")
    text = "stop recalling an item, or a whole session's events (appends events; no deletion)"
    s = sub.add_parser("forget", help=text, **_doc("forget"))
    s.add_argument("item", nargs="?", help="a memory item id (see `evolog recall --format json`)")
    s.add_argument("--session", help="forget every event of this session instead")
    s.add_argument("--reason", default="", help="why (kept in the event; default: forgotten)")
    s.set_defaults(func=run_forget)
    text = "what is stored, injected, open, paused, and the worker's state"
    s = sub.add_parser("status", help=text, **_doc("status"))
    s.add_argument("--recent", type=int, default=RECENT, help="injections listed (default 10)")
    s.set_defaults(func=run_status)


def _error(message: str) -> int:
    print(f"evolog: error: {message}", file=sys.stderr)
    return 2


def _root(args: argparse.Namespace) -> str:
    from evolog.eventlog import Paths

    root = os.path.abspath(os.path.expanduser(store_path(args)))
    if not os.path.exists(Paths.of(root).marker):
        raise FileNotFoundError(2, "no evolog store here (`evolog init` creates one)", root)
    return root


def run_pause(args: argparse.Namespace) -> int:
    from ._controls import load_paused, save_paused

    root = _root(args)
    state = load_paused(root)
    if args.session is not None:
        if not args.session:
            return _error(f"{args.command}: --session: expected a session id; got ''")
        kind, value, held = "session", args.session, state.sessions
    else:
        project = os.path.normpath(os.path.abspath(args.project or os.getcwd()))
        kind, value, held = "project", project, state.projects
    if args.pausing and value not in held:
        held.append(value)
    elif not args.pausing:
        if value not in held:
            return _error(f"resume: {kind} {value!r} is not paused (see `evolog status`)")
        held.remove(value)
    save_paused(root, state)
    print_json({"paused": args.pausing, kind: value, "sessions": state.sessions,
                "projects": state.projects})  # fmt: skip
    return 0


def run_forget(args: argparse.Namespace) -> int:
    from evolog.eventlog import EventLog, Prune, Retraction

    if (args.item is None) == (args.session is None):
        return _error("forget: expected an item id or --session ID (one of them)")
    with EventLog(_root(args)) as log:
        if args.session is not None:
            targets = [
                e.id for e in log.replay() if e.session == args.session and e.id
            ]  # fmt: skip
            if not targets:
                return _error(f"forget: session {args.session!r} recorded no events here")
            reason = args.reason or f"forgotten: session {args.session}"
            seq = log.append(Retraction(targets=targets, reason=reason))
            print_json({"seq": seq, "session": args.session, "forgotten_events": len(targets)})
            return 0
        item = _item(log, args.item)
        if item is None:
            return _error(
                f"forget: no live memory item {args.item!r} (see `evolog recall --format json`)"
            )
        if item not in ("note", "lesson", "strategy"):
            return _error(
                f"forget: {args.item!r} is a {item}; expected a note, a lesson or a strategy "
                f"(a gene's evidence is its outcomes: `evolog forget --session` forgets those)"
            )
        seq = log.append(Prune(node=args.item, reason=args.reason or "forgotten"))
    print_json({"seq": seq, "item": args.item, "kind": item})
    return 0


def _item(log: Any, item_id: str) -> str | None:
    """The kind of a live note, lesson or strategy ``item_id`` (None: no such live item)."""
    from evolog.projections.memory import ItemIndex

    index = ItemIndex(log.paths)
    with log.snapshot() as snap:
        fold = index.refresh(snap, log)
        found = fold.state.items.get(item_id)
        if found is None or not found.active or item_id in index.dead_entries(log, snap):
            return None
    return str(found.kind)


def run_status(args: argparse.Namespace) -> int:
    from evolog.eventlog import EventLog, Recall

    if args.recent < 0:
        return _error(f"status: --recent: expected an integer >= 0; got {args.recent}")
    root = _root(args)
    with EventLog(root) as log:
        stats = log.stats()
        recent: deque[Recall] = deque(maxlen=args.recent)
        count = chars = 0
        for e in log.replay(kinds=["recall"]):
            if isinstance(e, Recall):
                recent.append(e)
                count += 1
                chars += e.chars
        items = _items(log)
    doc = {
        "store": root,
        "events": stats["events"],
        "kinds": stats["kinds"],
        "items": items,
        "injected": {
            "recalls": count,
            "chars": chars,
            "est_tokens": _tokens(chars),
            "recent": [_injection(e) for e in reversed(recent)],
        },
        "capture": _capture(root),
        "worker": _worker(root),
    }
    print_json(doc)
    return 0


def _tokens(chars: int) -> int:
    return -(-chars // CHARS_PER_TOKEN)


def _injection(e: Any) -> dict[str, Any]:
    return {"seq": e.seq, "ts": e.ts, "session": e.session, "action_id": e.action_id,
            "items": len(e.items), "chars": e.chars, "est_tokens": _tokens(e.chars)}  # fmt: skip


def _items(log: Any) -> dict[str, int]:
    """Live memory items by kind."""
    from evolog.projections.memory import ItemIndex

    index = ItemIndex(log.paths)
    with log.snapshot() as snap:
        fold = index.refresh(snap, log)
        dead = index.dead_entries(log, snap) if fold.state.items else frozenset()
    counts: dict[str, int] = {}
    for item in fold.state.items.values():
        if item.active and item.id not in dead:
            counts[str(item.kind)] = counts.get(str(item.kind), 0) + 1
    return counts


def _capture(root: str) -> dict[str, Any]:
    import msgspec

    from ._controls import load_paused
    from ._credit import SessionState
    from ._files import state_dir

    paused = load_paused(root)
    open_attempts = []
    directory = state_dir(root)
    for name in sorted(os.listdir(directory)) if os.path.isdir(directory) else []:
        try:
            with open(os.path.join(directory, name), "rb") as f:
                st = msgspec.json.decode(f.read(), type=SessionState)
        except (OSError, msgspec.MsgspecError):
            continue
        if st.action_id:
            entry = {"session": st.session, "action_id": st.action_id, "cwd": st.cwd}
            open_attempts.append({**entry, "steps": st.steps})
    return {"paused_sessions": paused.sessions, "paused_projects": paused.projects,
            "open_attempts": open_attempts}  # fmt: skip


def _worker(root: str) -> dict[str, Any]:
    try:
        from evolog.worker import status_of
    except ImportError:
        return {"running": False, "known": False}
    doc = status_of(root)
    doc.pop("store", None)
    return doc
