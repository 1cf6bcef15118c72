"""What a write, a branch compression or a root archive appends: pure decisions on the fold.

* **Dedup on write** (Living Memory): the new text's raw term frequencies against the
  active notes of the same branch; at cosine >= ``dedup_threshold`` the best match (highest
  cosine, then oldest) is superseded by a note naming its item, so its history is kept.
* **Branch compression**: after a write to a branch other than the backbone, the branch is
  merged into one item when it has at least ``min_nodes_to_compress`` active notes and more
  than ``ols_multiplier`` x the mean active size of the non-backbone branches. Living Memory
  takes that mean over every branch including this one, so a branch that is alone can never
  exceed it; here a lone branch is compared with ``top_n`` instead (it is compressed once it
  holds more than phi x what one recall may inject).
* **Root archiving** (on demand and at session end): a non-backbone branch with at least
  ``min_nodes_to_compress`` active notes whose access count is below
  ``cold_branch_access_ratio`` x the mean over non-backbone branches is merged into one item
  tagged ``archived`` and ``was:<branch>``.

A merge is one ``note`` listing its ``sources`` (archived, never deleted; a retraction of
the note gives them back): the distinct sentences of the sources, their tags united.
"""

from __future__ import annotations

from collections.abc import Iterable

from evolog.eventlog import Note

from ._config import MemoryConfig
from ._fold import ItemFold
from ._items import BACKBONE, LESSON, NOTE, MemoryItem
from ._text import cosine, sentences, term_freqs

__all__ = ["archive_notes", "branch_sizes", "compression_note", "dedup_target", "write_note"]


def _notes(fold: ItemFold, branch: str | None = None, kind: str = NOTE) -> list[MemoryItem]:
    """Active notes (or lessons) of one branch, in creation order."""
    items = fold.state.items.values()
    out = [i for i in items if i.kind == kind and i.active and branch in (None, i.branch)]
    return sorted(out, key=lambda i: (i.created_seq, i.id))


def dedup_target(
    fold: ItemFold,
    branch: str,
    text: str,
    cfg: MemoryConfig,
    exclude: Iterable[str] = (),
    kind: str = NOTE,
) -> tuple[str, float] | None:
    """The item of ``kind`` that ``text`` would supersede in ``branch``, and its cosine."""
    tf = term_freqs(text)
    skip = frozenset(exclude)
    best: tuple[float, int, str] | None = None
    for item in _notes(fold, branch, kind):
        if item.id in skip:
            continue
        sim = cosine(tf, item.tf)
        if sim >= cfg.dedup_threshold and (best is None or (sim, -item.created_seq) > best[:2]):
            best = (sim, -item.created_seq, item.id)
    return None if best is None else (best[2], best[0])


def write_note(
    fold: ItemFold,
    branch: str,
    text: str,
    tags: Iterable[str],
    cfg: MemoryConfig,
    *,
    dead: Iterable[str] = (),
    lesson: bool = False,
    author: str = "",
    **envelope: object,
) -> tuple[Note, str | None]:
    """The note a ``remember`` appends, and the item it supersedes (None for a new item).

    A lesson supersedes a near-copy among the branch's lessons only (and a note among its
    notes): a lesson's credit is its own, and a dead one is never written over."""
    kind = LESSON if lesson else NOTE
    target = dedup_target(fold, branch, text, cfg, exclude=dead, kind=kind)
    item = target[0] if target is not None else ""
    tags = list(dict.fromkeys(tags))
    fields = {"lesson": True, "author": author} if lesson else {"author": author}
    note = Note(text=text, tags=tags, branch=branch, item=item, **fields, **envelope)  # type: ignore[arg-type]
    return note, item or None


def branch_sizes(fold: ItemFold) -> dict[str, int]:
    """Active notes per branch, the backbone left out."""
    sizes: dict[str, int] = {}
    for item in _notes(fold):
        if item.branch != BACKBONE:
            sizes[item.branch] = sizes.get(item.branch, 0) + 1
    return sizes


def compression_note(
    fold: ItemFold, branch: str, cfg: MemoryConfig, pending: Note | None = None
) -> Note | None:
    """The merge of ``branch`` if it has outgrown the others (see the module docstring).

    With ``pending``, a note of ``branch`` not yet appended, the decision is the one the
    fold would make once it is: so the write and its compression are appended as one
    atomic batch, and no reader ever sees a branch past its bound without its merge.
    """
    if branch == BACKBONE:
        return None
    sizes = branch_sizes(fold)
    notes = _notes(fold, branch)
    if pending is not None:
        notes = _with_pending(fold, notes, pending)
        sizes[branch] = len(notes)
    size = sizes.get(branch, 0)
    if size < max(cfg.min_nodes_to_compress, 2):
        return None
    mean = sum(sizes.values()) / len(sizes) if len(sizes) > 1 else float(cfg.top_n)
    if size <= cfg.ols_multiplier * mean:
        return None
    return _merge(notes, branch, "compress", ())


def _with_pending(fold: ItemFold, notes: list[MemoryItem], note: Note) -> list[MemoryItem]:
    """The branch's active notes once ``note`` (a plain write, no sources) is folded: it
    replaces the item it supersedes in place, or comes last (its seq is the newest)."""
    item_id = note.item or note.id
    old = fold.state.items.get(item_id)
    tags = list(dict.fromkeys([*(old.tags if old is not None else ()), *note.tags]))
    written = MemoryItem(id=item_id, kind=NOTE, branch=note.branch, text=note.text, tags=tags)
    if old is not None and old.active:
        return [written if i.id == item_id else i for i in notes]
    return [*notes, written]


def archive_notes(fold: ItemFold, cfg: MemoryConfig) -> list[Note]:
    """One archive note per cold branch (see the module docstring)."""
    by_branch: dict[str, list[MemoryItem]] = {}
    for item in _notes(fold):
        if item.branch != BACKBONE:
            by_branch.setdefault(item.branch, []).append(item)
    if not by_branch:
        return []
    access = {
        b: sum(fold.state.accesses.get(i.id, 0) for i in items) for b, items in by_branch.items()
    }
    mean = sum(access.values()) / len(access)
    out = []
    for branch in sorted(by_branch):
        items = by_branch[branch]
        if len(items) >= max(cfg.min_nodes_to_compress, 2) and (
            access[branch] < cfg.cold_branch_access_ratio * mean
        ):
            out.append(_merge(items, branch, "archive", ("archived", f"was:{branch}")))
    return out


def _merge(items: list[MemoryItem], branch: str, reason: str, extra: Iterable[str]) -> Note:
    tags = list(dict.fromkeys([t for i in items for t in i.tags] + list(extra)))
    text = ". ".join(sentences(i.text for i in items))
    return Note(
        text=text + "." if text and not text.endswith(".") else text,
        tags=tags,
        branch=branch,
        sources=[i.id for i in items],
        reason=reason,
    )
