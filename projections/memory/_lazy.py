"""The item checkpoint's file: sorted key -> value tables a cold process opens, not decodes.

A recall at 1e5 items reads a few posting lists and a few dozen items; decoding the whole
fold state (one msgpack document, about 50 MB there) cost a cold process a second. So the
file is a small msgpack head plus one table per map of the fold's state, memory-mapped;
each table holds its keys sorted by their UTF-8 bytes, two offset arrays and two blobs::

    b"EVOLMEM3" | u64 head length | u64 head CRC-32 | head (msgpack) | tables, 8-byte aligned:
        key offsets  (n + 1 little-endian u64) | value offsets (n + 1 u64)
        value CRC-32s (n u32, padded to 8)     | key bytes (concatenated)
        value bytes  (one msgpack value each)

A lookup is a binary search over the keys (~17 probes at 1e5 entries) and decodes one
value. Nothing is trusted unchecked, yet nothing is read in full: the head holds each table's
CRC-32 over its offsets, value CRCs and keys (checked when the table is first used; a few MB
at 1e5 items), and each value is checked against its own CRC when it is decoded, so a
damaged file raises :class:`CheckpointDamaged` instead of answering from garbage (the
caller drops the file and folds the log again; see ``ItemIndex.guarded``).

:class:`LazyMap` is the fold's view of a table: a mutable mapping whose reads decode
on first use and whose writes land in an in-memory overlay, so folding new events never
touches the file; writing the next checkpoint copies the untouched values' bytes as they are.
"""

from __future__ import annotations

import array
import mmap
import sys
import zlib
from collections.abc import Iterator, MutableMapping
from typing import Any, Final, Generic, TypeVar

import msgspec
from evolog.projections.graph._lean import kernels

__all__ = ["MAGIC", "CheckpointDamaged", "LazyMap", "Table", "open_file", "write_file"]

# The binary search in C (projections/graph/_kernels.c), where the optional extension is
# built: _lean is the one place that imports it (and it imports nothing heavy).
_find_key: Any = None if kernels is None else kernels.find_key

MAGIC: Final = b"EVOLMEM3"
_START: Final = 24  # magic, head length, head CRC
V = TypeVar("V")
_LITTLE: Final = sys.byteorder == "little"


class CheckpointDamaged(ValueError):
    """A checkpoint table or value does not match its CRC (the file is a cache: drop it)."""


class Table:
    """One sorted table of a mapped checkpoint file."""

    def __init__(self, buf: memoryview, n: int, key_bytes: int, crc: int, name: str) -> None:
        self.n = n
        self.name = name
        width = 8 * (n + 1)
        crcs = 4 * n + (-4 * n % 8)
        self._koff = buf[:width].cast("Q")
        self._voff = buf[width : 2 * width].cast("Q")
        self._crcs = buf[2 * width : 2 * width + 4 * n].cast("I")
        at = 2 * width + crcs
        self._keys = buf[at : at + key_bytes]
        self._vals = buf[at + key_bytes :]
        self._frame = buf[: at + key_bytes]
        self._crc = crc
        self._checked = False

    def check(self) -> None:
        """Check the offsets, CRCs and keys once (values are checked one by one)."""
        if not self._checked:
            ok = zlib.crc32(self._frame) == self._crc and (
                self.n == 0
                or (self._koff[self.n] <= len(self._keys) and self._voff[self.n] <= len(self._vals))
            )
            if not ok:
                raise self._damaged("the frame")
            self._checked = True

    def _damaged(self, what: str) -> CheckpointDamaged:
        return CheckpointDamaged(f"memory checkpoint: {what} of table {self.name!r} is damaged")

    def key(self, i: int) -> bytes:
        self.check()
        return bytes(self._keys[self._koff[i] : self._koff[i + 1]])

    def raw(self, i: int) -> memoryview:
        """Value ``i``'s bytes, checked against its CRC."""
        self.check()
        data = self._vals[self._voff[i] : self._voff[i + 1]]
        if zlib.crc32(data) != self._crcs[i]:
            raise self._damaged("a value")
        return data

    def find(self, key: bytes) -> int:
        """The index of ``key``, or -1."""
        self.check()
        if _find_key is not None:
            try:
                found: int = _find_key(self._koff, self._keys, self.n, key)
            except ValueError:
                raise self._damaged("the key offsets") from None
            return found
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

    def peek(self, key: str) -> V | None:
        """Read without keeping: the overlay's value, or the table's decoded afresh (None
        when absent). For readers that never change what they read (ranking): values kept
        after every query would pile up as objects the garbage collector walks again and
        again; a full collection over them cost a query at 1e5 items some 10 ms."""
        try:
            return self._over[key]
        except KeyError:
            pass
        if key in self._gone or self._table is None:
            return None
        i = self._base(key)
        if i < 0:
            return None
        value: V = self._dec.decode(self._table.raw(i))
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
        """The table rewritten with the overlay's values, as its five parts (key offsets,
        value offsets, value CRCs, keys, values), when no key was added or removed: the keys
        are copied, the values spliced (untouched spans copied whole with their CRCs), the
        offsets after a value that changed length shifted. None when keys changed (see
        :meth:`entries`)."""
        t = self._table
        if t is None or self._gone or self._new:
            return None
        changes = sorted(
            (t.find(k.encode("utf-8", "surrogatepass")), encode(v)) for k, v in self._over.items()
        )
        orig = t._voff
        voff = array.array("Q")
        voff.frombytes(orig.tobytes())
        crcs = array.array("I")
        crcs.frombytes(t._crcs.tobytes())
        pieces: list[bytes | memoryview] = []
        prev = shift = 0
        ends = [i for i, _ in changes[1:]] + [t.n] if changes else []
        for (i, data), end in zip(changes, ends, strict=True):
            crcs[i] = zlib.crc32(data)
            pieces += [t._vals[prev : orig[i]], data]
            prev = orig[i + 1]
            shift += len(data) - (orig[i + 1] - orig[i])
            if shift:
                for j in range(i + 1, end + 1):
                    voff[j] = orig[j] + shift
        pieces.append(t._vals[prev : orig[t.n]])
        return [
            t._koff.tobytes(),
            voff.tobytes(),
            _padded(crcs.tobytes()),
            t._keys.tobytes(),
            b"".join(pieces),
        ]

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


def _padded(data: bytes) -> bytes:
    return data + b"\0" * (-len(data) % 8)


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
            crcs = array.array("I", [zlib.crc32(v) for _, v in entries]).tobytes()
            parts = [_u64(koff), _u64(voff), _padded(crcs), keys, b"".join(v for _, v in entries)]
            count = len(entries)
        frame = b"".join(parts[:4])
        body = _padded(frame + parts[4])
        layout[name] = [count, len(parts[3]), len(body), zlib.crc32(frame)]
        tables.append(body)
    head_bytes = encode({**head, "tables": layout})
    pad = -(len(head_bytes) + _START) % 8
    lead = len(head_bytes).to_bytes(8, "little") + zlib.crc32(head_bytes).to_bytes(8, "little")
    f.write(MAGIC + lead + head_bytes + b"\0" * pad)
    for body in tables:
        f.write(body)


def open_file(path: str) -> tuple[dict[str, Any], dict[str, Table]] | None:
    """The head and tables of a checkpoint file (mapped), or None if it is not one."""
    if not _LITTLE:  # pragma: no cover
        return None
    with open(path, "rb") as f:
        size = f.seek(0, 2)
        if size < _START:
            return None
        data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    buf = memoryview(data)
    if bytes(buf[:8]) != MAGIC:
        return None
    n = int.from_bytes(buf[8:16], "little")
    raw = buf[_START : _START + n]
    if len(raw) != n or zlib.crc32(raw) != int.from_bytes(buf[16:_START], "little"):
        return None
    head = msgspec.msgpack.decode(raw)
    if not isinstance(head, dict) or not isinstance(head.get("tables"), dict):
        return None
    at = _START + n + (-(n + _START) % 8)
    tables: dict[str, Table] = {}
    for name, (count, key_bytes, length, crc) in head["tables"].items():
        if at + length > size:
            return None
        tables[name] = Table(buf[at : at + length], count, key_bytes, crc, name)
        at += length
    return head, tables
