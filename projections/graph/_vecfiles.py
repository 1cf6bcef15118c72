"""The vector index's cache files: the key map, the float16 rows, and how they are written.

* ``vectors-<embedder>.usearch``: the usearch index (its HNSW graph and float16 vectors),
  written only by an index whose graph was built (format 2);
* ``vectors-<embedder>.rows``: the same vectors as float16 rows in key order after a header
  (magic, a random token, row count, dimension), searched by the C kernel without numpy;
* ``vectors-<embedder>.meta``: the key map (:class:`Meta`), naming the rows file's token.

The key map is renamed into place last, so it never names rows of another save; rows whose
token, count or size disagree with it are not used (the usearch file is searched instead),
nor are rows beside a usearch file of another save (the key map records its size and
modification time), so the usearch file is checked as before whenever it may be read.
A key map of format 3 (:data:`ROWS_ONLY`) was saved without a graph: its rows are the only
copy of the vectors, any usearch file beside it is stale, and unusable rows mean a rebuild.

Nothing is trusted unchecked (a flipped bit in a row once changed a route's answer): the key
map and the rows file are checked files (:mod:`evolog.eventlog._checked`: a CRC-32 over every
byte, checked on load), and the key map records the CRC-32 of the usearch file, checked
before that file is mapped or read. A damaged file is noted, not used, and rebuilt.
"""

from __future__ import annotations

import bisect
import contextlib
import mmap
import os
import struct
import zlib
from collections.abc import Iterable
from typing import Any, Final

import msgspec
from evolog.eventlog import HEADER_SIZE, checked_body, file_crc, header, note_damage, write_checked

from .._errors import EngineError
from ._lean import kernels

__all__ = [
    "FORMAT", "ROWS_ONLY", "KeyMap", "Lazy", "Meta", "SavedRows", "best_per_node",
    "cache_paths", "f16_rows", "graph_rows", "map_rows", "read_meta", "usearch_index",
    "usearch_intact", "write_files",
]  # fmt: skip

FORMAT: Final = 2  # 2: key map as arrays, texts decoded lazily; rows optional
# Saved without a usearch file; a different number, so that a version that predates it
# rebuilds the cache rather than read a stale usearch file beside it.
ROWS_ONLY: Final = 3
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
    # Size, mtime_ns and CRC-32 of the usearch file saved with it.
    usearch: tuple[int, int, int] = (0, 0, 0)


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


class KeyMap:
    """Which node and text each vector key stands for: key -> (node, text), node -> {text:
    key}. A loaded one keeps the saved arrays (:attr:`lazy`) undecoded, enough to count and
    to name search hits, until something reads or changes it in full."""

    def __init__(self, lazy: Lazy | None = None) -> None:
        self.lazy = lazy
        self._entries: dict[int, tuple[str, str]] = {}
        self._by_node: dict[str, dict[str, int]] = {}

    def __len__(self) -> int:
        return len(self.lazy.keys) if self.lazy is not None else len(self._entries)

    @property
    def by_node(self) -> dict[str, dict[str, int]]:
        """node -> {text: key}, decoded on first use."""
        if self.lazy is not None:
            self._entries, self._by_node = self.lazy.decode()
            self.lazy = None
        return self._by_node

    def node_of(self, key: int) -> str | None:
        lazy = self.lazy
        if lazy is None:
            entry = self._entries.get(key)
            return entry[0] if entry is not None else None
        pos = bisect.bisect_left(lazy.keys, key)
        if pos < len(lazy.keys) and lazy.keys[pos] == key:
            return lazy.nodes[lazy.node_of[pos]]
        return None

    def put(self, key: int, node: str, text: str) -> None:
        self.by_node.setdefault(node, {})[text] = key
        self._entries[key] = (node, text)

    def pop(self, key: int) -> None:
        _ = self.by_node  # decoded first
        node, text = self._entries.pop(key)
        texts = self._by_node[node]
        del texts[text]
        if not texts:
            del self._by_node[node]

    def meta(self, embedder: str, dim: int, next_key: int, graph: str) -> tuple[Meta, Any]:
        """The key map to save (with a fresh rows token), and its keys as a numpy array."""
        import numpy as np

        _ = self.by_node
        items = sorted(self._entries.items())
        positions: dict[str, int] = {}
        node_of = [positions.setdefault(n, len(positions)) for _, (n, _) in items]
        keys = np.asarray([k for k, _ in items], "<u8")
        texts = msgspec.Raw(msgspec.msgpack.encode([t for _, (_, t) in items]))
        meta = Meta(FORMAT, embedder, dim, next_key, keys.tobytes(),
                    np.asarray(node_of, "<i4").tobytes(), list(positions), texts, graph,
                    os.urandom(16).hex())  # fmt: skip
        return meta, keys


def read_meta(path: str, embedder: str, dim: int) -> Meta | None:
    """The key map saved at ``path`` if it is of ``embedder`` and consistent, else None;
    mapped, not read: its texts (most of the file) stay undecoded in the mapping. A damaged
    one (its checksum disagrees) is noted and None."""
    with open(path, "rb") as f:
        body = checked_body(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ), path, "key map")
    if body is None:
        return None
    meta = msgspec.msgpack.decode(body, type=Meta)
    if meta.format not in (FORMAT, ROWS_ONLY) or (meta.embedder, meta.dim) != (embedder, dim):
        return None
    keys, node_of = memoryview(meta.keys).cast("Q"), memoryview(meta.node_of).cast("i")
    if len(node_of) != len(keys) or (len(node_of) and max(node_of) >= len(meta.nodes)):
        return None
    return meta


class SavedRows(msgspec.Struct):
    """The saved vectors as float16 rows in key order, and the node of each row."""

    data: Any  # float16 buffer
    keys: memoryview  # uint64 per row, ascending
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


def map_rows(
    paths: tuple[str, str, str], meta: Meta, keys: memoryview, node_of: memoryview
) -> SavedRows | None:
    """The rows file written with a key map (its token, one row per key, beside the usearch
    file of the same save unless it was saved without one), mapped; or None where it is
    missing or another's, or the kernels that search it are not built."""
    index_path, _, path = paths
    token, dim, nodes = meta.rows, meta.dim, meta.nodes
    if not token or kernels is None:
        return None
    try:
        if meta.format != ROWS_ONLY:
            st = os.stat(index_path)
            if (st.st_size, st.st_mtime_ns) != tuple(meta.usearch[:2]):
                return None
        with open(path, "rb") as f:
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    # Every row is read by each search anyway: the whole file is checked once, here.
    body = checked_body(data, path, "vector rows")
    if body is None:
        return None
    count = len(node_of)
    if len(body) != _HEADER.size + 2 * count * dim:
        return None
    if _HEADER.unpack_from(body) != (_MAGIC, bytes.fromhex(token), count, dim):
        return None
    return SavedRows(body[_HEADER.size :], keys, node_of, nodes, dim)


def usearch_intact(path: str, meta: Meta) -> bool:
    """Whether the usearch file at ``path`` is the one saved with ``meta``, byte for byte
    (a damaged one is noted)."""
    try:
        size, crc = os.path.getsize(path), file_crc(path)
    except OSError:
        return False
    if (size, crc) == (meta.usearch[0], meta.usearch[2]):
        return True
    note_damage(path, "the vector index's size or checksum does not match its key map")
    return False


def write_files(
    paths: tuple[str, str, str], meta: Meta, index: Any, count: int, rows: Iterable[Any]
) -> None:
    """Write the usearch ``index`` (None: none, as format :data:`ROWS_ONLY`), ``count``
    float16 ``rows`` (buffers of whole rows, in the key map's order) and the key map under
    temporary names, then rename them, the key map last (with the usearch file's CRC)."""
    import tempfile  # only to write: a cold route does without it

    index_path, meta_path, rows_path = paths
    directory = os.path.dirname(index_path)
    temps: list[str] = []

    def temp(target: str) -> str:
        # Unique: two processes saving the same index must not write one temporary file.
        fd, name = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix="-" + target[-8:])
        os.close(fd)
        temps.append(name)
        return name

    try:
        os.makedirs(directory, exist_ok=True)
        index_tmp = rows_tmp = ""
        if index is not None:
            index_tmp = temp(index_path)
            index.save(index_tmp)
            st = os.stat(index_tmp)  # a rename keeps both
            meta.usearch = (st.st_size, st.st_mtime_ns, file_crc(index_tmp))
        rows_tmp = temp(rows_path)
        with open(rows_tmp, "wb") as f:
            size = _HEADER.size + 2 * count * meta.dim
            f.write(header(0, size))  # its CRC is known once the rows are written
            first = _HEADER.pack(_MAGIC, bytes.fromhex(meta.rows), count, meta.dim)
            f.write(first)
            crc = zlib.crc32(first)
            for chunk in rows:
                f.write(chunk)
                crc = zlib.crc32(chunk, crc)
            if f.tell() != HEADER_SIZE + size:
                raise EngineError(f"{rows_path}: {count} rows expected, the index gave others")
            f.seek(0)
            f.write(header(crc, size))
        os.chmod(rows_tmp, 0o644)
        if index is not None:
            os.chmod(index_tmp, 0o644)
            os.replace(index_tmp, index_path)
        os.replace(rows_tmp, rows_path)
        write_checked(meta_path, msgspec.msgpack.encode(meta))
        if index is None:
            # Stale now (the key map says so); removed to free the space it takes.
            with contextlib.suppress(OSError):
                os.unlink(index_path)
    except (OSError, RuntimeError) as exc:
        raise EngineError(f"{index_path}: could not save the vector index: {exc}") from None
    finally:
        for name in temps:
            with contextlib.suppress(OSError):
                os.unlink(name)


def best_per_node(hits: Iterable[tuple[str, float]], k: int) -> list[tuple[str, float]]:
    """Each node's best score, best first (ties by node id), the first ``k``."""
    best: dict[str, float] = {}
    for node, score in hits:
        if score > best.get(node, -2.0):
            best[node] = score
    return sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))[:k]


def graph_rows(index: Any, keys: Any) -> Iterable[Any]:
    """The float16 rows a usearch ``index`` holds for ``keys``, in chunks."""
    for start in range(0, len(keys), 65536):
        yield f16_rows(index, keys[start : start + 65536]).tobytes()


def f16_rows(index: Any, keys: Any) -> Any:
    """The float16 vectors a usearch ``index`` holds for ``keys`` (a row each, in order)."""
    import numpy as np

    if not len(keys):
        return np.zeros((0, index.ndim), "<f2")
    found = index.get(keys, dtype=np.float16)
    rows = np.vstack(found) if isinstance(found, tuple) else found
    return np.ascontiguousarray(rows, dtype="<f2").reshape(len(keys), index.ndim)
