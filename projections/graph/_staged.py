"""Vectors of a :class:`~._vectors.VectorIndex` not (yet) inserted in its HNSW graph."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._errors import EngineError
from ._embed import Vectors

__all__ = ["Flat", "Staged"]


class Staged:
    """Vectors added but not yet inserted in the HNSW graph; searched exhaustively.

    Inserting one vector at a time costs about a millisecond per call in usearch; a dream
    cycle adds a node, searches, adds the next, so it stages its additions here and inserts
    them in one multi-threaded batch at the end.
    """

    def __init__(self, dim: int) -> None:
        self.matrix = np.zeros((64, dim), dtype=np.float32)
        self.keys: list[int] = []
        self.rows: dict[int, int] = {}

    def add(self, keys: Sequence[int], vectors: Vectors) -> None:
        need = len(self.keys) + len(keys)
        if need > len(self.matrix):
            grown = np.zeros((max(need, 2 * len(self.matrix)), self.matrix.shape[1]), np.float32)
            grown[: len(self.keys)] = self.matrix[: len(self.keys)]
            self.matrix = grown
        start = len(self.keys)
        self.matrix[start:need] = vectors
        for offset, key in enumerate(keys):
            self.rows[key] = start + offset
        self.keys.extend(keys)

    def discard(self, keys: Sequence[int]) -> list[int]:
        """Drop the staged ones among ``keys``; returns the keys that were not staged."""
        rest = []
        for key in keys:
            row = self.rows.pop(key, None)
            if row is None:
                rest.append(key)
            else:
                self.matrix[row] = 0.0
        return rest

    def search(self, vector: Vectors, count: int) -> list[tuple[int, float]]:
        n = len(self.keys)
        if not self.rows or n == 0:
            return []
        scores = self.matrix[:n] @ vector
        top = np.argsort(-scores)[:count] if n <= count else np.argpartition(-scores, count)[:count]
        return [(self.keys[i], float(scores[i])) for i in top.tolist()]

    def drain(self) -> tuple[np.ndarray, Vectors]:
        live = sorted(self.rows.items(), key=lambda kv: kv[1])
        keys = np.asarray([k for k, _ in live], dtype=np.uint64)
        return keys, self.matrix[[r for _, r in live]]


class Flat:
    """An index's vectors as float16 rows, kept outside any HNSW graph until one is needed.

    Building the graph is most of the cost of indexing many texts, and a cold route never
    searches it (the kernel searches the saved rows); so an index built or synced from
    scratch keeps its vectors here, as the float16 values usearch would hold, and saves them
    as rows only.
    """

    def __init__(
        self, dim: int, keys: np.ndarray | None = None, rows: np.ndarray | None = None
    ) -> None:
        self.dim = dim
        self._keys: list[np.ndarray] = [] if keys is None else [keys]
        self._rows: list[np.ndarray] = [] if rows is None else [rows]
        self._gone: set[int] = set()

    @classmethod
    def of_saved(cls, dim: int, keys: memoryview, data: memoryview) -> Flat:
        """The rows of a rows file (``data``, float16) for ``keys``, not copied."""
        rows = np.frombuffer(data, "<f2").reshape(len(keys), dim)
        return cls(dim, np.frombuffer(keys, "<u8"), rows)

    def add(self, keys: Sequence[int] | np.ndarray, vectors: Vectors) -> None:
        # usearch stores a float32 vector as this same float16 value
        # (tests/projections/graph/test_lazy_index.py).
        with np.errstate(over="ignore"):
            self._rows.append(np.asarray(vectors, np.float32).astype("<f2"))
        self._keys.append(np.asarray(keys, np.uint64))

    def remove(self, keys: Sequence[int]) -> None:
        """Drop the vectors of ``keys`` (each held here)."""
        self._gone.update(keys)

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """The keys held, ascending, and their float16 rows (one array, in that order)."""
        if not self._keys:
            return np.zeros(0, np.uint64), np.zeros((0, self.dim), "<f2")
        keys = np.concatenate(self._keys) if len(self._keys) > 1 else self._keys[0]
        rows = np.concatenate(self._rows) if len(self._rows) > 1 else self._rows[0]
        keep: np.ndarray | None = None
        if self._gone:
            keep = ~np.isin(keys, np.fromiter(self._gone, np.uint64, len(self._gone)))
        if keys.size > 1 and not bool(np.all(keys[1:] > keys[:-1])):
            order = np.argsort(keys, kind="stable")
            keep = order if keep is None else order[keep[order]]
        if keep is not None:
            keys, rows = keys[keep], rows[keep]
        self._keys, self._rows, self._gone = [keys], [rows], set()
        return keys, rows

    def rows_of(self, keys: np.ndarray) -> np.ndarray:
        """The float16 rows of ``keys`` (every key held, ascending), as one array."""
        held, rows = self.arrays()
        if not np.array_equal(held, keys):
            raise EngineError("the vector index's rows do not match its key map")
        return np.ascontiguousarray(rows)

    def build(self, index: Any) -> Any:
        """Insert the vectors into an empty usearch ``index`` in one batch, as an index built
        eagerly inserted them (the same float16 values, in key order); returns it."""
        keys, rows = self.arrays()
        if len(keys):
            try:
                index.add(keys, rows)
            except (RuntimeError, ValueError) as exc:
                raise EngineError(f"building the vector index's graph: {exc}") from None
        return index
