"""Node views: each node as ``evolog graph`` prints it, rendered once per change.

A view is the node's record with its successes and failures, steps, constraints and stored
links (everything merged into it included), as indented JSON at the depth ``evolog graph``
prints it. The checkpoint keeps every view (:mod:`._checkpoint`); :class:`GraphViews` reads
them back, so printing the graph is a concatenation and routing decodes only the few nodes a
search returns. It answers the read side of :class:`MemGraph` (``node``, ``resolve``,
``nodes``, ``steps``, ``constraints``, ``outcomes``, ``edges``) from the views.
"""

from __future__ import annotations

import array
import mmap
import os
import sys
import zlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any, BinaryIO, Final, Literal, Protocol

import msgspec

from ._checkpoint import Damaged, Head, IndexFile
from ._lean import kernels
from ._types import (
    STRUCTURAL_EDGE_TYPES,
    ConstraintView,
    EdgeRecord,
    StepRecord,
    StrategyNode,
    structural_edges,
)

__all__ = ["GraphReader", "GraphViews", "graph_document", "node_view", "render_view"]


class GraphReader(Protocol):
    """What routing and printing read from a memory graph (:class:`MemGraph` has it all)."""

    def __len__(self) -> int: ...
    def node(self, node_id: str) -> StrategyNode | None: ...
    def resolve(self, node_id: str) -> str | None: ...
    def nodes(self, *, live_only: bool = True) -> Iterator[StrategyNode]: ...
    def steps(self, node_id: str) -> tuple[StepRecord, ...]: ...
    def constraints(self, node_id: str) -> tuple[ConstraintView, ...]: ...
    def outcomes(self, node_id: str) -> tuple[int, int]: ...
    def edges(self, node_id: str | None = None) -> list[EdgeRecord]: ...


def node_view(graph: GraphReader, node_id: str) -> dict[str, Any]:
    """The node as ``evolog graph`` shows it (plain data)."""
    node = graph.node(node_id)
    if node is None:
        raise KeyError(node_id)
    s, f = graph.outcomes(node_id)
    out: dict[str, Any] = msgspec.to_builtins(node)
    out["successes"], out["failures"] = s, f
    out["steps"] = [
        {"id": st.id, "index": st.index, "action": st.action, "reasoning": st.reasoning,
         "result": st.result, "critical": st.critical, "cycle": st.cycle}
        for st in graph.steps(node_id)
    ]  # fmt: skip
    out["constraints"] = msgspec.to_builtins(graph.constraints(node_id))
    out["links"] = [
        msgspec.to_builtins(e)
        for e in graph.edges(node_id)
        if e.edge_type not in STRUCTURAL_EDGE_TYPES
    ]
    return out


_INDENT: Final = b"\n    "


def render_view(graph: GraphReader, node_id: str) -> bytes:
    """The view's bytes: indented as an element of the ``nodes`` list of ``evolog graph``."""
    text = msgspec.json.format(msgspec.json.encode(node_view(graph, node_id)), indent=2)
    return b"    " + text.replace(b"\n", _INDENT)


def graph_document(views: Sequence[bytes | memoryview], live: int, cycles: int) -> list[bytes]:
    """``evolog graph``'s output as chunks: exactly ``msgspec.json.format(..., indent=2)`` of
    ``{"nodes": [...], "live": live, "cycles": cycles}`` and a newline."""
    tail = b'  "live": %d,\n  "cycles": %d\n}\n' % (live, cycles)
    if not views:
        return [b'{\n  "nodes": [],\n', tail]
    chunks: list[Any] = [b'{\n  "nodes": [\n']
    for i, view in enumerate(views):
        if i:
            chunks.append(b",\n")
        chunks.append(view)
    chunks.append(b"\n  ],\n" + tail)
    return chunks


def _little(data: bytes, code: Literal["q", "I", "i", "B"]) -> Any:
    """Little-endian integers of an index array, as a sequence (no copy where native)."""
    if sys.byteorder == "little":
        return memoryview(data).cast(code)
    values = array.array(code, data)  # pragma: no cover - big-endian hosts
    values.byteswap()  # pragma: no cover
    return values  # pragma: no cover


class _StepDoc(msgspec.Struct, frozen=True):
    id: str
    index: int
    action: str = ""
    reasoning: str = ""
    result: str = ""
    critical: bool = True
    cycle: str = ""


class _Extras(msgspec.Struct, frozen=True):
    successes: int = 0
    failures: int = 0
    steps: tuple[_StepDoc, ...] = ()
    constraints: tuple[ConstraintView, ...] = ()
    links: tuple[EdgeRecord, ...] = ()


_NODE: Final = msgspec.json.Decoder(StrategyNode)
_EXTRAS: Final = msgspec.json.Decoder(_Extras)


class GraphViews:
    """The memory graph read from a checkpoint's views (see the module docstring).

    ``repair`` rebuilds the checkpoint when a view fails its checksum; the reader then
    continues on the rebuilt one.
    """

    __slots__ = ("_crcs", "_data", "_extras", "_live", "_nodes", "_offsets", "_parents",
                 "_repair", "_rows", "head", "ids")  # fmt: skip

    def __init__(
        self,
        head: Head,
        index: IndexFile,
        data: bytes | mmap.mmap,
        repair: Callable[[], GraphViews] | None = None,
    ) -> None:
        self._repair = repair
        self.head = head
        self.ids = index.ids
        self._offsets = _little(index.offsets, "q")
        self._crcs = _little(index.crcs, "I")
        self._parents = _little(index.parents, "i")
        self._live = _little(index.live, "B")
        self._rows: dict[str, int] | None = None
        self._nodes: dict[int, StrategyNode] = {}
        self._extras: dict[int, _Extras] = {}
        if len(data) != int(self._offsets[-1]):
            raise Damaged(f"views: expected {int(self._offsets[-1])} bytes; got {len(data)}")
        self._data = memoryview(data)

    @classmethod
    def open(
        cls,
        directory: str,
        head: Head,
        index: IndexFile,
        repair: Callable[[], GraphViews] | None = None,
    ) -> GraphViews:
        """The views of ``head``'s generation in ``directory``, mapped, not read."""
        path = os.path.join(directory, f"views-{head.generation}.bin")
        try:
            with open(path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        except OSError as exc:
            raise Damaged(f"{path}: {exc.strerror}") from None
        return cls(head, index, data, repair)

    # -- the checkpoint's own figures ---------------------------------------------------
    @property
    def generation(self) -> str:
        return self.head.generation

    @property
    def live_count(self) -> int:
        """How many nodes are live."""
        return self.head.live

    @property
    def cycle_count(self) -> int:
        """How many dream cycles are not retracted."""
        return self.head.cycles

    # -- views ----------------------------------------------------------------------------
    def row(self, node_id: str) -> int | None:
        """The row of ``node_id`` (creation order), or None."""
        if self._rows is None:
            self._rows = dict(zip(self.ids, range(len(self.ids)), strict=True))
        return self._rows.get(node_id)

    def view(self, row: int) -> memoryview:
        """The view of the node at ``row``, checked against its CRC-32."""
        start, end = int(self._offsets[row]), int(self._offsets[row + 1])
        view = self._data[start:end]
        if zlib.crc32(view) != int(self._crcs[row]):
            self._recover()
            return self.view(row)
        return view

    def entry(self, row: int) -> tuple[int, bool, int]:
        """The view's CRC-32, whether the node is live, and the row it was merged into."""
        return int(self._crcs[row]), bool(self._live[row]), int(self._parents[row])

    def views(self, *, live_only: bool = True) -> list[memoryview]:
        """Every view in creation order (live nodes only by default)."""
        rows = range(len(self.ids))
        return [self.view(r) for r in rows if self._live[r] or not live_only]

    def write_document(self, out: BinaryIO, *, live_only: bool = True) -> bool:
        """Write :func:`graph_document` of every view (live ones only by default) to ``out``:
        every view checked first, then written by ``writev`` straight from the mapping.
        False where that needs what is missing (the kernels, a file descriptor): nothing is
        written and the caller prints :meth:`views` itself."""
        try:
            fd = out.fileno()
        except (AttributeError, OSError, ValueError):
            return False
        if kernels is None:
            return False
        live = self._live if live_only else None
        if kernels.check_views(self._data, self._offsets, self._crcs, live) >= 0:
            self._recover()
            return self.write_document(out, live_only=live_only)
        selected = any(live) if live is not None else bool(self.ids)
        chunks = graph_document([b"-"] if selected else [], self.head.live, self.head.cycles)
        if len(chunks) == 2:
            out.write(b"".join(chunks))
        else:  # [head, b"-" (the views), tail]
            out.write(chunks[0])
            out.flush()
            kernels.write_views(fd, self._data, self._offsets, live, b",\n")
            out.write(chunks[2])
        out.flush()
        return True

    def _recover(self) -> None:
        if self._repair is None:
            raise Damaged("a view fails its checksum")
        fresh = self._repair()
        # The rebuilt views replace these; a second failure is not retried forever.
        for name in self.__slots__:
            setattr(self, name, getattr(fresh, name))
        self._repair = None

    def _node_at(self, row: int) -> StrategyNode:
        node = self._nodes.get(row)
        if node is None:
            node = self._nodes[row] = _NODE.decode(self.view(row))
        return node

    def _extras_of(self, node_id: str) -> _Extras:
        row = self.row(node_id)
        if row is None:
            return _Extras()
        extras = self._extras.get(row)
        if extras is None:
            extras = self._extras[row] = _EXTRAS.decode(self.view(row))
        return extras

    # -- the read side of MemGraph ------------------------------------------------------
    def __len__(self) -> int:
        return len(self.ids)

    def node(self, node_id: str) -> StrategyNode | None:
        """The node with this id (live or not), or None."""
        row = self.row(node_id)
        return None if row is None else self._node_at(row)

    def resolve(self, node_id: str) -> str | None:
        """The live-or-pruned node that ``node_id`` was (transitively) merged into."""
        row = self.row(node_id)
        if row is None:
            return None
        seen = 0
        while self._parents[row] >= 0 and seen < len(self.ids):
            row = int(self._parents[row])
            seen += 1
        return self.ids[row]

    def nodes(self, *, live_only: bool = True) -> Iterator[StrategyNode]:
        """Nodes in creation order (live ones only by default)."""
        for row in range(len(self.ids)):
            if self._live[row] or not live_only:
                yield self._node_at(row)

    def steps(self, node_id: str) -> tuple[StepRecord, ...]:
        """The node's own steps in order."""
        return tuple(
            StepRecord(node_id, s.index, s.reasoning, s.action, s.result, s.critical, s.cycle)
            for s in self._extras_of(node_id).steps
        )

    def constraints(self, node_id: str) -> tuple[ConstraintView, ...]:
        """Distinct constraints of a node and of everything merged into it."""
        return self._extras_of(node_id).constraints

    def outcomes(self, node_id: str) -> tuple[int, int]:
        """(successes, failures) of outcomes naming the node or anything merged into it."""
        extras = self._extras_of(node_id)
        return extras.successes, extras.failures

    def edges(self, node_id: str | None = None) -> list[EdgeRecord]:
        """Edges from a node and its steps (or from all): stored links, then structural ones."""
        out: list[EdgeRecord] = []
        for nid in [node_id] if node_id is not None else list(self.ids):
            out.extend(self._extras_of(nid).links)
            out.extend(structural_edges(self.steps(nid)))
        return out
