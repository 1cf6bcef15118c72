"""Node vectors in a usearch index: a cache of the memory graph, rebuilt from its events.

Each live strategy node is represented by the embeddings of the texts :func:`node_texts`
picks (its goal with its summary, and the goals of every trace merged into it), one vector
per text, so a paraphrase of any task the node has served finds it. A search returns nodes
ranked by their best-matching vector (cosine similarity).

The index is a cache: :meth:`VectorIndex.sync` brings it to a wanted ``node -> texts``
mapping by adding and removing only the differences; :meth:`VectorIndex.save` writes it under
``<store>/cache/`` keyed by the embedder's name; a missing, foreign or damaged cache file is
simply rebuilt. Small indexes are searched exactly; large ones through the HNSW graph.
An opened cache stays memory-mapped, its texts undecoded, until something changes it, and
it records the graph checkpoint generation it was synced to (:func:`sync_to_views`), so
a cold route neither reads it in full nor compares every node's texts.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final

import msgspec
import numpy as np

from .._errors import EngineError, InvalidParameterError
from ._embed import Embedder, Vectors
from ._staged import Staged
from ._types import StrategyNode
from ._views import GraphReader, GraphViews

__all__ = ["MAX_TEXTS_PER_NODE", "VectorIndex", "node_texts", "sync_to_views", "wanted_texts"]

MAX_TEXTS_PER_NODE: Final = 16
_FORMAT: Final = 2  # 2: key map as arrays, texts decoded lazily
EXACT_BELOW: Final = 4096
"""Indexes with fewer vectors are searched exhaustively (exact and, that small, faster)."""


def node_texts(node: StrategyNode) -> tuple[str, ...]:
    """The texts a node is found by: its goal with its summary, then each trigger goal.

    The goal-with-summary text lets a task that names the method (not just the problem)
    find the node; on the routing set it lifted right-node routing from 89 % to 94 %.
    """
    goals = dict.fromkeys(t.strip() for t in (node.goal, *node.trigger_goals) if t.strip())
    texts = list(goals)[: MAX_TEXTS_PER_NODE - 1]
    summary = node.summary.strip()
    if summary:
        texts.append(f"{node.goal.strip()}. {summary}" if node.goal.strip() else summary)
    return tuple(dict.fromkeys(texts))


def wanted_texts(graph: GraphReader) -> dict[str, tuple[str, ...]]:
    """``node -> texts`` for every live node of the graph."""
    return {node.id: node_texts(node) for node in graph.nodes()}


def sync_to_views(index: VectorIndex, views: GraphViews) -> bool:
    """Bring the index to the views' generation of the graph; returns whether it changed.

    An index synced to the previous generation changes only where the nodes that
    generation re-rendered did; any other is synced in full.
    """
    head = views.head
    if index.graph == head.generation:
        return False
    if index.graph and index.graph == head.previous:
        wanted: dict[str, tuple[str, ...]] = {}
        for node_id in head.changed:
            node = views.node(node_id)
            wanted[node_id] = node_texts(node) if node is not None and node.live else ()
        index.sync_nodes(wanted)
    else:
        index.sync(wanted_texts(views))
    index.graph = head.generation
    return True


class _Meta(msgspec.Struct):
    format: int
    embedder: str
    dim: int
    next_key: int
    keys: bytes  # uint64, ascending
    node_of: bytes  # int32 per key: its node's position in ``nodes``
    nodes: list[str]
    texts: msgspec.Raw  # list[str] per key, decoded only to change the index
    graph: str = ""


class _Lazy(msgspec.Struct):
    """A loaded index's key map before it is needed in full: enough to name search hits."""

    keys: np.ndarray
    node_of: np.ndarray
    nodes: list[str]
    texts: msgspec.Raw


class VectorIndex:
    """Vectors of node texts, searchable by cosine similarity; see the module docstring."""

    def __init__(self, embedder: Embedder, directory: str | None = None) -> None:
        self.embedder = embedder
        self.directory = directory
        self._entries_map: dict[int, tuple[str, str]] | None = {}
        self._by_node_map: dict[str, dict[str, int]] = {}
        # A loaded index stays mapped (usearch ``view``) with its key map undecoded until
        # something changes it: a cold route searches without reading either in full.
        self._lazy: _Lazy | None = None
        self._viewed = False
        self._next_key = 1
        self._index = self._new_index()
        self._staged: Staged | None = None
        self.graph = ""
        """The graph checkpoint generation the index was last synced to ("" if unknown)."""

    def _new_index(self) -> Any:
        from usearch.index import Index

        return Index(ndim=self.embedder.dim, metric="cos", dtype="f16")

    # -- persistence --------------------------------------------------------------------
    @classmethod
    def open(cls, embedder: Embedder, directory: str | None) -> VectorIndex:
        """The cached index for ``embedder`` in ``directory``, or an empty one."""
        index = cls(embedder, directory)
        if directory is not None:
            with contextlib.suppress(OSError, ValueError, RuntimeError, msgspec.DecodeError):
                index._load()
        return index

    def _paths(self) -> tuple[str, str]:
        if self.directory is None:
            raise InvalidParameterError("this vector index has no cache directory")
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in self.embedder.name)
        base = os.path.join(self.directory, f"vectors-{safe}")
        return base + ".usearch", base + ".meta"

    def _load(self) -> None:
        index_path, meta_path = self._paths()
        with open(meta_path, "rb") as f:
            meta = msgspec.msgpack.decode(f.read(), type=_Meta)
        if (meta.format, meta.embedder, meta.dim) != (
            _FORMAT,
            self.embedder.name,
            self.embedder.dim,
        ):
            return
        keys = np.frombuffer(meta.keys, "<u8")
        node_of = np.frombuffer(meta.node_of, "<i4")
        if len(node_of) != len(keys) or (len(node_of) and node_of.max() >= len(meta.nodes)):
            return
        loaded = self._new_index()
        loaded.view(index_path)
        if len(loaded) != len(keys):
            return
        self._index = loaded
        self._viewed = True
        self._next_key = meta.next_key
        self.graph = meta.graph
        self._lazy = _Lazy(keys, node_of, meta.nodes, meta.texts)
        self._entries_map = None

    @property
    def _entries(self) -> dict[int, tuple[str, str]]:
        """key -> (node, text), decoded from the cache file on first use."""
        if self._entries_map is None:
            lazy = self._lazy
            assert lazy is not None
            texts = msgspec.msgpack.decode(lazy.texts, type=list[str])
            nodes = [lazy.nodes[i] for i in lazy.node_of.tolist()]
            entries: dict[int, tuple[str, str]] = {}
            by_node: dict[str, dict[str, int]] = {}
            for key, node, text in zip(lazy.keys.tolist(), nodes, texts, strict=True):
                entries[key] = (node, text)
                by_node.setdefault(node, {})[text] = key
            self._entries_map, self._by_node_map, self._lazy = entries, by_node, None
        return self._entries_map

    @property
    def _by_node(self) -> dict[str, dict[str, int]]:
        """node -> {text: key}."""
        if self._entries_map is None:
            _ = self._entries
        return self._by_node_map

    def _node_of(self, key: int) -> str | None:
        lazy = self._lazy
        if lazy is None:
            entry = self._entries.get(key)
            return entry[0] if entry is not None else None
        pos = int(np.searchsorted(lazy.keys, key))
        if pos < len(lazy.keys) and int(lazy.keys[pos]) == key:
            return lazy.nodes[int(lazy.node_of[pos])]
        return None

    def _writable(self) -> Any:
        """The usearch index, read in full if it was only mapped."""
        if self._viewed:
            index_path, _ = self._paths()
            loaded = self._new_index()
            try:
                loaded.load(index_path)
            except (RuntimeError, ValueError) as exc:
                raise EngineError(f"{index_path}: reading the vector index: {exc}") from None
            self._index, self._viewed = loaded, False
        return self._index

    @contextlib.contextmanager
    def staging(self) -> Iterator[None]:
        """Within the block, additions are searchable at once but inserted at its end."""
        self._staged = Staged(self.embedder.dim)
        try:
            yield
        finally:
            self.flush()
            self._staged = None

    def flush(self) -> None:
        """Insert staged vectors into the HNSW graph."""
        staged = self._staged
        if staged is None or not staged.rows:
            return
        keys, vectors = staged.drain()
        try:
            self._writable().add(keys, np.ascontiguousarray(vectors))
        except (RuntimeError, ValueError) as exc:
            raise EngineError(f"adding vectors to the index: {exc}") from None
        self._staged = Staged(self.embedder.dim)

    def save(self) -> None:
        """Write the index and its key map atomically into the cache directory."""
        self.flush()
        index_path, meta_path = self._paths()
        items = sorted(self._entries.items())
        positions: dict[str, int] = {}
        node_of = [positions.setdefault(n, len(positions)) for _, (n, _) in items]
        meta = _Meta(
            _FORMAT, self.embedder.name, self.embedder.dim, self._next_key,
            np.asarray([k for k, _ in items], "<u8").tobytes(),
            np.asarray(node_of, "<i4").tobytes(), list(positions),
            msgspec.Raw(msgspec.msgpack.encode([t for _, (_, t) in items])), self.graph,
        )  # fmt: skip
        try:
            os.makedirs(os.path.dirname(index_path), exist_ok=True)
            self._index.save(index_path + ".tmp")
            with open(meta_path + ".tmp", "wb") as f:
                f.write(msgspec.msgpack.encode(meta))
            os.replace(index_path + ".tmp", index_path)
            os.replace(meta_path + ".tmp", meta_path)
        except (OSError, RuntimeError) as exc:
            raise EngineError(f"{index_path}: could not save the vector index: {exc}") from None

    # -- contents -----------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._lazy.keys) if self._lazy is not None else len(self._entries)

    def nodes(self) -> frozenset[str]:
        """Nodes with at least one vector."""
        return frozenset(self._by_node)

    def texts(self, node: str) -> tuple[str, ...]:
        """The texts ``node`` has vectors for."""
        return tuple(self._by_node.get(node, {}))

    def sync(self, wanted: Mapping[str, Sequence[str]]) -> tuple[int, int]:
        """Make the index hold exactly ``wanted``; returns (vectors added, vectors removed)."""
        stale = [
            key
            for node, texts in self._by_node.items()
            for text, key in texts.items()
            if text not in wanted.get(node, ())
        ]
        self._remove_keys(stale)
        added = self.add_many(wanted.items())
        return added, len(stale)

    def sync_nodes(self, wanted: Mapping[str, Sequence[str]]) -> tuple[int, int]:
        """Make the index hold exactly ``wanted[node]`` for each node of ``wanted`` (others
        are left alone); returns (vectors added, vectors removed)."""
        stale = [
            key
            for node, texts in wanted.items()
            for text, key in self._by_node.get(node, {}).items()
            if text not in texts
        ]
        self._remove_keys(stale)
        return self.add_many(wanted.items()), len(stale)

    def add(self, node: str, texts: Sequence[str]) -> int:
        """Add the vectors of ``node``'s texts that are not there yet; returns how many."""
        return self.add_many([(node, texts)])

    def add_many(self, items: Iterable[tuple[str, Sequence[str]]]) -> int:
        """Add missing (node, text) vectors in one embedding batch; returns how many."""
        pending: list[tuple[str, str]] = []
        for node, texts in items:
            have = self._by_node.get(node, {})
            fresh = (t for t in dict.fromkeys(texts) if t not in have)
            pending.extend((node, t) for t in fresh)
        if not pending:
            return 0
        return self._insert(pending, self.embedder.embed([t for _, t in pending]))

    def add_vectors(self, node: str, texts: Sequence[str], vectors: Vectors) -> int:
        """Add ``node``'s texts with vectors already computed (row i belongs to text i)."""
        have = self._by_node.get(node, {})
        rows = [i for i, t in enumerate(texts) if t not in have and t not in texts[:i]]
        if not rows:
            return 0
        return self._insert([(node, texts[i]) for i in rows], vectors[rows])

    def _insert(self, pending: list[tuple[str, str]], vectors: Vectors) -> int:
        keep = np.flatnonzero(np.linalg.norm(vectors, axis=1) > 0)
        if keep.size == 0:
            return 0
        keys = np.arange(self._next_key, self._next_key + keep.size, dtype=np.uint64)
        self._next_key += int(keep.size)
        rows = np.ascontiguousarray(vectors[keep], dtype=np.float32)
        if self._staged is not None:
            self._staged.add(keys.tolist(), rows)
        else:
            try:
                self._writable().add(keys, rows)
            except (RuntimeError, ValueError) as exc:
                raise EngineError(f"adding vectors to the index: {exc}") from None
        for key, row in zip(keys.tolist(), keep.tolist(), strict=True):
            node, text = pending[row]
            self._entries[key] = (node, text)
            self._by_node.setdefault(node, {})[text] = key
        return int(keep.size)

    def remove(self, node: str) -> int:
        """Drop every vector of ``node``; returns how many."""
        keys = list(self._by_node.get(node, {}).values())
        self._remove_keys(keys)
        return len(keys)

    def _remove_keys(self, keys: Sequence[int]) -> None:
        if not keys:
            return
        indexed = self._staged.discard(keys) if self._staged is not None else list(keys)
        if indexed:
            self._writable().remove(np.asarray(indexed, dtype=np.uint64))
        for key in keys:
            node, text = self._entries.pop(key)
            texts = self._by_node[node]
            del texts[text]
            if not texts:
                del self._by_node[node]

    # -- search -------------------------------------------------------------------------
    def search_text(self, text: str, k: int = 5) -> list[tuple[str, float]]:
        """The ``k`` nodes most similar to ``text``, best first, as (node, cosine)."""
        return self.search(self.embedder.embed([text])[0], k)

    def search(
        self, vector: Vectors, k: int = 5, *, exact: bool | None = None
    ) -> list[tuple[str, float]]:
        """The ``k`` nodes whose best vector is most similar to ``vector``.

        ``exact`` forces an exhaustive search (deterministic) or the HNSW graph (fast); by
        default indexes below EXACT_BELOW vectors are searched exhaustively.
        """
        if k < 1:
            raise InvalidParameterError(f"k: expected a positive integer; got {k}")
        size = len(self)
        if size == 0 or not np.any(vector):
            return []
        # Several vectors may belong to one node: over-fetch, then keep each node's best.
        query = np.ascontiguousarray(vector, dtype=np.float32)
        count = min(size, k * 4)
        hits = self._staged.search(query, count) if self._staged is not None else []
        indexed = len(self._index)
        if indexed:
            thorough = indexed < EXACT_BELOW if exact is None else exact
            found = self._index.search(query, min(count, indexed), exact=thorough)
            hits += [
                (int(key), 1.0 - float(distance))
                for key, distance in zip(found.keys.tolist(), found.distances.tolist(), strict=True)
            ]
        best: dict[str, float] = {}
        for key, score in hits:
            node = self._node_of(key)
            if node is not None and score > best.get(node, -2.0):
                best[node] = score
        ranked = sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))
        return ranked[:k]

    def vector_of(self, text: str) -> Vectors:
        """The embedding of one text (a convenience for drift checks)."""
        return np.asarray(self.embedder.embed([text])[0], dtype=np.float32)
