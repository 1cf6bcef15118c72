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

The usearch index is built lazily, its HNSW graph being most of the cost of indexing many
texts: an index built or synced from scratch keeps its vectors as float16 rows
(:class:`~._staged.Flat`) and saves them as rows only. The first search the kernel does not
answer (``exact=False``, staged additions, a changed unsaved index, no kernels) builds it
from those rows; from then on it is kept up to date and saved with the rows.
"""

from __future__ import annotations

import contextlib
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
    from ._staged import Flat, Staged

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
        # A loaded index stays mapped (its rows, or usearch's ``view``) with its key map
        # undecoded until something changes it: a cold route reads neither in full.
        self._keys = files.KeyMap()
        self._viewed = False
        self._next_key = 1
        self._usearch: Any = None  # created (or mapped) on first use: a cold route needs none
        # True while the vectors are in no usearch index: in ``_flat`` or, while that is
        # None, in the saved rows ``_source`` (none at all if that is None too).
        self._graphless = True
        self._flat: Flat | None = None
        self._source: files.SavedRows | None = None
        self._rows: files.SavedRows | None = None  # searched by the kernel while unchanged
        # The checked rows and key map of the loaded save: where its vectors come from
        # should its usearch file turn out damaged when first read.
        self._saved: tuple[files.SavedRows | None, files.Meta | None] = (None, None)
        self._staged: Staged | None = None
        self.graph = ""
        """The graph checkpoint generation the index was last synced to ("" if unknown)."""

    @property
    def _index(self) -> Any:
        """The usearch index: built now from the vectors of a graphless index."""
        if self._usearch is None and self._graphless:
            self._usearch = self._flat_store().build(files.usearch_index(self.embedder.dim))
            self._graphless, self._flat = False, None
        elif self._usearch is None:
            if self._viewed and self._usearch_damaged():
                return self._index  # built from the saved rows instead
            path = self._paths()[0] if self._viewed else None
            self._usearch = files.usearch_index(self.embedder.dim, path)
        return self._usearch

    def _usearch_damaged(self) -> bool:
        """Whether the saved usearch file, about to be read for the first time, differs from
        the one saved with the key map; if so the index is graphless again, its vectors
        taken from the (checked) saved rows, and the graph is rebuilt from them."""
        rows, meta = self._saved
        if meta is not None and files.usearch_intact(self._paths()[0], meta):
            return False
        if rows is None:
            raise EngineError(f"{self._paths()[0]}: damaged, and no saved rows to rebuild from")
        self._graphless, self._viewed, self._source, self._flat = True, False, rows, None
        return True

    def _flat_store(self) -> Flat:
        """The vectors of a graphless index, in memory (the saved rows not copied)."""
        if self._flat is None:
            from ._staged import Flat

            rows, dim = self._source, self.embedder.dim
            self._flat = Flat.of_saved(dim, rows.keys, rows.data) if rows else Flat(dim)
            self._source = None
        return self._flat

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
        paths = self._paths()
        meta = files.read_meta(paths[1], self.embedder.name, self.embedder.dim)
        if meta is None:
            return
        keys, node_of = memoryview(meta.keys).cast("Q"), memoryview(meta.node_of).cast("i")
        rows = files.map_rows(paths, meta, keys, node_of)
        graphless = meta.format == files.ROWS_ONLY
        if rows is None and graphless:
            return  # the rows were the only copy of the vectors
        if rows is None:
            # No usable rows: the usearch file is read now, once its checksum agrees.
            if not files.usearch_intact(paths[0], meta):
                return
            loaded = files.usearch_index(self.embedder.dim)
            loaded.view(paths[0])
            if len(loaded) != len(keys):
                return
            self._usearch = loaded
        self._rows, self._saved = rows, (rows, meta)
        self._graphless, self._viewed = graphless, not graphless
        self._source = rows if graphless else None
        self._next_key = meta.next_key
        self.graph = meta.graph
        self._keys = files.KeyMap(files.Lazy(keys, node_of, meta.nodes, meta.texts))

    def wants_rows(self) -> bool:
        """Whether saving would let later cold processes search it without numpy."""
        return kernels is not None and self._rows is None and len(self) > 0

    def _changing(self) -> None:
        """Before the vectors change: the saved rows go stale (a graphless index's vectors
        are taken from them first)."""
        if self._graphless:
            self._flat_store()
        self._rows = None

    def _add_indexed(self, keys: Any, vectors: Any) -> None:
        if self._graphless:
            self._changing()
            self._flat_store().add(keys, vectors)
            return
        try:
            self._writable().add(keys, vectors)
        except (RuntimeError, ValueError) as exc:
            raise EngineError(f"adding vectors to the index: {exc}") from None

    def _writable(self) -> Any:
        """The usearch index, read in full if it was only mapped (its rows go stale)."""
        if self._viewed and self._usearch is None and self._usearch_damaged():
            self._changing()
            return self._index
        self._changing()
        if self._viewed:
            index_path = self._paths()[0]
            loaded = files.usearch_index(self.embedder.dim)
            try:
                loaded.load(index_path)
            except (RuntimeError, ValueError) as exc:
                raise EngineError(f"{index_path}: reading the vector index: {exc}") from None
            if self._keys.lazy is not None and len(loaded) != len(self._keys):
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
        """Insert staged vectors into the HNSW graph (or the rows of a graphless index)."""
        staged = self._staged
        if staged is None or not staged.rows:
            return
        import numpy as np

        from ._staged import Staged

        keys, vectors = staged.drain()
        self._add_indexed(keys, np.ascontiguousarray(vectors))
        self._staged = Staged(self.embedder.dim)

    def save(self) -> None:
        """Write the index, its rows and its key map atomically into the cache directory
        (the key map last: it names the rows file it goes with)."""
        self.flush()
        if kernels is None:
            # A process without the kernels searches the usearch file: save one.
            _ = self._index
        meta, keys = self._keys.meta(
            self.embedder.name, self.embedder.dim, self._next_key, self.graph
        )
        chunks: Iterable[Any]
        if self._graphless:
            meta.format = files.ROWS_ONLY
            graph, chunks = None, [self._flat_store().rows_of(keys)]
        else:
            graph = self._index
            chunks = files.graph_rows(graph, keys)
        paths = self._paths()
        files.write_files(paths, meta, graph, len(keys), chunks)
        # Searched from now on as a cold process will search it.
        self._rows = files.map_rows(
            paths, meta, memoryview(meta.keys).cast("Q"), memoryview(meta.node_of).cast("i")
        )
        if self._graphless and self._rows is not None:
            self._flat, self._source = None, self._rows  # its vectors are the saved rows again

    # -- contents -----------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._keys)

    def nodes(self) -> frozenset[str]:
        """Nodes with at least one vector."""
        return frozenset(self._keys.by_node)

    def texts(self, node: str) -> tuple[str, ...]:
        """The texts ``node`` has vectors for."""
        return tuple(self._keys.by_node.get(node, {}))

    def sync(self, wanted: Mapping[str, Sequence[str]]) -> tuple[int, int]:
        """Make the index hold exactly ``wanted``; returns (vectors added, vectors removed)."""
        stale = [
            key
            for node, texts in self._keys.by_node.items()
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
            for text, key in self._keys.by_node.get(node, {}).items()
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
            have = self._keys.by_node.get(node, {})
            fresh = (t for t in dict.fromkeys(texts) if t not in have)
            pending.extend((node, t) for t in fresh)
        if not pending:
            return 0
        return self._insert(pending, self.embedder.embed([t for _, t in pending]))

    def add_vectors(self, node: str, texts: Sequence[str], vectors: Vectors) -> int:
        """Add ``node``'s texts with vectors already computed (row i belongs to text i)."""
        have = self._keys.by_node.get(node, {})
        rows = [i for i, t in enumerate(texts) if t not in have and t not in texts[:i]]
        if not rows:
            return 0
        return self._insert([(node, texts[i]) for i in rows], vectors[rows])

    def _insert(self, pending: list[tuple[str, str]], vectors: Vectors) -> int:
        import numpy as np

        keep = np.flatnonzero(np.linalg.norm(vectors, axis=1) > 0)
        if keep.size == 0:
            return 0
        self._changing()
        keys = np.arange(self._next_key, self._next_key + keep.size, dtype=np.uint64)
        self._next_key += int(keep.size)
        rows = np.ascontiguousarray(vectors[keep], dtype=np.float32)
        if self._staged is not None:
            self._staged.add(keys.tolist(), rows)
        else:
            self._add_indexed(keys, rows)
        for key, row in zip(keys.tolist(), keep.tolist(), strict=True):
            self._keys.put(key, *pending[row])
        return int(keep.size)

    def remove(self, node: str) -> int:
        """Drop every vector of ``node``; returns how many."""
        keys = list(self._keys.by_node.get(node, {}).values())
        self._remove_keys(keys)
        return len(keys)

    def _remove_keys(self, keys: Sequence[int]) -> None:
        if not keys:
            return
        import numpy as np

        self._changing()
        indexed = self._staged.discard(keys) if self._staged is not None else list(keys)
        if self._graphless:
            self._flat_store().remove(indexed)
        elif indexed:
            self._writable().remove(np.asarray(indexed, dtype=np.uint64))
        for key in keys:
            self._keys.pop(key)

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
        node_of = self._keys.node_of
        named = [(node, score) for key, score in hits if (node := node_of(key)) is not None]
        return files.best_per_node(named, k)

    def vector_of(self, text: str) -> Vectors:
        """The embedding of one text (a convenience for drift checks)."""
        import numpy as np

        return np.asarray(self.embedder.embed([text])[0], dtype=np.float32)
