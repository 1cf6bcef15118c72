"""Node vectors in a usearch index: a cache of the memory graph, rebuilt from its events.

Each live strategy node is represented by the embeddings of the texts :func:`node_texts`
picks (its goal with its summary, and the goals of every trace merged into it), one vector
per text, so a paraphrase of any task the node has served finds it. A search returns nodes
ranked by their best-matching vector (cosine similarity).

The index is a cache: :meth:`VectorIndex.sync` brings it to a wanted ``node -> texts``
mapping by adding and removing only the differences; :meth:`VectorIndex.save` writes it under
``<store>/cache/`` keyed by the embedder's name; a missing, foreign or damaged cache file is
simply rebuilt. An opened cache stays memory-mapped, its texts undecoded, until something
changes it, and it records the graph checkpoint generation it was synced to
(:func:`sync_to_views`), so a cold route neither reads it in full nor compares every node's
texts.

Search: an index opened with its saved float16 rows (:mod:`._vecfiles`), or just saved, is
searched exhaustively over them by a C kernel (:mod:`._lean`), without numpy or usearch
(exact, deterministic, and what makes a cold route cheap); otherwise through usearch, small
indexes exhaustively and large ones through the HNSW graph.
"""

from __future__ import annotations

import bisect
import contextlib
import mmap
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import msgspec

from .._errors import EngineError, InvalidParameterError
from . import _vecfiles as files
from ._embed import Embedder
from ._lean import floats, kernels
from ._types import MAX_TEXTS_PER_NODE, node_texts
from ._views import GraphReader, GraphViews

if TYPE_CHECKING:
    from ._embed import Vectors
    from ._staged import Staged

__all__ = ["MAX_TEXTS_PER_NODE", "VectorIndex", "node_texts", "sync_to_views", "wanted_texts"]

EXACT_BELOW: Final = 4096
"""Indexes with fewer vectors are searched exhaustively (exact and, that small, faster)."""


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


class VectorIndex:
    """Vectors of node texts, searchable by cosine similarity; see the module docstring."""

    def __init__(self, embedder: Embedder, directory: str | None = None) -> None:
        self.embedder = embedder
        self.directory = directory
        self._entries_map: dict[int, tuple[str, str]] | None = {}
        self._by_node_map: dict[str, dict[str, int]] = {}
        # A loaded index stays mapped (usearch ``view``) with its key map undecoded until
        # something changes it: a cold route searches without reading either in full.
        self._lazy: files.Lazy | None = None
        self._viewed = False
        self._next_key = 1
        self._usearch: Any = None  # created (or mapped) on first use: a cold route needs none
        self._rows: files.SavedRows | None = (
            None  # searched by the kernel while the index is unchanged
        )
        self._staged: Staged | None = None
        self.graph = ""
        """The graph checkpoint generation the index was last synced to ("" if unknown)."""

    @property
    def _index(self) -> Any:
        if self._usearch is None:
            self._usearch = files.usearch_index(
                self.embedder.dim, self._paths()[0] if self._viewed else None
            )
        return self._usearch

    # -- persistence --------------------------------------------------------------------
    @classmethod
    def open(cls, embedder: Embedder, directory: str | None) -> VectorIndex:
        """The cached index for ``embedder`` in ``directory``, or an empty one."""
        index = cls(embedder, directory)
        if directory is not None:
            # An embedder that can keep its tokenizer's binary form in the store's cache.
            cache_in = getattr(embedder, "cache_in", None)
            if cache_in is not None:
                cache_in(directory)
            with contextlib.suppress(OSError, ValueError, RuntimeError, msgspec.DecodeError):
                index._load()
        return index

    def _paths(self) -> tuple[str, str, str]:
        if self.directory is None:
            raise InvalidParameterError("this vector index has no cache directory")
        return files.cache_paths(self.directory, self.embedder.name)

    def _load(self) -> None:
        index_path, meta_path, _ = self._paths()
        with open(meta_path, "rb") as f:
            # Mapped, not read: the texts (most of the file) stay undecoded in the mapping.
            meta = msgspec.msgpack.decode(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ),
                                          type=files.Meta)  # fmt: skip
        if (meta.format, meta.embedder, meta.dim) != (
            files.FORMAT,
            self.embedder.name,
            self.embedder.dim,
        ):
            return
        keys = memoryview(meta.keys).cast("Q")
        node_of = memoryview(meta.node_of).cast("i")
        if len(node_of) != len(keys) or (len(node_of) and max(node_of) >= len(meta.nodes)):
            return
        rows = files.map_rows(self._paths(), meta, node_of)
        if rows is None:
            # No usable rows: the usearch file is read now and checked as it always was.
            loaded = files.usearch_index(self.embedder.dim)
            loaded.view(index_path)
            if len(loaded) != len(keys):
                return
            self._usearch = loaded
        self._rows = rows
        self._viewed = True
        self._next_key = meta.next_key
        self.graph = meta.graph
        self._lazy = files.Lazy(keys, node_of, meta.nodes, meta.texts)
        self._entries_map = None

    def wants_rows(self) -> bool:
        """Whether saving would let later cold processes search it without numpy."""
        return kernels is not None and self._rows is None and len(self) > 0

    @property
    def _entries(self) -> dict[int, tuple[str, str]]:
        """key -> (node, text), decoded from the cache file on first use."""
        if self._entries_map is None:
            assert self._lazy is not None
            self._entries_map, self._by_node_map = self._lazy.decode()
            self._lazy = None
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
        pos = bisect.bisect_left(lazy.keys, key)
        if pos < len(lazy.keys) and lazy.keys[pos] == key:
            return lazy.nodes[lazy.node_of[pos]]
        return None

    def _writable(self) -> Any:
        """The usearch index, read in full if it was only mapped (its rows go stale)."""
        self._rows = None
        if self._viewed:
            index_path = self._paths()[0]
            loaded = files.usearch_index(self.embedder.dim)
            try:
                loaded.load(index_path)
            except (RuntimeError, ValueError) as exc:
                raise EngineError(f"{index_path}: reading the vector index: {exc}") from None
            if self._lazy is not None and len(loaded) != len(self._lazy.keys):
                raise EngineError(f"{index_path}: holds {len(loaded)} vectors, not {len(self)}")
            self._usearch, self._viewed = loaded, False
        return self._index

    @contextlib.contextmanager
    def staging(self) -> Iterator[None]:
        """Within the block, additions are searchable at once but inserted at its end."""
        from ._staged import Staged

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
        import numpy as np

        from ._staged import Staged

        keys, vectors = staged.drain()
        try:
            self._writable().add(keys, np.ascontiguousarray(vectors))
        except (RuntimeError, ValueError) as exc:
            raise EngineError(f"adding vectors to the index: {exc}") from None
        self._staged = Staged(self.embedder.dim)

    def save(self) -> None:
        """Write the index, its rows and its key map atomically into the cache directory
        (the key map last: it names the rows file it goes with)."""
        import numpy as np

        self.flush()
        items = sorted(self._entries.items())
        positions: dict[str, int] = {}
        node_of = [positions.setdefault(n, len(positions)) for _, (n, _) in items]
        keys = np.asarray([k for k, _ in items], "<u8")
        meta = files.Meta(
            files.FORMAT, self.embedder.name, self.embedder.dim, self._next_key, keys.tobytes(),
            np.asarray(node_of, "<i4").tobytes(), list(positions),
            msgspec.Raw(msgspec.msgpack.encode([t for _, (_, t) in items])), self.graph,
            os.urandom(16).hex(),
        )  # fmt: skip
        paths = self._paths()
        files.write_files(paths, meta, self._index, keys)
        # Searched from now on as a cold process will search it.
        self._rows = files.map_rows(paths, meta, memoryview(meta.node_of).cast("i"))

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
        import numpy as np

        self._rows = None
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
        import numpy as np

        self._rows = None
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
        from ._lean import embed_rows

        return self.search(embed_rows(self.embedder, [text]).row(0), k)

    def search(
        self, vector: Any, k: int = 5, *, exact: bool | None = None
    ) -> list[tuple[str, float]]:
        """The ``k`` nodes whose best vector is most similar to ``vector``.

        An index with its saved rows is searched exhaustively by the kernel unless
        ``exact=False`` asks for the HNSW graph; otherwise ``exact`` forces an exhaustive
        search or the graph, and by default indexes below EXACT_BELOW vectors are exhaustive.
        """
        if k < 1:
            raise InvalidParameterError(f"k: expected a positive integer; got {k}")
        size = len(self)
        query = floats(vector)
        if size == 0 or not any(query):
            return []
        # Several vectors may belong to one node: over-fetch, then keep each node's best.
        count = min(size, k * 4)
        rows = self._rows
        if rows is not None and kernels is not None and self._staged is None and exact is not False:
            return files.best_per_node(rows.search(query, count), k)
        import numpy as np

        array = np.frombuffer(query, np.float32)
        hits = self._staged.search(array, count) if self._staged is not None else []
        indexed = len(self._index)
        if indexed:
            thorough = indexed < EXACT_BELOW if exact is None else exact
            found = self._index.search(array, min(count, indexed), exact=thorough)
            hits += [
                (int(key), 1.0 - float(distance))
                for key, distance in zip(found.keys.tolist(), found.distances.tolist(), strict=True)
            ]
        named = [(node, score) for key, score in hits if (node := self._node_of(key)) is not None]
        return files.best_per_node(named, k)

    def vector_of(self, text: str) -> Vectors:
        """The embedding of one text (a convenience for drift checks)."""
        import numpy as np

        return np.asarray(self.embedder.embed([text])[0], dtype=np.float32)
