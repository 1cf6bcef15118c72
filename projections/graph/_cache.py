"""The memory-graph checkpoint under ``<store>/cache/graph/``: the graph without a refold.

:func:`load_memgraph` folds every dream event of the log; at 1e5 nodes that is seconds, and
``evolog route`` and ``evolog graph`` used to pay it on every call. The checkpoint
(:mod:`._checkpoint`) keeps the fold's state and every node's view at some seq; a call
applies only the events appended since, like the edge and ledger checkpoints:

* nothing new: nothing is decoded; ``route`` reads a few views, ``graph`` concatenates them;
* new events the fold does not keep (outcomes that end no attempt and name no node): only
  the head moves; attempts and their outcomes are folded, since they count for the nodes
  dreamed from them (now, or in a dream to come);
* otherwise the state is read (records decoded only where the new events touch them), the
  events folded in, and the views of the nodes they changed rendered again (a node's view
  covers everything merged into it, so the nodes it was merged into change with it);
* a retraction among the new events may undo what was folded, so it rebuilds, as does a
  checkpoint of another format or another log, or one that is damaged or missing.

It is a cache: deleting it changes no answer, and incremental refreshes equal a rebuild
(tests/test_graph_checkpoint.py). A checkpoint that cannot be written costs the next call
a rebuild, never an answer.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import zlib
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from typing import Final

import msgspec
from evolog.eventlog import (
    AnyEvent,
    Attempt,
    ChildStep,
    Constraint,
    EventLog,
    Link,
    Merge,
    Node,
    Outcome,
    Prune,
    Retraction,
    Snapshot,
)

from ._checkpoint import (
    FORMAT,
    Damaged,
    Head,
    IndexFile,
    StateFile,
    graph_of,
    new_generation,
    read_head,
    read_index,
    read_state,
    state_of,
    write_atomic,
)
from ._delta import events_after, mark_at
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
        except Damaged:
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
        head = self._valid_head(snap, head_seq)
        if head is None:
            return self._rebuild(snap)
        try:
            if head.applied == head_seq:
                return head, self._state(head) if want_state else None
            delta = events_after(snap, head.applied, _DELTA_KINDS)
            if any(isinstance(e, Retraction) for e in delta):
                return self._rebuild(snap)
            # One read of the state file serves both the check and the fold.
            state: list[StateFile] = []

            def read() -> StateFile:
                if not state:
                    state.append(read_state(self.dir, head))
                return state[0]

            if not want_state and not self._touches(head, delta, read):
                return self._move(snap, head, head_seq, delta), None
            graph = graph_of(read(), head.last_seq)
            ended = ended_attempts(graph, delta)
            graph.apply_all(delta)
            if graph.stale:  # pragma: no cover - retractions rebuild above
                return self._rebuild(snap)
            changed = dirty_nodes(graph, delta, ended)
            index = read_index(self.dir, head)
            return self._write(snap, head_seq, graph, changed, (head, index)), graph
        except Damaged:
            return self._rebuild(snap)

    def _valid_head(self, snap: Snapshot, head_seq: int) -> Head | None:
        head = read_head(self.dir)
        if head is None or head.format != FORMAT or head.applied > head_seq:
            return None
        for known in (head.first, head.last):
            if known.seq and mark_at(snap, known.seq, known).id != known.id:
                return None  # another log now lives at this path
        return head

    def _state(self, head: Head) -> MemGraph:
        return graph_of(read_state(self.dir, head), head.last_seq)

    def _touches(
        self, head: Head, delta: Sequence[AnyEvent], state: Callable[[], StateFile]
    ) -> bool:
        """Whether the new events must be folded: all but outcomes that name no node and end
        no attempt (an attempt's outcomes count for the nodes dreamed from it, now or in a
        dream to come, so attempts are folded too)."""
        ids: set[str] | None = None
        actions: Collection[str] | None = None
        for e in delta:
            if not isinstance(e, Outcome):
                return True
            if e.action_id:
                if actions is None:
                    actions = state().actions
                if e.action_id in actions:
                    return True
            refs = [*e.decided_by, *e.supported_by]
            if refs:
                if ids is None:
                    ids = set(read_index(self.dir, head).ids)
                if not ids.isdisjoint(refs):
                    return True
        return False

    def _move(self, snap: Snapshot, head: Head, head_seq: int, delta: Sequence[AnyEvent]) -> Head:
        last_seq = max([head.last_seq, *(e.seq for e in delta)])
        moved = msgspec.structs.replace(
            head, applied=head_seq, last=mark_at(snap, head_seq, None), last_seq=last_seq
        )
        self._save_head(moved)
        return moved

    def _rebuild(self, snap: Snapshot) -> tuple[Head, MemGraph]:
        head_seq = snap.head_seq
        graph = load_memgraph(self.log, as_of=head_seq)
        return self._write(snap, head_seq, graph, set(), None), graph

    # -- writing ------------------------------------------------------------------------
    def _write(
        self,
        snap: Snapshot,
        head_seq: int,
        graph: MemGraph,
        changed: set[str],
        old: tuple[Head, IndexFile] | None,
    ) -> Head:
        """Write a new generation (views of ``changed`` and of new nodes rendered, the
        others copied from ``old``), then the head that names it."""
        ids = list(graph._nodes)
        if old is not None and not changed and ids == old[1].ids:
            return self._write_state(snap, head_seq, graph, old[0])
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
            # Writers take turns, so one's sweep never removes the files another has
            # written but not yet named in the head.
            with _locked(os.path.join(self.dir, "write.lock")):
                write_atomic(self.dir, f"views-{gen}.bin", chunks)
                write_atomic(self.dir, f"index-{gen}.msgpack", [index_bytes])
                write_atomic(self.dir, f"state-{gen}.msgpack", [state_bytes])
                write_atomic(self.dir, "head.msgpack", [msgspec.msgpack.encode(head)])
                self._sweep(
                    keep={gen, head.previous, "" if old is None else old[0].state_generation}
                )
        except OSError:
            # A cache that cannot be written is only a slower next call: this one reads
            # the views from memory.
            self._memory = (head, GraphViews(head, index, b"".join(chunks)))
        return head

    def _write_state(self, snap: Snapshot, head_seq: int, graph: MemGraph, old: Head) -> Head:
        """Write only a new state and a head that keeps ``old``'s views (no view changed)."""
        state_bytes = msgspec.msgpack.encode(state_of(graph))
        head = msgspec.structs.replace(
            old, applied=head_seq, last=mark_at(snap, head_seq, None), last_seq=graph.last_seq,
            cycles=len(graph._cycles), state_generation=new_generation(),
            state_crc=zlib.crc32(state_bytes),
        )  # fmt: skip
        # Not written: the next call folds the events again; the views are still on disk.
        with contextlib.suppress(OSError), _locked(os.path.join(self.dir, "write.lock")):
            write_atomic(self.dir, f"state-{head.state_generation}.msgpack", [state_bytes])
            write_atomic(self.dir, "head.msgpack", [msgspec.msgpack.encode(head)])
            keep = {head.generation, head.previous, head.state_generation, old.state_generation}
            self._sweep(keep=keep)
        return head

    def _save_head(self, head: Head) -> None:
        with contextlib.suppress(OSError), _locked(os.path.join(self.dir, "write.lock")):
            write_atomic(self.dir, "head.msgpack", [msgspec.msgpack.encode(head)])

    def _sweep(self, keep: Iterable[str]) -> None:
        """Remove the files of generations other than ``keep`` (a reader that opened the
        previous head may still need the previous generation)."""
        kept = {g for g in keep if g}
        for name in os.listdir(self.dir):
            stem = name.rsplit(".", 1)[0]
            gen = stem.partition("-")[2]
            # Temporary files left by a writer that died (the live one holds the lock).
            stale = name.startswith(".tmp-") or (
                stem.startswith(("state-", "views-", "index-")) and gen not in kept
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


@contextlib.contextmanager
def _locked(path: str) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def ended_attempts(graph: MemGraph, delta: Iterable[AnyEvent]) -> set[str]:
    """The attempts the outcomes among ``delta`` end, read before the graph folds them (an
    attempt after an outcome takes over its action id)."""
    actions: dict[str, str] = {}
    out: set[str] = set()
    for e in delta:
        if isinstance(e, Attempt):
            actions[e.action_id or e.id] = e.id
        elif isinstance(e, Outcome) and e.action_id:
            attempt = actions.get(e.action_id) or graph._actions.get(e.action_id)
            if attempt is not None:
                out.add(attempt)
    return out


def dirty_nodes(graph: MemGraph, delta: Iterable[AnyEvent], ended: Iterable[str] = ()) -> set[str]:
    """Nodes whose view the events may have changed, with every node they were merged into
    (a view covers its whole group); ``ended``: the attempts whose outcomes came in
    (:func:`ended_attempts`), whose counts change for the nodes dreamed from them."""
    out: set[str] = set()
    traces: set[str] = set()
    for trace in ended:
        out.update(graph._counted_in.get(trace, ()))
    for e in delta:
        if isinstance(e, Outcome):
            out.update(r for r in (*e.decided_by, *e.supported_by) if graph.node(r) is not None)
        elif isinstance(e, Node | ChildStep | Prune):
            out.add(e.node)
        elif isinstance(e, Merge):
            out.update((e.node, e.merged))
        elif isinstance(e, Link):
            out.add(e.src.partition("#")[0])
        elif isinstance(e, Constraint):
            if e.node is not None:
                out.add(e.node)
            else:
                traces.add(e.trace)
    if traces:
        # A constraint given by trace belongs to every node served by that trace.
        out.update(n.id for n in graph.nodes(live_only=False) if not traces.isdisjoint(n.traces))
    for node_id in list(out):
        record = graph.node(node_id)
        seen = 0
        while record is not None and record.merged_into is not None and seen < len(graph):
            out.add(record.merged_into)
            record = graph.node(record.merged_into)
            seen += 1
    return {n for n in out if graph.node(n) is not None}
