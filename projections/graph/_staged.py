"""Vectors added to a :class:`~._vectors.VectorIndex` but not yet inserted in its HNSW graph."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._embed import Vectors

__all__ = ["Staged"]


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
