"""``fetch``: the details of memory items by the ids an injected block shows.

The block is an index (:mod:`advice.recall._block`): one line per item with a short id.
:func:`fetch` resolves those ids (a short id, or an item's full id), returns each item's
whole text, steps, constraints, tags and evidence, display-safe as the block is (every
text through :func:`~projections.memory._untrusted.safe_text`: what is fetched is recorded
data as much as what is shown), and, when ``record`` is set, appends one ``fetched`` event
naming them and the attempt they serve. That event is what credits an item as used when
the attempt's outcome arrives (:mod:`projections.memory._use`).

Any id that names no item is a one-line error naming it, and nothing is appended: a fetch
is recorded whole or not at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from evolog.eventlog import EventLog, Fetched
from evolog.projections import InvalidParameterError
from evolog.projections.memory import STRATEGY, ItemIndex

__all__ = ["MAX_IDS", "UnknownItemError", "fetch"]

MAX_IDS: Final = 32
"""Ids one fetch may ask for (a block holds fewer lines)."""
_MAX_ID: Final = 200
_TEXT: Final = 4000


class UnknownItemError(InvalidParameterError):
    """An id given to :func:`fetch` names no memory item (or more than one)."""


def _ids(ids: object) -> list[str]:
    if isinstance(ids, str) or not isinstance(ids, Sequence):
        raise InvalidParameterError(f"ids: expected a list of item ids; got {ids!r:.80}")
    if not ids:
        raise InvalidParameterError("ids: expected at least one item id; got an empty list")
    if len(ids) > MAX_IDS:
        raise InvalidParameterError(f"ids: expected at most {MAX_IDS} ids; got {len(ids)}")
    out: list[str] = []
    for n, i in enumerate(ids):
        if not isinstance(i, str) or not i.strip() or len(i) > _MAX_ID:
            raise InvalidParameterError(
                f"ids[{n}]: expected an item id of 1 to {_MAX_ID} characters; got {i!r:.80}"
            )
        out.append(i.strip())
    return list(dict.fromkeys(out))


def _resolve(fold: Any, asked: list[str]) -> list[Any]:
    """The item (or gene item) each asked id names, in order."""
    from evolog.advice.recall import short_id
    from evolog.projections.memory import peek

    st = fold.state
    found: dict[str, Any] = {}
    want = set()
    for a in asked:
        item = peek(st.items, a) or peek(st.genes, a)
        if item is not None:
            found[a] = item
        else:
            want.add(a)
    if want:
        # A short id is a digest of the full one: matched over the ids, not the records.
        by_short: dict[str, list[tuple[str, str]]] = {}
        for table, keys in (("items", st.items), ("genes", st.genes)):
            for key in keys:
                s = short_id(key)
                if s in want:
                    by_short.setdefault(s, []).append((table, key))
        for a in sorted(want):
            hits = [peek(getattr(st, t), k) for t, k in by_short.get(a, [])]
            live = [h for h in hits if h.active] or hits
            if len(live) > 1:
                names = ", ".join(sorted(h.id for h in live)[:4])
                raise UnknownItemError(
                    f"ids: {a!r} names {len(live)} items ({names}); give the full id"
                )
            if live:
                found[a] = live[0]
    missing = [a for a in asked if a not in found]
    if missing:
        shown = ", ".join(repr(m[:40]) for m in missing[:5])
        raise UnknownItemError(
            f"ids: expected ids of memory items, as the recall block shows them; no item is"
            f" named {shown}"
        )
    return [found[a] for a in asked]


def fetch(
    log: EventLog,
    index: ItemIndex,
    ids: Sequence[str],
    *,
    action_id: str = "",
    via: str = "",
    record: bool = True,
    envelope: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The details of the items ``ids`` name, as JSON; with ``record``, one ``fetched``
    event (``action_id``: the attempt the fetch serves) whose seq is ``recorded``."""
    from evolog.advice.recall import FOOTER, HEADER, entry_text, short_id
    from evolog.projections.memory import safe_text

    asked = _ids(ids)
    if not isinstance(action_id, str) or len(action_id) > 1000:
        raise InvalidParameterError(
            f"action_id: expected text of at most 1000 characters; got {action_id!r:.80}"
        )

    def read() -> list[tuple[Any, tuple[int, int, int]]]:
        with log.snapshot() as snap:
            fold = index.refresh(snap, log)
            index.save_if_due(snap)
        return [(i, fold.evidence(i)) for i in _resolve(fold, asked)]

    found = index.guarded(read)
    items: list[dict[str, Any]] = []
    text = []
    for item, (h, x, n) in found:
        ident = short_id(item.id)
        text.append(entry_text(item, ident, (h, x, n)))
        items.append(
            {
                "id": item.id,
                "short_id": ident,
                "kind": item.kind,
                "branch": safe_text(item.branch, _TEXT),
                "active": bool(item.active),
                "text": safe_text(item.text, _TEXT),
                "tags": [safe_text(t, _TEXT) for t in item.tags],
                "steps": [safe_text(s, _TEXT) for s in item.steps],
                "constraints": [safe_text(c, _TEXT) for c in item.constraints],
                "tries": list(item.tries) if item.kind == STRATEGY else [],
                "helpful": h,
                "harmful": x,
                "neutral": n,
            }
        )
    block = HEADER + "".join(text) + FOOTER
    seq = None
    if record:
        event = Fetched(
            asked=asked,
            items=[i["id"] for i in items],
            action_id=action_id,
            chars=len(block),
            via=via,
            **(envelope or {}),
        )
        seq = log.append(event)
    return {"text": block, "items": items, "action_id": action_id, "recorded": seq}
