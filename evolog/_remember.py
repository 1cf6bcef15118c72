"""``remember``, ``feedback`` and ``compress``: the writes of the memory-item model.

Every one appends events and edits nothing: a write that duplicates a note of its branch
supersedes it (the same item, a new version, its history kept); a branch that outgrows the
others is compressed by a note listing its sources; ``compress`` archives cold branches;
``compress(undo=ITEM)`` retracts a compression or archive note, which gives its sources
back. The decisions are :mod:`projections.memory._plan`'s.

``remember(kind="lesson")`` writes a lesson: the item the agent (or the hook's reflection at
``Stop``) authors for later tasks. It is ranked with the other items, shown with its
evidence ("worked N of M"), credited as a decider by the outcome of every attempt it was
injected into, and born in the survival ledger with the same batch as its note, so it pays
the same upkeep as a dreamed strategy and dies as one does when its outcomes are failures
(a dead item is never recalled). Lessons are never compressed or archived: merging one
into a note would pool credit the ledger gives each apart.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import msgspec

from evolog.eventlog import EventLog, Feedback, Lifecycle, Outcome, Retraction, new_id
from evolog.projections import InvalidParameterError
from evolog.projections.memory import (
    BACKBONE,
    NOTE,
    ItemIndex,
    MemoryConfig,
    archive_notes,
    compression_note,
    load_config,
    write_note,
)

__all__ = [
    "KINDS",
    "VERDICTS",
    "CompressResult",
    "Remembered",
    "compress",
    "feedback",
    "remember",
]

VERDICTS: Final = {"helpful": 1.0, "harmful": -1.0, "neutral": 0.0}
"""Feedback verdicts and the rating (and ledger delta) each is recorded with."""
MAX_BRANCH: Final = 200
KINDS: Final = {"note": False, "lesson": True, "strategy": True}
"""What ``remember`` may write, and whether it is a lesson (an agent's "strategy" is one:
strategies proper are dreamed from traces)."""
MAX_AUTHOR: Final = 64


class Remembered(msgspec.Struct, frozen=True, kw_only=True):
    """What a ``remember`` did: the item written, whether it superseded one, any compression."""

    item: str
    seq: int
    superseded: bool
    branch: str
    kind: str = "note"
    compressed: str | None = None
    compressed_sources: list[str] = []


class CompressResult(msgspec.Struct, frozen=True, kw_only=True):
    """Archive (or compression) items written, with the items each archived; or an undo."""

    archived: dict[str, list[str]] = {}
    undone: str | None = None
    restored: list[str] = []


def _text(name: str, value: object, *, empty: bool = False) -> str:
    if not isinstance(value, str):
        raise InvalidParameterError(f"{name}: expected text; got {type(value).__name__}")
    if not empty and not value.strip():
        raise InvalidParameterError(f"{name}: expected non-empty text; got {value!r}")
    return value


def _tags(tags: Iterable[str]) -> list[str]:
    if isinstance(tags, str):
        raise InvalidParameterError(f"tags: expected a list of text; got the text {tags!r}")
    out = list(tags)
    for t in out:
        _text("tags", t)
    return out


def remember(
    log: EventLog,
    index: ItemIndex,
    branch: str,
    text: str,
    tags: Iterable[str] = (),
    *,
    config: MemoryConfig | None = None,
    envelope: dict[str, Any] | None = None,
    kind: str = "note",
    author: str = "",
) -> Remembered:
    """Write ``text`` to ``branch`` (deduplicated), then compress the branch if it is due.

    ``kind`` ``lesson`` (or ``strategy``) writes a lesson (see the module docstring);
    ``author`` says who wrote it (``agent``, ``reflection``; "" for a person)."""
    if not isinstance(kind, str) or kind not in KINDS:
        raise InvalidParameterError(f"kind: expected one of note, lesson, strategy; got {kind!r}")
    lesson = KINDS[kind]
    author = _text("author", author, empty=True).strip()
    if len(author) > MAX_AUTHOR:
        raise InvalidParameterError(
            f"author: expected at most {MAX_AUTHOR} characters; got {len(author)}"
        )
    branch = _text("branch", branch).strip()
    if len(branch) > MAX_BRANCH:
        raise InvalidParameterError(
            f"branch: expected at most {MAX_BRANCH} characters; got {len(branch)}"
        )
    text = _text("text", text)
    tag_list = _tags(tags)
    cfg = config or load_config(log.path)
    env = envelope or {}
    env = {"id": new_id(), **env}

    def decide() -> tuple[Any, Any, Any]:
        with log.snapshot() as snap:
            fold = index.refresh(snap, log)
            dead = index.dead_entries(log, snap) if fold.state.items else frozenset()
        note, superseded = write_note(
            fold, branch, text, tag_list, cfg, dead=dead, lesson=lesson, author=author, **env
        )
        # The compression a write triggers is decided before the write and appended with
        # it as one batch: a crash can leave neither, or both, never the note alone.
        due = branch != BACKBONE and not lesson
        merge = compression_note(fold, branch, cfg, pending=note) if due else None
        return note, superseded, merge

    note, superseded, merge = index.guarded(decide)
    batch: list[Any] = [note]
    if lesson and superseded is None:
        # Born with its note, as a dreamed node is with its ``node`` event: it pays upkeep
        # from its first tick, not from the first outcome that names it.
        birth_env = {k: v for k, v in env.items() if k != "id"}
        batch.append(Lifecycle(id=f"birth:{note.id}", entry=note.id, op="birth", **birth_env))
    if merge is not None:
        # Named after the note, so a retried write (the same envelope id) appends neither
        # twice: both ids are known to the log.
        merge = msgspec.structs.replace(merge, **{**env, "id": f"compress:{note.id}"})
        batch.append(merge)
    seq = log.append_many(batch)[0]
    item = superseded or note.id
    compressed = merge.id if merge is not None else None
    sources = list(merge.sources) if merge is not None else []

    def advance() -> None:
        with log.snapshot() as snap:
            index.refresh(snap, log)
            index.save_if_due(snap)

    index.guarded(advance)
    return Remembered(
        item=item,
        seq=seq,
        superseded=superseded is not None,
        branch=branch,
        kind="lesson" if lesson else "note",
        compressed=compressed,
        compressed_sources=sources,
    )


def feedback(
    log: EventLog,
    index: ItemIndex,
    item: str,
    verdict: str,
    note: str | None = None,
    *,
    action_id: str = "",
    envelope: dict[str, Any] | None = None,
) -> int:
    """Record a verdict on an item: ACE counters, and a ledger credit of +1/-1/0.

    Appends, as one atomic batch, a ``feedback`` event (rating +1, -1 or 0) and an
    ``outcome`` (status ``measured``, ``decided_by`` the item, ``delta`` the rating) so the
    survival ledger credits it; returns the feedback's seq. With ``action_id`` the verdict
    is about that attempt and replaces, in the ACE counters, the one its outcome gave the
    item.
    """
    item = _text("item", item)
    if action_id:
        action_id = _text("action_id", action_id)
    if verdict not in VERDICTS:
        raise InvalidParameterError(
            f"verdict: expected one of helpful, harmful, neutral; got {verdict!r}"
        )
    if note is not None:
        _text("note", note, empty=True)

    def known() -> bool:
        with log.snapshot() as snap:
            fold = index.refresh(snap, log)
        return item in fold.state.items or item in fold.state.genes

    if not index.guarded(known):
        raise InvalidParameterError(
            f"item: expected the id of a memory item; got {item!r} "
            "(see `evolog recall --format json` for ids)"
        )
    env = envelope or {}
    rating = VERDICTS[verdict]
    fid = new_id()
    credit = Outcome(
        id=f"feedback-credit:{fid}",
        status="measured",
        delta=rating,
        decided_by=[item],
        note=f"feedback: {verdict}",
        **env,
    )
    return log.append_many(
        [
            Feedback(
                id=fid, target=item, rating=rating, text=note or "", action_id=action_id, **env
            ),
            credit,
        ]
    )[0]


def compress(
    log: EventLog,
    index: ItemIndex,
    *,
    undo: str | None = None,
    config: MemoryConfig | None = None,
    envelope: dict[str, Any] | None = None,
) -> CompressResult:
    """Archive every cold branch (root-level compression), or undo one merge item."""
    cfg = config or load_config(log.path)
    env = envelope or {}

    if undo is not None:
        undo = _text("undo", undo)

    def read() -> Any:
        with log.snapshot() as snap:
            fold = index.refresh(snap, log)
        if undo is not None:
            return fold.state.items.get(undo)
        return archive_notes(fold, cfg)

    found = index.guarded(read)
    if undo is not None:
        it = found
        if it is None or it.kind != NOTE or not it.sources or not it.events:
            raise InvalidParameterError(
                f"undo: expected the id of a compressed or archived item; got {undo!r}"
            )
        log.append(Retraction(targets=[it.events[0]], reason=f"undo {it.reason or 'merge'}", **env))
        return CompressResult(undone=undo, restored=list(it.sources))
    notes = [msgspec.structs.replace(n, **{**env, "id": new_id()}) for n in found]
    if notes:
        log.append_many(notes)
    return CompressResult(archived={n.id: list(n.sources) for n in notes})
