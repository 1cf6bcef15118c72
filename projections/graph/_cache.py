"""The memory-graph checkpoint under ``<store>/cache/graph/``: the graph without a refold.

:func:`load_memgraph` folds every dream event of the log; at 1e5 nodes that is seconds, and
``evolog route`` and ``evolog graph`` used to pay it on every call. The checkpoint
(:mod:`._checkpoint`) keeps the fold's state and every node's view at some seq; a call
applies only the events appended since, like the edge and ledger checkpoints:

* nothing new: nothing is decoded; ``route`` reads a few views, ``graph`` concatenates them;
* new events that change no view (attempts, and outcomes that name no node and end no
  attempt a node counts) are appended to the journal beside the state file, without reading
  or writing the state: attempts and their outcomes are kept, since they count for the
  nodes dreamed from them (now, or in a dream to come), and folded into a new state file
  once the journal outgrows its bound, or with the next events that change a view;
* otherwise the state is read (records decoded only where the new events touch them), the
  events folded in, and the views of the nodes they changed rendered again (a node's view
  covers everything merged into it, so the nodes it was merged into change with it);
* a retraction among the new events may undo what was folded, so it rebuilds, as does a
  checkpoint of another format or another log, or one that is damaged or missing.

It is a cache: deleting it changes no answer, and incremental refreshes equal a rebuild
(tests/projections/graph/test_graph_checkpoint.py). A checkpoint that cannot be written costs the
next call
a rebuild, never an answer.
"""

from __future__ import annotations

import contextlib
import os
import zlib
from collections.abc import Callable, Iterable, Sequence
from typing import Final, NamedTuple

import msgspec
from evolog.eventlog import (
    AnyEvent,
    Attempt,
    EventLog,
    Outcome,
    Retraction,
    Snapshot,
    note_damage,
    with_header,
)
from msgspec.structs import replace

from ._checkpoint import (
    FORMAT,
    Counted,
    CountedInState,
    Damaged,
    Head,
    IndexFile,
    StateFile,
    counted_body,
    graph_of,
    locked,
    new_generation,
    read_counted,
    read_head,
    read_index,
    read_state,
    state_of,
    write_atomic,
    write_counted,
)
from ._delta import (
    JOURNAL_BOUND,
    Journal,
    append_journal,
    counted_candidates,
    dirty_nodes,
    ended_attempts,
    entry_frame,
    events_after,
    journal_actions,
    journal_events,
    mark_at,
    read_journal,
)
from ._memgraph import MEMGRAPH_KINDS, MemGraph, load_memgraph
from ._views import GraphViews, render_view

__all__ = ["GraphCache", "cached_memgraph", "graph_views"]

_DELTA_KINDS: Final = frozenset({*MEMGRAPH_KINDS, "retraction"})


def cached_memgraph(log: EventLog) -> MemGraph:
    """The memory graph at the head of the log, from the checkpoint (equal to
    :func:`load_memgraph`; records are decoded when first read)."""
    return GraphCache(log).memgraph()


def graph_views(log: EventLog) -> GraphViews:
    """The memory graph's views at the head of the log, from the checkpoint."""
    return GraphCache(log).views()


class GraphCache:
    """The checkpoint of one store; see the module docstring."""

    def __init__(self, log: EventLog) -> None:
        self.log = log
        self.dir = os.path.join(log.paths.cache, "graph")
        self._memory: tuple[Head, GraphViews] | None = None

    def views(self) -> GraphViews:
        """The views at the head of the log."""
        with self.log.snapshot() as snap:
            head = self._advance(snap, want_state=False)[0]
        try:
            return self._open_views(head)
        except Damaged as exc:
            note_damage(os.path.join(self.dir, f"views-{head.generation}.bin"), str(exc))
            return self.rebuild()[1]

    def memgraph(self) -> MemGraph:
        """The full graph at the head of the log."""
        with self.log.snapshot() as snap:
            graph = self._advance(snap, want_state=True)[1]
        if graph is None:  # pragma: no cover - _advance returns the state when asked
            raise Damaged("no state")
        return graph

    def rebuild(self) -> tuple[MemGraph, GraphViews]:
        """Fold the whole log again and write a new checkpoint."""
        with self.log.snapshot() as snap:
            head, graph = self._rebuild(snap)
        return graph, self._open_views(head)

    # -- refreshing ---------------------------------------------------------------------
    def _advance(self, snap: Snapshot, *, want_state: bool) -> tuple[Head, MemGraph | None]:
        head_seq = snap.head_seq
        found = self._open(snap, head_seq)
        if found is None:
            return self._rebuild(snap)
        base, journal, head = found
        try:
            if head.applied == head_seq:
                return head, self._state(found) if want_state else None
            delta = events_after(snap, head.applied, _DELTA_KINDS)
            if any(isinstance(e, Retraction) for e in delta):
                return self._rebuild(snap)
            # One read of the state file serves the check, the fold and the answer.
            state: list[StateFile] = []

            def read() -> StateFile:
                if not state:
                    state.append(read_state(self.dir, base))
                return state[0]

            kept = self._journalable(found, delta, read)
            if kept is not None:
                last_seq = max([head.last_seq, *(e.seq for e in delta)])
                mark = mark_at(snap, head_seq, None)
                frame = entry_frame(head_seq, mark, last_seq, kept)
                # Past the bound the journal is folded into a new state file (below).
                if journal.size + len(frame) <= JOURNAL_BOUND:
                    moved = replace(head, applied=head_seq, last=mark, last_seq=last_seq)
                    self._append(base, journal, frame)
                    if not want_state:
                        return moved, None
                    graph = self._state(found, state=read()).apply_all(delta)
                    return moved, graph
            graph = self._state(found, state=read())
            ended = ended_attempts(graph, delta)
            graph.apply_all(delta)
            if graph.stale:  # pragma: no cover - retractions rebuild above
                return self._rebuild(snap)
            changed = dirty_nodes(graph, delta, ended)
            fresh = counted_candidates(graph, [*journal_events(journal), *delta], ended)
            index = read_index(self.dir, base)
            return self._write(snap, head_seq, graph, changed, (base, index), fresh), graph
        except Damaged as exc:
            note_damage(os.path.join(self.dir, f"checkpoint {base.generation}"), str(exc))
            return self._rebuild(snap)

    def _open(self, snap: Snapshot, head_seq: int) -> _Found | None:
        """The checkpoint as found: its head, its journal, and where the two bring it."""
        base = read_head(self.dir)
        if base is None or base.format != FORMAT or base.applied > head_seq:
            return None
        journal = read_journal(self._journal_path(base), base.applied)
        # A journal that goes past this snapshot (another process appended after it was
        # taken) is read up to it: each prefix of the journal is a checkpoint.
        entries = [e for e in journal.entries if e.applied <= head_seq]
        if len(entries) < len(journal.entries):
            journal = Journal(entries, -1)  # not where the next entry goes: never appended to
        head = base
        if entries:
            last = entries[-1]
            head = replace(base, applied=last.applied, last=last.last, last_seq=last.last_seq)
        for known in (head.first, head.last):
            if known.seq and mark_at(snap, known.seq, known).id != known.id:
                return None  # another log now lives at this path
        return _Found(base, journal, head)

    def _journal_path(self, base: Head) -> str:
        return os.path.join(self.dir, f"journal-{base.state_generation}.bin")

    def _state(self, found: _Found, state: StateFile | None = None) -> MemGraph:
        """The graph at ``found``'s head: its state file, then its journal."""
        base, journal, head = found
        graph = graph_of(read_state(self.dir, base) if state is None else state, base.last_seq)
        graph.apply_all(journal_events(journal))
        # Outcomes that changed nothing are not journaled, only their seq.
        graph.last_seq = head.last_seq
        return graph

    def _journalable(
        self, found: _Found, delta: Sequence[AnyEvent], state: Callable[[], StateFile]
    ) -> list[Attempt | Outcome] | None:
        """The new events to journal, or None when they may change a view. An attempt changes
        none, nor does an outcome that names no node unless a node counts its attempt (a
        trace of the node, or credited to it); one without an action id changes nothing and
        is left out (one whose action id names no attempt is kept: the fold ignores it)."""
        base, journal, _ = found
        kept: list[Attempt | Outcome] = []
        newer: dict[str, str] = {}  # action id -> its newest attempt among the new events
        journaled: dict[str, str] | None = None  # ... and in the journal (decoded if needed)
        ids: set[str] | None = None
        counted: Counted | None = None
        for e in delta:
            if isinstance(e, Attempt):
                newer[e.action_id or e.id] = e.id
                kept.append(e)
                continue
            if not isinstance(e, Outcome):
                return None
            refs = [*e.decided_by, *e.supported_by]
            if refs:
                if ids is None:
                    ids = set(read_index(self.dir, base).ids)
                if not ids.isdisjoint(refs):
                    return None
            if not e.action_id:
                continue
            attempt = newer.get(e.action_id)
            if attempt is None:
                if journaled is None:
                    journaled = journal_actions(journal)
                attempt = journaled.get(e.action_id)
            if counted is None:
                counted = read_counted(self.dir, base) or CountedInState(state())
            # Not in the journal: the attempt the state has for this action id, if any.
            if counted.attempt(attempt) if attempt else counted.action(e.action_id):
                return None
            kept.append(e)
        return kept

    def _append(self, base: Head, journal: Journal, frame: bytes) -> None:
        """Append a frame to the journal of ``base`` if it is still the head."""
        if journal.size < 0:
            return
        # Not written: the next call folds the events again from the log.
        with contextlib.suppress(OSError), locked(os.path.join(self.dir, "write.lock")):
            if read_head(self.dir) == base:
                append_journal(self._journal_path(base), base.applied, journal, frame)

    def _rebuild(self, snap: Snapshot) -> tuple[Head, MemGraph]:
        head_seq = snap.head_seq
        graph = load_memgraph(self.log, as_of=head_seq)
        return self._write(snap, head_seq, graph, set(), None, None), graph

    # -- writing ------------------------------------------------------------------------
    def _write(
        self,
        snap: Snapshot,
        head_seq: int,
        graph: MemGraph,
        changed: set[str],
        old: tuple[Head, IndexFile] | None,
        fresh: tuple[list[str], list[str]] | None,
    ) -> Head:
        """Write a new generation (views of ``changed`` and of new nodes rendered, the
        others copied from ``old``), then the head that names it; ``fresh``: what the
        events may have added to ``old``'s counted file (:func:`counted_candidates`)."""
        ids = list(graph._nodes)
        counted = self._counted(graph, None if old is None else old[0], fresh)
        if old is not None and not changed and ids == old[1].ids:
            return self._write_state(snap, head_seq, graph, old[0], counted)
        before = None if old is None else GraphViews.open(self.dir, old[0], old[1])
        rows = {node: i for i, node in enumerate(ids)}
        chunks: list[bytes | memoryview] = []
        import numpy as np  # only to write: a cold reader never needs it

        offsets = np.zeros(len(ids) + 1, "<i8")
        crcs = np.zeros(len(ids), "<u4")
        parents = np.full(len(ids), -1, "<i4")
        live = np.zeros(len(ids), np.uint8)
        rendered = set()
        for i, node_id in enumerate(ids):
            old_row = before.row(node_id) if before is not None else None
            if before is None or old_row is None or node_id in changed:
                view: bytes | memoryview = render_view(graph, node_id)
                record = graph.node(node_id)
                assert record is not None
                crcs[i], live[i] = zlib.crc32(view), record.live
                parents[i] = rows.get(record.merged_into or "", -1)
                rendered.add(node_id)
            else:
                view = before.view(old_row)
                crcs[i], live[i], parent = before.entry(old_row)
                parents[i] = rows[before.ids[parent]] if parent >= 0 else -1
            chunks.append(view)
            offsets[i + 1] = offsets[i] + len(view)
        index = IndexFile(
            ids=ids, offsets=offsets.tobytes(), crcs=crcs.tobytes(), parents=parents.tobytes(),
            live=live.tobytes(),
        )  # fmt: skip
        index_bytes = msgspec.msgpack.encode(index)
        state_bytes = msgspec.msgpack.encode(state_of(graph))
        first = mark_at(snap, 1, None if old is None else old[0].first)
        gen = new_generation()
        head = Head(
            format=FORMAT, applied=head_seq, first=first, last=mark_at(snap, head_seq, None),
            last_seq=graph.last_seq, generation=gen, state_generation=gen,
            previous="" if old is None else old[0].generation,
            changed=sorted(rendered) if old is not None else [], live=int(live.sum()),
            cycles=len(graph._cycles), state_crc=zlib.crc32(state_bytes),
            index_crc=zlib.crc32(index_bytes),
        )  # fmt: skip
        try:
            os.makedirs(self.dir, exist_ok=True)
            with locked(os.path.join(self.dir, "write.lock")):
                write_atomic(self.dir, f"views-{gen}.bin", chunks)
                write_atomic(self.dir, f"index-{gen}.msgpack", [index_bytes])
                write_atomic(self.dir, f"state-{gen}.msgpack", [state_bytes])
                write_counted(self.dir, gen, counted)
                head_bytes = with_header(msgspec.msgpack.encode(head))
                write_atomic(self.dir, "head.msgpack", [head_bytes])
                self._sweep(
                    keep={gen, head.previous, "" if old is None else old[0].state_generation}
                )
        except OSError:
            # A cache that cannot be written is only a slower next call: this one reads
            # the views from memory.
            self._memory = (head, GraphViews(head, index, b"".join(chunks)))
        return head

    def _write_state(
        self, snap: Snapshot, head_seq: int, graph: MemGraph, old: Head, counted: bytes
    ) -> Head:
        """Write only a new state and a head that keeps ``old``'s views (no view changed)."""
        state_bytes = msgspec.msgpack.encode(state_of(graph))
        head = replace(
            old, applied=head_seq, last=mark_at(snap, head_seq, None), last_seq=graph.last_seq,
            cycles=len(graph._cycles), state_generation=new_generation(),
            state_crc=zlib.crc32(state_bytes),
        )  # fmt: skip
        # Not written: the next call folds the events again; the views are still on disk.
        with contextlib.suppress(OSError), locked(os.path.join(self.dir, "write.lock")):
            write_atomic(self.dir, f"state-{head.state_generation}.msgpack", [state_bytes])
            write_counted(self.dir, head.state_generation, counted)
            write_atomic(self.dir, "head.msgpack", [with_header(msgspec.msgpack.encode(head))])
            keep = {head.generation, head.previous, head.state_generation, old.state_generation}
            self._sweep(keep=keep)
        return head

    def _counted(
        self, graph: MemGraph, old: Head | None, fresh: tuple[list[str], list[str]] | None
    ) -> bytes:
        """The counted file of ``graph``: ``old``'s with ``fresh`` added, or all of them."""
        return counted_body(graph, fresh, None if old is None else read_counted(self.dir, old))

    def _sweep(self, keep: Iterable[str]) -> None:
        """Remove the files of generations other than ``keep`` (a reader that opened the
        previous head may still need the previous generation)."""
        kept = {g for g in keep if g}
        for name in os.listdir(self.dir):
            stem = name.rsplit(".", 1)[0]
            gen = stem.partition("-")[2]
            # Temporary files left by a writer that died (the live one holds the lock).
            stale = name.startswith(".tmp-") or (
                stem.startswith(("state-", "views-", "index-", "journal-", "counted-"))
                and gen not in kept
            )
            if stale:
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(self.dir, name))

    def _open_views(self, head: Head) -> GraphViews:
        if self._memory is not None and self._memory[0] is head:
            return self._memory[1]
        return GraphViews.open(self.dir, head, read_index(self.dir, head), self._repaired)

    def _repaired(self) -> GraphViews:
        return self.rebuild()[1]


class _Found(NamedTuple):
    """A checkpoint as found: the head on disk, its journal, and the head they amount to."""

    base: Head
    journal: Journal
    head: Head
