"""The item checkpoint's file: sorted key -> value tables a cold process opens, not decodes.

A recall at 1e5 items reads a few posting lists and a few dozen items; decoding the whole
fold state (one msgpack document, about 50 MB there) cost a cold process a second. So the
file is a small msgpack head plus one table per map of the fold's state, memory-mapped;
each table holds its keys sorted by their UTF-8 bytes, two offset arrays and two blobs::

    b"EVOLMEM2" | u64 head length | head (msgpack) | tables, each 8-byte aligned:
        key offsets  (n + 1 little-endian u64) | value offsets (n + 1 u64)
        key bytes    (concatenated)            | value bytes (one msgpack value each)

A lookup is a binary search over the keys (~17 probes at 1e5 entries) and decodes one
value. :class:`LazyMap` is the fold's view of a table: a mutable mapping whose reads decode
on first use and whose writes land in an in-memory overlay, so folding new events never
touches the file; writing the next checkpoint copies the untouched values' bytes as they are.
"""

from __future__ import annotations

import array
import mmap
import sys
from collections.abc import Iterator, MutableMapping
from typing import Any, Final, Generic, TypeVar

import msgspec

__all__ = ["MAGIC", "LazyMap", "Table", "open_file", "write_file"]

MAGIC: Final = b"EVOLMEM2"
V = TypeVar("V")
_LITTLE: Final = sys.byteorder == "little"


class Table:
    """One sorted table of a mapped checkpoint file."""

    def __init__(self, buf: memoryview, at: int, n: int, key_bytes: int) -> None:
        self.n = n
        width = 8 * (n + 1)
        self._koff = buf[at : at + width].cast("Q")
        self._voff = buf[at + width : at + 2 * width].cast("Q")
        self._keys = buf[at + 2 * width : at + 2 * width + key_bytes]
        self._vals = buf[at + 2 * width + key_bytes :]

    def key(self, i: int) -> bytes:
        return bytes(self._keys[self._koff[i] : self._koff[i + 1]])

    def raw(self, i: int) -> memoryview:
        return self._vals[self._voff[i] : self._voff[i + 1]]

    def find(self, key: bytes) -> int:
        """The index of ``key``, or -1."""
        lo, hi = 0, self.n
        koff, keys = self._koff, self._keys
        while lo < hi:
            mid = (lo + hi) // 2
            k = bytes(keys[koff[mid] : koff[mid + 1]])
            if k == key:
                return mid
            if k < key:
                lo = mid + 1
            else:
                hi = mid
        return -1


class LazyMap(MutableMapping[str, V], Generic[V]):
    """A table seen as a mutable mapping: decode on first read, write to an overlay.

    A value read once is kept in the overlay, so the fold may change it in place (it
    appends to lists, sets fields) and the change is what the next checkpoint writes.
    Iteration gives the table's keys in their sorted order, then new keys in insertion
    order; nothing in the fold depends on the order (it sorts where order matters).
    """

    def __init__(self, table: Table | None, decoder: msgspec.msgpack.Decoder[Any]) -> None:
        self._table = table
        self._dec = decoder
        self._over: dict[str, V] = {}
        self._new: dict[str, None] = {}
        self._gone: set[str] = set()
        self._n = table.n if table is not None else 0

    def _base(self, key: str) -> int:
        return -1 if self._table is None else self._table.find(key.encode("utf-8", "surrogatepass"))

    def __getitem__(self, key: str) -> V:
        try:
            return self._over[key]
        except KeyError:
            pass
        if key in self._gone or self._table is None:
            raise KeyError(key)
        i = self._base(key)
        if i < 0:
            raise KeyError(key)
        value: V = self._dec.decode(self._table.raw(i))
        self._over[key] = value
        return value

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        if key in self._over:
            return True
        return key not in self._gone and self._base(key) >= 0

    def __setitem__(self, key: str, value: V) -> None:
        if key not in self._over and key not in self._new:
            if key in self._gone:
                self._gone.discard(key)
            elif self._base(key) < 0:
                self._new[key] = None
        self._over[key] = value

    def __delitem__(self, key: str) -> None:
        if key not in self:
            raise KeyError(key)
        self._over.pop(key, None)
        if key in self._new:
            del self._new[key]
        else:
            self._gone.add(key)

    def __len__(self) -> int:
        return self._n - len(self._gone) + len(self._new)

    def __iter__(self) -> Iterator[str]:
        if self._table is not None:
            table = self._table
            for i in range(table.n):
                key = table.key(i).decode("utf-8", "surrogatepass")
                if key not in self._gone:
                    yield key
        yield from list(self._new)

    def spliced(self, encode: Any) -> list[bytes] | None:
        """The table rewritten with the overlay's values, as its four parts (key offsets,
        value offsets, keys, values), when no key was added or removed: the keys are
        copied, the values spliced (untouched spans copied whole), the offsets after a
        value that changed length shifted. None when keys changed (see :meth:`entries`)."""
        t = self._table
        if t is None or self._gone or self._new:
            return None
        changes = sorted(
            (t.find(k.encode("utf-8", "surrogatepass")), encode(v)) for k, v in self._over.items()
        )
        orig = t._voff
        voff = array.array("Q")
        voff.frombytes(orig.tobytes())
        pieces: list[bytes | memoryview] = []
        prev = shift = 0
        ends = [i for i, _ in changes[1:]] + [t.n] if changes else []
        for (i, data), end in zip(changes, ends, strict=True):
            pieces += [t._vals[prev : orig[i]], data]
            prev = orig[i + 1]
            shift += len(data) - (orig[i + 1] - orig[i])
            if shift:
                for j in range(i + 1, end + 1):
                    voff[j] = orig[j] + shift
        pieces.append(t._vals[prev : orig[t.n]])
        return [t._koff.tobytes(), voff.tobytes(), t._keys.tobytes(), b"".join(pieces)]

    def entries(self, encode: Any) -> list[tuple[bytes, bytes]]:
        """Every (key, encoded value), untouched values copied as they are in the file."""
        out: list[tuple[bytes, bytes]] = []
        table = self._table
        if table is not None:
            for i in range(table.n):
                kb = table.key(i)
                key = kb.decode("utf-8", "surrogatepass")
                if key in self._gone:
                    continue
                value = self._over.get(key, _MISSING)
                out.append((kb, table.raw(i).tobytes() if value is _MISSING else encode(value)))
        for key in self._new:
            out.append((key.encode("utf-8", "surrogatepass"), encode(self._over[key])))
        return out


_MISSING: Final[Any] = object()


def _entries(mapping: Any, encode: Any) -> list[tuple[bytes, bytes]]:
    if isinstance(mapping, LazyMap):
        out = mapping.entries(encode)
    else:
        out = [(k.encode("utf-8", "surrogatepass"), encode(v)) for k, v in mapping.items()]
    out.sort(key=lambda e: e[0])
    return out


def _u64(values: list[int]) -> bytes:
    return array.array("Q", values).tobytes()  # native order: only little-endian is read


def write_file(f: Any, head: dict[str, Any], maps: dict[str, Any]) -> None:
    """Write a checkpoint: ``head`` (plain data) and one table per mapping in ``maps``."""
    encode = msgspec.msgpack.Encoder().encode
    tables: list[bytes] = []
    layout: dict[str, list[int]] = {}
    for name, mapping in maps.items():
        parts = mapping.spliced(encode) if isinstance(mapping, LazyMap) else None
        if parts is not None:  # the usual rewrite: a few values changed, no key
            count = len(mapping)
        else:
            entries = _entries(mapping, encode)
            koff, voff = [0], [0]
            for k, v in entries:
                koff.append(koff[-1] + len(k))
                voff.append(voff[-1] + len(v))
            keys = b"".join(k for k, _ in entries)
            parts = [_u64(koff), _u64(voff), keys, b"".join(v for _, v in entries)]
            count = len(entries)
        body = b"".join(parts)
        body += b"\0" * (-len(body) % 8)
        layout[name] = [count, len(parts[2]), len(body)]
        tables.append(body)
    head_bytes = encode({**head, "tables": layout})
    pad = -(len(head_bytes) + 16) % 8
    f.write(MAGIC + len(head_bytes).to_bytes(8, "little") + head_bytes + b"\0" * pad)
    for body in tables:
        f.write(body)


def open_file(path: str) -> tuple[dict[str, Any], dict[str, Table]] | None:
    """The head and tables of a checkpoint file (mapped), or None if it is not one."""
    if not _LITTLE:  # pragma: no cover
        return None
    with open(path, "rb") as f:
        size = f.seek(0, 2)
        if size < 16:
            return None
        data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    buf = memoryview(data)
    if bytes(buf[:8]) != MAGIC:
        return None
    n = int.from_bytes(buf[8:16], "little")
    head = msgspec.msgpack.decode(buf[16 : 16 + n])
    if not isinstance(head, dict) or not isinstance(head.get("tables"), dict):
        return None
    at = 16 + n + (-(n + 16) % 8)
    tables: dict[str, Table] = {}
    for name, (count, key_bytes, length) in head["tables"].items():
        if at + length > size:
            return None
        tables[name] = Table(buf[at : at + length], 0, count, key_bytes)
        at += length
    return head, tables
