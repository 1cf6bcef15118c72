"""Steering from the page, each an event appended through the server's writer (so it replays,
and a later retraction undoes it): forget, pin and unpin (``lifecycle``), edit a note (a
``note`` naming its item), undo a dream cycle and undo one of these (``retraction``).

Each is checked first against the state as of now, and refused with one line naming what
was wrong; a refused action appends nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from evolog.server import Problem

if TYPE_CHECKING:
    from evolog.eventlog import AnyEvent
    from evolog.server import AppState

#: The ``agent`` of every event the page appends (the steering list finds them by it).
AGENT = "evolog-ui"
OPS = ("edit", "forget", "pin", "retract", "undo", "unpin")
_MAX_NOTE = 20_000


class Action(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    op: str
    entry: str = ""
    item: str = ""
    branch: str = ""
    text: str = ""
    cycle: str = ""
    target: str = ""


def decode(body: bytes) -> Action:
    try:
        action = msgspec.json.decode(body, type=Action)
    except msgspec.ValidationError as exc:
        raise Problem(422, f"body: {exc}", "body") from None
    except msgspec.DecodeError as exc:
        raise Problem(
            400, f"body: expected a JSON object; got invalid JSON ({exc})", "body"
        ) from None
    if action.op not in OPS:
        raise Problem(422, f"op: expected one of {', '.join(OPS)}; got {action.op!r}", "op")
    return action


def _need(value: str, name: str, op: str) -> str:
    if not value.strip() or len(value) > 200:
        raise Problem(
            422, f"{name}: expected an id (1-200 characters) for {op}; got {value[:60]!r}", name
        )
    return value


def _lifecycle(state: AppState, a: Action) -> AnyEvent:
    from evolog.eventlog import Lifecycle
    from evolog.projections import ledger

    entry = _need(a.entry, "entry", a.op)
    e = ledger(state.store.paths.root).entry(entry)
    if e is None:
        raise Problem(404, f"entry: {entry!r} was never born in this log", "entry")
    if not e.alive:
        raise Problem(409, f"entry: {entry!r} is dead ({e.cause}); nothing is resurrected", "entry")
    if a.op == "forget" and e.pinned:
        raise Problem(
            409,
            f"entry: {entry!r} is pinned and a pinned entry never dies; unpin it first",
            "entry",
        )
    if a.op == "forget" and e.escrow:
        raise Problem(
            409, f"entry: {entry!r} is held in escrow by {e.escrow} pending decision(s)", "entry"
        )
    if a.op == "pin" and e.pinned:
        raise Problem(409, f"entry: {entry!r} is already pinned", "entry")
    if a.op == "unpin" and not e.pinned:
        raise Problem(409, f"entry: {entry!r} is not pinned", "entry")
    return Lifecycle(entry=entry, op=a.op, agent=AGENT)  # type: ignore[arg-type]


def _edit(state: AppState, a: Action) -> AnyEvent:
    from evolog.eventlog import Note

    item = _need(a.item, "item", "edit")
    if not a.text.strip() or len(a.text) > _MAX_NOTE:
        raise Problem(
            422,
            f"text: expected the note's new text (1-{_MAX_NOTE} characters); "
            f"got {len(a.text.strip())} characters",
            "text",
        )
    found = _one(
        state,
        "SELECT branch FROM notes WHERE coalesce(nullif(item, ''), id) = ? "
        "ORDER BY seq DESC LIMIT 1",
        item,
    )
    if found is None:
        raise Problem(404, f"item: no note {item!r} in this log", "item")
    return Note(item=item, text=a.text, branch=a.branch or found[0] or "", agent=AGENT)


def _one(state: AppState, sql: str, value: str) -> tuple[Any, ...] | None:
    from evolog.projections import Projections

    from ._timeline import _typed

    con = Projections(state.store.paths.root).connect(views={"events"})
    try:
        row: tuple[Any, ...] | None = con.execute(_typed(sql), [value]).fetchone()
        return row
    finally:
        con.close()


def _retract(state: AppState, a: Action) -> AnyEvent:
    from evolog.eventlog import Retraction

    target = _need(a.target, "target", "retract")
    found = _one(state, "SELECT kind, agent FROM events WHERE id = ?", target)
    if found is None:
        raise Problem(404, f"target: no event {target!r} in this log", "target")
    kind, agent = found
    if not (kind == "lifecycle" or (kind == "note" and agent == AGENT)):
        raise Problem(
            422,
            f"target: expected a lifecycle event or a note edited here; got a {kind} event",
            "target",
        )
    if _one(state, "SELECT 1 FROM retractions WHERE list_contains(targets, ?)", target):
        raise Problem(409, f"target: {target!r} was already undone", "target")
    return Retraction(targets=[target], reason="undone in evolog ui", agent=AGENT)


def prepare(state: AppState, a: Action) -> AnyEvent | None:
    """The event to append (checked), or None for a dream undo (appended by :func:`undo`)."""
    if a.op in ("forget", "pin", "unpin"):
        return _lifecycle(state, a)
    if a.op == "edit":
        return _edit(state, a)
    if a.op == "retract":
        return _retract(state, a)
    _need(a.cycle, "cycle", "undo")
    return None


def undo(state: AppState, cycle: str) -> list[str]:
    from evolog.dream import UndoError, undo_cycle

    try:
        events = undo_cycle(state.store.log, cycle, reason="undone in evolog ui")
    except UndoError as exc:
        raise Problem(409, f"cycle: {exc}", "cycle") from None
    return [e.id for e in events]


__all__ = ["AGENT", "OPS", "Action", "decode", "prepare", "undo"]
