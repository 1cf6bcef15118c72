"""A small reader of Avro object container files: enough for Iceberg's manifest lists and
manifests, without importing pyiceberg (about 0.7 s with SQLAlchemy) to read them.

Records are decoded with the schema in the file's header (the writer's), into dicts.
Codecs ``null`` and ``deflate`` (what Iceberg writers use by default); anything else
raises :class:`UnsupportedAvro`, and the caller hands the table to pyiceberg instead.
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Callable, Iterator
from typing import Any

MAGIC = b"Obj\x01"
_DOUBLE = struct.Struct("<d")
_FLOAT = struct.Struct("<f")

Decoder = Callable[["_Buf"], Any]


class UnsupportedAvro(Exception):
    """A file this reader does not decode (a codec or type it lacks, or damage)."""


class _Buf:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def long(self) -> int:
        """A zigzag varint."""
        data, pos = self.data, self.pos
        shift = result = 0
        while True:
            b = data[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                break
            shift += 7
        self.pos = pos
        return (result >> 1) ^ -(result & 1)

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise UnsupportedAvro("truncated Avro data")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out


def _bytes(buf: _Buf) -> bytes:
    return buf.take(buf.long())


def _string(buf: _Buf) -> str:
    return buf.take(buf.long()).decode()


_PRIMITIVES: dict[str, Decoder] = {
    "null": lambda buf: None,
    "boolean": lambda buf: buf.take(1) != b"\x00",
    "int": _Buf.long,
    "long": _Buf.long,
    "float": lambda buf: _FLOAT.unpack(buf.take(4))[0],
    "double": lambda buf: _DOUBLE.unpack(buf.take(8))[0],
    "bytes": _bytes,
    "string": _string,
}


def _blocks(buf: _Buf, item: Callable[[], None]) -> None:
    """Avro's blocked encoding of arrays and maps: counts until 0 (a negative count is
    followed by the block's size in bytes)."""
    while True:
        count = buf.long()
        if count == 0:
            return
        if count < 0:
            count = -count
            buf.long()
        for _ in range(count):
            item()


def decoder(schema: Any, named: dict[str, Decoder] | None = None) -> Decoder:
    """A function decoding one datum of ``schema`` (parsed Avro JSON)."""
    named = {} if named is None else named
    if isinstance(schema, str):
        if schema in _PRIMITIVES:
            return _PRIMITIVES[schema]
        if schema in named:
            return lambda buf: named[schema](buf)
        raise UnsupportedAvro(f"unknown Avro type {schema!r}")
    if isinstance(schema, list):
        branches = [decoder(s, named) for s in schema]
        return lambda buf: branches[buf.long()](buf)
    kind = schema.get("type")
    if kind == "record":
        fields = [(f["name"], decoder(f["type"], named)) for f in schema["fields"]]

        def record(buf: _Buf) -> dict[str, Any]:
            return {name: dec(buf) for name, dec in fields}

        named[schema["name"]] = record
        return record
    if kind == "array":
        element = decoder(schema["items"], named)

        def array(buf: _Buf) -> list[Any]:
            out: list[Any] = []
            _blocks(buf, lambda: out.append(element(buf)))
            return out

        return array
    if kind == "map":
        value = decoder(schema["values"], named)

        def mapping(buf: _Buf) -> dict[str, Any]:
            out: dict[str, Any] = {}

            def one() -> None:
                key = _string(buf)
                out[key] = value(buf)

            _blocks(buf, one)
            return out

        return mapping
    if kind == "fixed":
        size = int(schema["size"])
        fixed: Decoder = lambda buf: buf.take(size)  # noqa: E731
        named[schema["name"]] = fixed
        return fixed
    if kind == "enum":
        symbols = list(schema["symbols"])
        enum: Decoder = lambda buf: symbols[buf.long()]  # noqa: E731
        named[schema["name"]] = enum
        return enum
    if isinstance(kind, (str, list, dict)):
        return decoder(kind, named)  # {"type": "long", "logicalType": ...} and the like
    raise UnsupportedAvro(f"unknown Avro schema {schema!r}")


def read_records(data: bytes) -> tuple[dict[str, bytes], Iterator[dict[str, Any]]]:
    """The header's metadata and the records of an Avro object container file."""
    buf = _Buf(data)
    try:
        if buf.take(4) != MAGIC:
            raise UnsupportedAvro("not an Avro object container file")
        meta: dict[str, bytes] = {}
        _blocks(buf, lambda: meta.__setitem__(_string(buf), _bytes(buf)))
        sync = buf.take(16)
        codec = meta.get("avro.codec", b"null").decode()
        if codec not in ("null", "deflate"):
            raise UnsupportedAvro(f"Avro codec {codec!r}")
        decode = decoder(json.loads(meta["avro.schema"]))
    except (IndexError, KeyError, ValueError) as exc:
        raise UnsupportedAvro(f"unreadable Avro header ({exc})") from None
    return meta, _records(buf, sync, codec, decode)


def _records(buf: _Buf, sync: bytes, codec: str, decode: Decoder) -> Iterator[dict[str, Any]]:
    try:
        while buf.pos < len(buf.data):
            count = buf.long()
            block = buf.take(buf.long())
            if buf.take(16) != sync:
                raise UnsupportedAvro("Avro block without its sync marker")
            inner = _Buf(zlib.decompress(block, -15) if codec == "deflate" else block)
            for _ in range(count):
                yield decode(inner)
    except (IndexError, ValueError, zlib.error) as exc:
        raise UnsupportedAvro(f"unreadable Avro block ({exc})") from None
