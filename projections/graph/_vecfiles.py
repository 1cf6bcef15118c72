"""The vector index's cache files: the key map, the float16 rows, and how they are written.

* ``vectors-<embedder>.usearch``: the usearch index (its HNSW graph and float16 vectors);
* ``vectors-<embedder>.rows``: the same vectors as float16 rows in key order after a header
  (magic, a random token, row count, dimension), searched by the C kernel without numpy;
* ``vectors-<embedder>.meta``: the key map (:class:`Meta`), naming the rows file's token.

The key map is renamed into place last, so it never names rows of another save; rows whose
token, count or size disagree with it are not used (the usearch file is searched instead),
nor are rows beside a usearch file of another save (the key map records its size and
modification time), so the usearch file is checked as before whenever it may be read.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Iterable
from typing import Any, Final

import msgspec

from .._errors import EngineError
from ._lean import kernels

__all__ = [
    "FORMAT", "Lazy", "Meta", "SavedRows", "best_per_node", "cache_paths", "f16_rows",
    "map_rows", "usearch_index", "write_files",
]  # fmt: skip

FORMAT: Final = 2  # 2: key map as arrays, texts decoded lazily; rows optional
_HEADER: Final = struct.Struct("<8s16sQQ")  # magic, token, rows, dim
_MAGIC: Final = b"EVROWS1\0"


class Meta(msgspec.Struct):
    format: int
    embedder: str
    dim: int
    next_key: int
    keys: bytes  # uint64, ascending
    node_of: bytes  # int32 per key: its node's position in ``nodes``
    nodes: list[str]
    texts: msgspec.Raw  # list[str] per key, decoded only to change the index
    graph: str = ""
    rows: str = ""  # the token of the rows file written with it ("" = none)
    usearch: tuple[int, int] = (0, 0)  # size and mtime_ns of the usearch file saved with it


class Lazy(msgspec.Struct):
    """A loaded index's key map before it is needed in full: enough to name search hits."""

    keys: memoryview  # uint64, ascending
    node_of: memoryview  # int32
    nodes: list[str]
    texts: msgspec.Raw

    def decode(self) -> tuple[dict[int, tuple[str, str]], dict[str, dict[str, int]]]:
        """The whole key map: key -> (node, text), and node -> {text: key}."""
        texts = msgspec.msgpack.decode(self.texts, type=list[str])
        nodes = [self.nodes[i] for i in self.node_of]
        entries: dict[int, tuple[str, str]] = {}
        by_node: dict[str, dict[str, int]] = {}
        for key, node, text in zip(self.keys.tolist(), nodes, texts, strict=True):
            entries[key] = (node, text)
            by_node.setdefault(node, {})[text] = key
        return entries, by_node


class SavedRows(msgspec.Struct):
    """The saved vectors as float16 rows in key order, and the node of each row."""

    data: Any  # float16 buffer
    node_of: memoryview  # int32 per row: position in ``nodes``
    nodes: list[str]
    dim: int

    def search(self, query: memoryview, count: int) -> list[tuple[str, float]]:
        """The ``count`` best rows for ``query`` (float32), as (node, score), best first."""
        hits = kernels.topk(self.data, self.dim, query, count)
        return [(self.nodes[self.node_of[row]], score) for row, score in hits]


def cache_paths(directory: str, embedder: str) -> tuple[str, str, str]:
    """The usearch index, the key map and the rows file of ``embedder``'s index."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in embedder)
    base = os.path.join(directory, f"vectors-{safe}")
    return base + ".usearch", base + ".meta", base + ".rows"


def usearch_index(dim: int, view: str | None = None) -> Any:
    """A new usearch index, or the one saved at ``view`` memory-mapped."""
    from evolog.projections._usearch import usearch_index_class

    index = usearch_index_class()(ndim=dim, metric="cos", dtype="f16")
    if view is not None:
        try:
            index.view(view)
        except (RuntimeError, ValueError) as exc:
            raise EngineError(f"{view}: mapping the vector index: {exc}") from None
    return index


def map_rows(paths: tuple[str, str, str], meta: Meta, node_of: memoryview) -> SavedRows | None:
    """The rows file written with a key map (its token, one row per key, beside the usearch
    file of the same save), mapped; or None where it is missing or another's, or the
    kernels that search it are not built."""
    index_path, _, path = paths
    token, dim, nodes = meta.rows, meta.dim, meta.nodes
    if not token or kernels is None:
        return None
    try:
        st = os.stat(index_path)
        if (st.st_size, st.st_mtime_ns) != tuple(meta.usearch):
            return None
        with open(path, "rb") as f:
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    count = len(node_of)
    if len(data) != _HEADER.size + 2 * count * dim:
        return None
    if _HEADER.unpack_from(data) != (_MAGIC, bytes.fromhex(token), count, dim):
        return None
    return SavedRows(memoryview(data)[_HEADER.size :], node_of, nodes, dim)


def write_files(paths: tuple[str, str, str], meta: Meta, index: Any, keys: Any) -> None:
    """Write the usearch ``index``, its vectors of ``keys`` (the key map's, in order) as rows
    and the key map under temporary names, then rename them, the key map last."""
    index_path, meta_path, rows_path = paths
    try:
        os.makedirs(os.path.dirname(index_path), exist_ok=True)
        index.save(index_path + ".tmp")
        st = os.stat(index_path + ".tmp")  # a rename keeps both
        meta.usearch = (st.st_size, st.st_mtime_ns)
        with open(rows_path + ".tmp", "wb") as f:
            f.write(_HEADER.pack(_MAGIC, bytes.fromhex(meta.rows), len(keys), meta.dim))
            for start in range(0, len(keys), 65536):
                f.write(f16_rows(index, keys[start : start + 65536]).tobytes())
        with open(meta_path + ".tmp", "wb") as f:
            f.write(msgspec.msgpack.encode(meta))
        os.replace(index_path + ".tmp", index_path)
        os.replace(rows_path + ".tmp", rows_path)
        os.replace(meta_path + ".tmp", meta_path)
    except (OSError, RuntimeError) as exc:
        raise EngineError(f"{index_path}: could not save the vector index: {exc}") from None


def best_per_node(hits: Iterable[tuple[str, float]], k: int) -> list[tuple[str, float]]:
    """Each node's best score, best first (ties by node id), the first ``k``."""
    best: dict[str, float] = {}
    for node, score in hits:
        if score > best.get(node, -2.0):
            best[node] = score
    return sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))[:k]


def f16_rows(index: Any, keys: Any) -> Any:
    """The float16 vectors a usearch ``index`` holds for ``keys`` (a row each, in order)."""
    import numpy as np

    if not len(keys):
        return np.zeros((0, index.ndim), "<f2")
    found = index.get(keys, dtype=np.float16)
    rows = np.vstack(found) if isinstance(found, tuple) else found
    return np.ascontiguousarray(rows, dtype="<f2").reshape(len(keys), index.ndim)
