"""The graph checkpoint's files under ``<store>/cache/graph/``, and how they are trusted.

* ``head.msgpack``: which log and seq the checkpoint is at (:class:`Head`), and which
  *generation* of the other files goes with it. Replaced atomically (rename), last.
* ``state-<gen>.msgpack``: the fold's whole state (:class:`StateFile`). Each map's values
  stay undecoded (``msgspec.Raw``) until the fold touches them, so a refresh after a few
  events decodes a few records, not the graph.
* ``views-<gen>.bin``: every node as ``evolog graph`` prints it (:mod:`._views`), back to back.
* ``index-<gen>.msgpack``: node ids in creation order, where each view starts, its CRC-32,
  its live flag and the row it was merged into (:class:`IndexFile`).

A generation's files are written under temporary names and renamed before the head that
names them, so a crash at any point leaves the old checkpoint or the new one, never a mix.
Events that change no view (an attempt, an outcome of a trace no node counts yet) write only
a new state file: the head names its generation apart (``state_generation``) and keeps the
views, so a vector index synced to them stays in sync.
Nothing is trusted unread: the head carries the CRC-32 of the state and index files, the
index one per view, and a file that does not decode or check out is a damaged checkpoint,
rebuilt from the log (:class:`Damaged`).
"""

from __future__ import annotations

import contextlib
import os
import zlib
from collections.abc import Iterable, Iterator, MutableMapping
from typing import Any, Final, Generic, TypeVar

import msgspec

from ._delta import SeqMark
from ._memgraph import _STATE, MemGraph
from ._types import ConstraintRecord, CycleRecord, EdgeRecord, MarkRecord, StepRecord, StrategyNode

__all__ = [
    "FORMAT",
    "Damaged",
    "Head",
    "IndexFile",
    "StateFile",
    "graph_of",
    "new_generation",
    "read_head",
    "read_index",
    "read_state",
    "state_of",
    "write_atomic",
]

FORMAT: Final = 2
"""2: the state keeps what a node's tries are counted from (attempts by action id, their
verdicts, credits, the nodes counting each attempt) instead of format 1's per-node counts,
which left out the traces a node was dreamed from; a format-1 checkpoint is rebuilt."""

V = TypeVar("V")


class Damaged(Exception):
    """A checkpoint file is missing, torn or fails its checksum: rebuild, never trust it."""


class Head(msgspec.Struct, kw_only=True):
    """The checkpoint's head: the log and seq it is at, and its generation's files."""

    format: int
    applied: int
    first: SeqMark
    last: SeqMark
    last_seq: int
    generation: str
    state_generation: str
    previous: str
    changed: list[str]
    live: int
    cycles: int
    state_crc: int
    index_crc: int


class StateFile(msgspec.Struct, kw_only=True):
    """:class:`MemGraph`'s state; the lazily decoded maps hold ``msgspec.Raw`` values."""

    retracted_cycles: list[str]
    retracted_ids: list[str]
    nodes: dict[str, msgspec.Raw]
    steps: dict[str, msgspec.Raw]
    links: dict[str, msgspec.Raw]
    by_node: dict[str, msgspec.Raw]
    by_trace: dict[str, msgspec.Raw]
    marks: dict[str, msgspec.Raw]
    absorbed: dict[str, tuple[str, ...]]
    cycles: dict[str, msgspec.Raw]
    consumed: dict[str, str]
    actions: dict[str, str]
    settled: dict[str, int]
    credits: dict[str, msgspec.Raw]
    counted_in: dict[str, tuple[str, ...]]


class IndexFile(msgspec.Struct, kw_only=True):
    """Where each node's view lives in the views file; arrays are little-endian bytes."""

    ids: list[str]
    offsets: bytes  # int64, one more than ids
    crcs: bytes  # uint32
    parents: bytes  # int32: the row of the node it was merged into, or -1
    live: bytes  # uint8


_LAZY: Final[dict[str, Any]] = {
    "nodes": StrategyNode,
    "steps": tuple[StepRecord, ...],
    "links": tuple[EdgeRecord, ...],
    "by_node": tuple[ConstraintRecord, ...],
    "by_trace": tuple[ConstraintRecord, ...],
    "marks": tuple[MarkRecord, ...],
    "cycles": CycleRecord,
    "credits": tuple[str | int, ...],
}
_DECODERS: Final = {name: msgspec.msgpack.Decoder(t) for name, t in _LAZY.items()}


class LazyMap(MutableMapping[str, V], Generic[V]):
    """A dict whose values are decoded on first access; order and semantics are a dict's."""

    __slots__ = ("_data", "_decode")

    def __init__(self, data: dict[str, Any], decoder: msgspec.msgpack.Decoder[Any]) -> None:
        self._data = data
        self._decode = decoder.decode

    def __getitem__(self, key: str) -> V:
        value = self._data[key]
        if type(value) is msgspec.Raw:
            # Replacing the value of an existing key keeps its place in the order.
            value = self._data[key] = self._decode(value)
        return value  # type: ignore[no-any-return]

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self._data else default

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __setitem__(self, key: str, value: V) -> None:
        self._data[key] = value

    def __delitem__(self, key: str) -> None:
        del self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def raw(self) -> dict[str, Any]:
        """The values as stored: decoded records, or ``Raw`` for those never touched."""
        return self._data


_STATE_DECODER: Final = msgspec.msgpack.Decoder(StateFile)
_INDEX_DECODER: Final = msgspec.msgpack.Decoder(IndexFile)
_HEAD_DECODER: Final = msgspec.msgpack.Decoder(Head)


def graph_of(state: StateFile, last_seq: int) -> MemGraph:
    """The graph a state file describes; records are decoded when first read."""
    graph = MemGraph(state.retracted_cycles, state.retracted_ids)
    graph.last_seq = last_seq
    for name in _STATE:
        value: Any = getattr(state, name[1:])
        if name[1:] in _DECODERS:
            value = LazyMap(value, _DECODERS[name[1:]])
        setattr(graph, name, value)
    return graph


def state_of(graph: MemGraph) -> StateFile:
    """The state file of a graph (records never decoded are written back as they were)."""
    maps: dict[str, Any] = {}
    for name in _STATE:
        value = getattr(graph, name)
        maps[name[1:]] = value.raw() if isinstance(value, LazyMap) else dict(value)
    return StateFile(
        retracted_cycles=sorted(graph.retracted_cycles),
        retracted_ids=sorted(graph.retracted_ids),
        **maps,
    )


def new_generation() -> str:
    """A fresh generation token (names the files of one write)."""
    import secrets  # only to write (as tempfile below): a cold reader imports neither

    return secrets.token_hex(8)


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise Damaged(f"{path}: {exc.strerror}") from None


def read_head(directory: str) -> Head | None:
    """The head, or None when there is none or it is damaged (both mean: rebuild)."""
    try:
        head = _HEAD_DECODER.decode(_read(os.path.join(directory, "head.msgpack")))
    except (Damaged, msgspec.DecodeError, msgspec.ValidationError):
        return None
    return head if head.format == FORMAT else None


def read_state(directory: str, head: Head) -> StateFile:
    data = _read(os.path.join(directory, f"state-{head.state_generation}.msgpack"))
    if zlib.crc32(data) != head.state_crc:
        raise Damaged("state file fails its checksum")
    try:
        return _STATE_DECODER.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise Damaged(f"state file: {exc}") from None


def read_index(directory: str, head: Head) -> IndexFile:
    data = _read(os.path.join(directory, f"index-{head.generation}.msgpack"))
    if zlib.crc32(data) != head.index_crc:
        raise Damaged("index file fails its checksum")
    try:
        index = _INDEX_DECODER.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise Damaged(f"index file: {exc}") from None
    n = len(index.ids)
    sizes = (len(index.offsets), len(index.crcs), len(index.parents), len(index.live))
    if sizes != (8 * (n + 1), 4 * n, 4 * n, n):
        raise Damaged("index file: arrays of the wrong length")
    return index


def write_atomic(directory: str, name: str, chunks: Iterable[bytes | memoryview]) -> None:
    """Write a file under a temporary name, then rename it into place."""
    import tempfile

    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix="-" + name)
    try:
        with os.fdopen(fd, "wb") as f:
            f.writelines(chunks)
        os.replace(tmp, os.path.join(directory, name))
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
