"""The item index: the fold's state at some seq, checkpointed under ``<store>/cache/memory/``.

A call takes a snapshot, loads the checkpoint and applies only the events appended since
(read from the WAL tail without pyarrow when they are all there, which is the hook's case);
a stale fold (a retraction arrived), a checkpoint of another log or format, or one that
cannot be read is rebuilt from the log. It is a cache: deleting it changes no answer, and
an incremental refresh equals a rebuild (property-tested).

The log a checkpoint belongs to is recognised by the store marker's inode and the id of the
event at the checkpoint's seq (read from the segment that holds it only when that segment's
file is not the one recorded, i.e. after a seal or compaction).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final, TypeVar

import msgspec
from evolog.eventlog import AnyEvent, Paths, Retraction, Snapshot, kind_of

from ._fold import FOLD_KINDS, MAPS, FoldState, ItemFold
from ._items import MemoryItem
from ._lazy import CheckpointDamaged, LazyMap, open_file, write_file

__all__ = ["DEATH_KINDS", "ItemIndex", "events_after"]

T = TypeVar("T")

FORMAT: Final = 7
"""Checkpoint format; 7: the items each attempt fetched (``fetched``), which its outcome's
credit reads, so a format-6 checkpoint (without them) is rebuilt from the log."""
REWRITE_AFTER: Final = 256
"""Rewrite the checkpoint once this many new events have been applied since it was written."""
DEATH_KINDS: Final = frozenset(
    {"outcome", "tick", "lifecycle", "merge", "node", "dream_end", "retraction"}
)
"""Kinds after which the survival ledger's graveyard may differ (read again when needed)."""


class _Head(msgspec.Struct, kw_only=True):
    """The checkpoint's head: what identifies the log, the graveyard, the fold's scalars."""

    format: int
    marker: tuple[int, int]
    applied_id: str
    applied_file: str
    death_seq: int = 0
    dead_seq: int = -1
    dead: list[str] = []
    applied: int = 0
    activity: int = 0
    active: int = 0
    graph_dirty: bool = False
    stale: bool = False
    retracted_ids: list[str] = []
    retracted_cycles: list[str] = []


_SCALARS: Final = (
    "applied",
    "activity",
    "active",
    "graph_dirty",
    "stale",
    "retracted_ids",
    "retracted_cycles",
)
"""The fold's fields the head carries (the rest, :data:`MAPS`, are the tables)."""

_REPLACED: Final = (
    "items-1.msgpack",
    "items-2.msgpack",
    "items-3.bin",
    "items-4.bin",
    "items-5.bin",
    "items-6.bin",
)
"""Checkpoint files of earlier formats, removed when this format's file is written."""

_DECODERS: Final[dict[str, msgspec.msgpack.Decoder[Any]]] = {
    "items": msgspec.msgpack.Decoder(MemoryItem),
    "evidence": msgspec.msgpack.Decoder(list[int]),
    "verdicts": msgspec.msgpack.Decoder(list[int]),
    "touched": msgspec.msgpack.Decoder(int),
    "accesses": msgspec.msgpack.Decoder(int),
    "postings": msgspec.msgpack.Decoder(dict[str, float]),
    "scoring": msgspec.msgpack.Decoder(list[str]),
    "genes": msgspec.msgpack.Decoder(MemoryItem),
    "fetched": msgspec.msgpack.Decoder(list[str]),
}


class ItemIndex:
    """The memory items of one store, at its head; see the module docstring."""

    def __init__(self, paths: Paths, *, cache: bool = True) -> None:
        self.paths = paths
        self.cache = cache
        self.file = os.path.join(paths.cache, "memory", f"items-{FORMAT}.bin")
        self.fold = ItemFold()
        self.death_seq = 0
        self.dead_seq = -1
        self.dead: frozenset[str] = frozenset()
        self._applied_id = ""
        self._applied_file = ""
        self._since_save = 0

    def refresh(self, snap: Snapshot, log: Any) -> ItemFold:
        """Advance to the snapshot's head (``log`` reads the memory graph if needed)."""
        head = snap.head_seq
        fold = self.fold
        if fold.state.applied == 0 and self.cache and not self._since_save:
            self._load(snap)
            fold = self.fold
        # A fold that starts from nothing on a sealed store is a rebuild: it streams only
        # the kinds the fold reads, where reading every event after seq 0 into one list
        # held the whole log as Python objects (about 1 GiB at 1e6 events).
        cold = fold.state.applied == 0 and bool(snap.segments)
        if cold or fold.state.applied > head or not self._same_log(snap):
            fold = self._rebuild(snap, log, head)
        elif fold.state.applied < head:
            new = events_after(snap, fold.state.applied)
            self._note_kinds(new)
            # Graph events left unread before these (not expected: every refresh settles)
            # make the next settle read every node, not only those the new events name.
            earlier = fold.state.graph_dirty
            fold.apply_all(new)
            self._since_save += len(new)
            self._mark(snap, new[-1] if new else None)
            if fold.state.stale:
                fold = self._rebuild(snap, log, head)
            else:
                fold.settle(_graph_loader(log, snap), None if earlier else new)
        return fold

    def guarded(self, read: Callable[[], T]) -> T:
        """Run ``read`` (a refresh and reads of the fold, no appends); if the checkpoint
        under it turns out damaged, drop it and run ``read`` once more on the log's fold,
        so a damaged cache costs time, never an answer."""
        try:
            return read()
        except CheckpointDamaged:
            self.discard()
            return read()

    def discard(self) -> None:
        """Forget the fold and delete its checkpoint: the next refresh folds the log."""
        with contextlib.suppress(OSError):
            os.unlink(self.file)
        self.fold = ItemFold()
        self.death_seq, self.dead_seq, self.dead = 0, -1, frozenset()
        self._applied_id = self._applied_file = ""
        self._since_save = 0

    def save_if_due(self, snap: Snapshot) -> None:
        """Write the checkpoint if enough has changed since it was last written."""
        if self._since_save >= REWRITE_AFTER:
            self.save(snap)

    def _rebuild(self, snap: Snapshot, log: Any, head: int) -> ItemFold:
        kinds = sorted({*FOLD_KINDS, *DEATH_KINDS})
        source: Iterable[AnyEvent]
        if snap.segments:
            from evolog.eventlog.sealed import Filter, events

            found = events(snap, Filter(head, None, ["retraction"]))
            retractions = [e for e in found if isinstance(e, Retraction)]
            source = events(snap, Filter(head, None, kinds))
        else:  # all in the WAL: no pyarrow (a hook's first recall on a young store)
            wanted = frozenset(kinds)
            source = [e for e in snap.tail_events(0) if e.seq <= head and kind_of(e) in wanted]
            retractions = [e for e in source if isinstance(e, Retraction)]

        def stream() -> Iterator[AnyEvent]:
            for e in source:
                if kind_of(e) in DEATH_KINDS:
                    self.death_seq = e.seq
                yield e

        self.death_seq = 0
        self.fold = ItemFold.rebuild(stream(), retractions, _graph_loader(log, snap))
        self.fold.state.applied = head
        self._mark(snap, None, force=True)
        self._since_save = REWRITE_AFTER  # always worth keeping
        return self.fold

    def _note_kinds(self, new: list[AnyEvent]) -> None:
        for e in new:
            if kind_of(e) in DEATH_KINDS:
                self.death_seq = e.seq

    # -- identifying the log ------------------------------------------------------------
    def _mark(self, snap: Snapshot, last: AnyEvent | None, *, force: bool = False) -> None:
        applied = self.fold.state.applied
        if last is not None and last.seq == applied:
            self._applied_id, self._applied_file = last.id, _file_of(snap, applied)
            return
        if force or last is None:
            self._applied_id, self._applied_file = _id_at(snap, applied)

    def _same_log(self, snap: Snapshot) -> bool:
        applied = self.fold.state.applied
        if applied == 0:
            return True
        if applied > snap.manifest.sealed_seq:
            found = snap.tail_events(applied - 1)
            return bool(found) and found[0].id == self._applied_id
        for info in snap.segments:
            if info.first_seq <= applied <= info.last_seq:
                if info.file == self._applied_file:
                    return True  # segment files are immutable and their names unique
                found_id, file = _id_at(snap, applied)
                if found_id != self._applied_id:
                    return False
                self._applied_file = file
                return True
        return False

    # -- the checkpoint file ------------------------------------------------------------
    def _load(self, snap: Snapshot) -> None:
        # Only the head is decoded here; the maps are read through the mapped tables as
        # the fold and the ranking ask for entries (see :mod:`._lazy`).
        try:
            opened = open_file(self.file)
            if opened is None:
                return
            raw, tables = opened
            head = msgspec.convert({k: v for k, v in raw.items() if k != "tables"}, _Head)
        except (OSError, ValueError, msgspec.DecodeError, msgspec.ValidationError):
            return
        if head.format != FORMAT or head.marker != _marker(self.paths):
            return
        if any(name not in tables for name in MAPS):
            return
        maps = {name: LazyMap[Any](tables[name], _DECODERS[name]) for name in MAPS}
        fields: dict[str, Any] = {**{n: getattr(head, n) for n in _SCALARS}, **maps}
        state = FoldState(**fields)
        self.fold = ItemFold(state)
        self._applied_id, self._applied_file = head.applied_id, head.applied_file
        self.death_seq, self.dead_seq = head.death_seq, head.dead_seq
        self.dead = frozenset(head.dead)

    def save(self, snap: Snapshot) -> None:
        """Write the checkpoint (a cache: a failure only makes the next cold call slower)."""
        self._since_save = 0
        if not self.cache:
            return
        st = self.fold.state
        head = _Head(
            format=FORMAT,
            marker=_marker(self.paths),
            applied_id=self._applied_id,
            applied_file=self._applied_file,
            death_seq=self.death_seq,
            dead_seq=self.dead_seq,
            dead=sorted(self.dead),
            **{n: getattr(st, n) for n in _SCALARS},
        )
        with contextlib.suppress(OSError):
            directory = os.path.dirname(self.file)
            os.makedirs(directory, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as f:
                    write_file(
                        f, msgspec.to_builtins(head), {name: getattr(st, name) for name in MAPS}
                    )
                os.replace(tmp, self.file)
                for stale in _REPLACED:
                    with contextlib.suppress(OSError):
                        os.unlink(os.path.join(directory, stale))
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise

    # -- survival -----------------------------------------------------------------------
    def dead_entries(self, log: Any, snap: Snapshot) -> frozenset[str]:
        """The ledger's dead entries at the head (read again only after events that can
        change them: outcomes, ticks, lifecycle, merges, nodes, dream ends, retractions)."""
        if self.death_seq == 0:
            # Nothing that can bury an entry is in the log yet: skip the ledger (and its
            # pyarrow and numpy) altogether.
            self.dead, self.dead_seq = frozenset(), self.fold.state.applied
            return self.dead
        if self.dead_seq < self.death_seq or self.dead_seq < 0:
            from evolog.projections import dead_entries

            self.dead = dead_entries(log)
            self.dead_seq = self.fold.state.applied
            self._since_save = max(self._since_save, REWRITE_AFTER)
        return self.dead


def _marker(paths: Paths) -> tuple[int, int]:
    try:
        st = os.stat(paths.marker)
    except OSError:
        return (0, 0)
    return (st.st_ino, st.st_mtime_ns)


def _file_of(snap: Snapshot, seq: int) -> str:
    """The segment file that holds ``seq`` ("" for the WAL), from the manifest alone."""
    if seq > snap.manifest.sealed_seq:
        return ""
    for info in snap.segments:
        if info.first_seq <= seq <= info.last_seq:
            return info.file
    return ""


def _id_at(snap: Snapshot, seq: int) -> tuple[str, str]:
    """The id of the event at ``seq`` and the segment file holding it ("" for the WAL)."""
    if seq <= 0:
        return "", ""
    if seq > snap.manifest.sealed_seq:
        found = snap.tail_events(seq - 1)
        return (found[0].id if found else ""), ""
    import pyarrow.compute as pc
    from evolog.eventlog.sealed import read_part

    for info in snap.segments:
        if info.first_seq <= seq <= info.last_seq:
            table = read_part(snap.paths.segments, info, ["seq", "id"])
            table = table.filter(pc.equal(table["seq"], seq))
            return (str(table["id"][0].as_py()) if table.num_rows else ""), info.file
    return "", ""


def events_after(snap: Snapshot, seq: int) -> list[AnyEvent]:
    """The snapshot's events with a seq above ``seq``, in order (pyarrow only for segments)."""
    out: list[AnyEvent] = []
    if seq < snap.manifest.sealed_seq:
        from evolog.eventlog.sealed import Filter, segment_events

        flt = Filter()
        for info in snap.segments:
            if info.last_seq > seq:
                out.extend(e for e in segment_events(snap, info, flt) if e.seq > seq)
    out.extend(snap.tail_events(seq))
    return out


def _graph_loader(log: Any, snap: Snapshot) -> Any:
    """The memory graph at the snapshot's head, from its checkpoint (advanced by only the
    events appended since it was written; a refold only when it is missing or stale).

    The fold asks for the graph as of its last applied event; the events between that and
    the head are of kinds that change no strategy item (links, marks, dream begins), and
    the fold is at the head once it settles, so the graph at the head is the same answer.
    """

    def load(as_of: int) -> Any:
        if log is None:
            return None
        from evolog.projections.graph._cache import GraphCache

        return GraphCache(log)._advance(snap, want_state=True)[1]

    return load
