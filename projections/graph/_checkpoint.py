"""The graph checkpoint's files under ``<store>/cache/graph/``, and how they are trusted.

* ``head.msgpack``: which log and seq the checkpoint is at (:class:`Head`), and which
  *generation* of the other files goes with it. Replaced atomically (rename), last.
* ``state-<gen>.msgpack``: the fold's whole state (:class:`StateFile`). Each map's values
  stay undecoded (``msgspec.Raw``) until the fold touches them, so a refresh after a few
  events decodes a few records, not the graph.
* ``views-<gen>.bin``: every node as ``evolog graph`` prints it (:mod:`._views`), back to back.
* ``index-<gen>.msgpack``: node ids in creation order, where each view starts, its CRC-32,
  its live flag and the row it was merged into (:class:`IndexFile`).
* ``journal-<state gen>.bin``: the advances since the state file was written that changed no
  view (attempts, outcomes that name no node and end no attempt a node counts), appended
  as checksummed frames (:mod:`._delta`); folded into a new state file once it outgrows
  its bound, so one attempt costs an append, not a rewrite of the state.
* ``counted-<state gen>.bin``: the CRC-32 of every attempt some node counts (the keys of
  the state's ``counted_in``), sorted after the CRC-32 of the rest: whether an outcome
  changes a view, without reading the state.

A generation's files are written under temporary names and renamed before the head that
names them, so a crash at any point leaves the old checkpoint or the new one, never a mix.
Other events that change no view write only a new state file: the head names its generation
apart (``state_generation``) and keeps the views, so a vector index synced to them stays in
sync. The head is where the checkpoint is unless its journal goes further: each entry carries
the position it brought the checkpoint to.
Nothing is trusted unread: the head carries the CRC-32 of the state and index files, the
index one per view, and a file that does not decode or check out is a damaged checkpoint,
rebuilt from the log (:class:`Damaged`). The journal is read up to its first frame that is
torn or fails its checksum: what precedes it is a checkpoint of its own, at an earlier seq
(the events after it are folded again from the log).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import zlib
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator, MutableMapping
from typing import Any, Final, Generic, TypeVar

import msgspec
from evolog.eventlog import checked_body, with_header

from ._delta import SeqMark
from ._memgraph import _STATE, MemGraph
from ._types import ConstraintRecord, CycleRecord, EdgeRecord, MarkRecord, StepRecord, StrategyNode

__all__ = [
    "FORMAT",
    "Counted",
    "CountedInState",
    "Damaged",
    "Head",
    "IndexFile",
    "StateFile",
    "counted_body",
    "graph_of",
    "locked",
    "new_generation",
    "read_counted",
    "read_head",
    "read_index",
    "read_state",
    "state_of",
    "write_atomic",
    "write_counted",
]

FORMAT: Final = 3
"""2: the state keeps what a node's tries are counted from (attempts by action id, their
verdicts, credits, the nodes counting each attempt) instead of format 1's per-node counts,
which left out the traces a node was dreamed from. 3: the journal and the counted file (a
reader of format 2 would not know the journal goes further than the head). A checkpoint of
another format is rebuilt."""

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
    path = os.path.join(directory, "head.msgpack")
    try:
        # A checked file: a flipped bit in its list of changed nodes would otherwise leave
        # a node's vectors unsynced.
        body = checked_body(_read(path), path, "the graph checkpoint's head")
        if body is None:
            return None
        head = _HEAD_DECODER.decode(body)
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


# -- the attempts nodes count -----------------------------------------------------------
class Counted:
    """The sorted CRC-32s of the attempts some node counts and of the action ids whose
    attempt is one: whether an outcome may change a view, without reading the state. A
    collision answers yes wrongly, which only costs a fold and a write."""

    __slots__ = ("crcs",)

    def __init__(self, body: bytes) -> None:
        self.crcs = array("I", body)  # native order: the file is written on this machine
        if self.crcs.itemsize != 4:  # pragma: no cover - every platform we run on
            raise Damaged("counted file: no 32-bit array type")

    def attempt(self, attempt: str) -> bool:
        """Whether some node may count ``attempt``."""
        return self._has(zlib.crc32(attempt.encode()))

    def action(self, action_id: str) -> bool:
        """Whether some node may count the attempt ``action_id`` names in the state."""
        return self._has(zlib.crc32(b"\0" + action_id.encode()))

    def _has(self, key: int) -> bool:
        i = bisect_left(self.crcs, key)
        return i < len(self.crcs) and self.crcs[i] == key


class CountedInState(Counted):
    """:class:`Counted`'s answers read from the state itself (no counted file to read)."""

    def __init__(self, state: StateFile) -> None:
        self.state = state

    def attempt(self, attempt: str) -> bool:
        return attempt in self.state.counted_in

    def action(self, action_id: str) -> bool:
        return self.state.actions.get(action_id, "\0") in self.state.counted_in


def read_counted(directory: str, head: Head) -> Counted | None:
    """The counted file of ``head``'s state, or None when it is missing or damaged."""
    try:
        data = _read(os.path.join(directory, f"counted-{head.state_generation}.bin"))
    except Damaged:
        return None
    path = os.path.join(directory, f"counted-{head.state_generation}.bin")
    body = checked_body(data, path, "the counted file")
    if body is None or len(body) % 4:
        return None
    return Counted(bytes(body))


def counted_body(
    graph: MemGraph, fresh: tuple[Iterable[str], Iterable[str]] | None, old: Counted | None
) -> bytes:
    """The counted file of ``graph``: ``old``'s with ``fresh`` (attempts, action ids) added
    (:func:`._delta.counted_candidates`), or, without them, every one."""
    import numpy as np  # only to write

    if fresh is None or old is None:
        counted, actions = graph._counted_in, graph._actions
        fresh = counted, [x for x, attempt in actions.items() if attempt in counted]
    keys = [*(a.encode() for a in fresh[0]), *(b"\0" + x.encode() for x in fresh[1])]
    new = np.unique(np.fromiter((zlib.crc32(k) for k in keys), np.uint32, len(keys)))
    if old is None or not len(old.crcs):
        return new.tobytes()
    base = np.frombuffer(old.crcs, np.uint32)
    at = np.searchsorted(base, new)
    added = base[np.minimum(at, len(base) - 1)] != new
    return np.insert(base, at[added], new[added]).tobytes()


def write_counted(directory: str, generation: str, body: bytes) -> None:
    """Write the counted file of a state generation."""
    write_atomic(directory, f"counted-{generation}.bin", [with_header(body)])


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


@contextlib.contextmanager
def locked(path: str) -> Iterator[None]:
    """Hold the checkpoint's write lock: writers take turns, so one's sweep never removes
    the files another has written but not yet named in the head."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock
