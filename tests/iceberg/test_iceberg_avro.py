"""The Avro container reader of the direct Iceberg planner, on files encoded here by hand
(the Avro 1.11 specification's binary encoding)."""

from __future__ import annotations

import json
import struct
import zlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import avro_records

from evolog.iceberg._avro import UnsupportedAvro, read_records

SYNC = bytes(range(16))
SCHEMA = {
    "type": "record",
    "name": "entry",
    "fields": [
        {"name": "n", "type": "long"},
        {"name": "name", "type": ["null", "string"]},
        {"name": "ok", "type": "boolean"},
        {"name": "x", "type": "double"},
        {"name": "raw", "type": {"type": "fixed", "name": "f4", "size": 4}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "props", "type": {"type": "map", "values": "bytes"}},
        {"name": "kind", "type": {"type": "enum", "name": "k", "symbols": ["A", "B"]}},
        {"name": "same", "type": ["null", "f4"]},
    ],
}


def _long(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def _str(b: bytes) -> bytes:
    return _long(len(b)) + b


def _record(r: dict[str, Any], *, negative_blocks: bool) -> bytes:
    out = _long(r["n"])
    out += b"\x00" if r["name"] is None else b"\x02" + _str(r["name"].encode())
    out += b"\x01" if r["ok"] else b"\x00"
    out += struct.pack("<d", r["x"]) + r["raw"]
    items = b"".join(_str(t.encode()) for t in r["tags"])
    if r["tags"] and negative_blocks:  # a block with its size in bytes
        out += _long(-len(r["tags"])) + _long(len(items)) + items + b"\x00"
    elif r["tags"]:
        out += _long(len(r["tags"])) + items + b"\x00"
    else:
        out += b"\x00"
    props = b"".join(_str(k.encode()) + _str(v) for k, v in r["props"].items())
    out += (_long(len(r["props"])) + props if r["props"] else b"") + b"\x00"
    out += _long(["A", "B"].index(r["kind"]))
    out += b"\x00" if r["same"] is None else b"\x02" + r["same"]
    return out


def _file(records: list[dict[str, Any]], codec: str, *, negative_blocks: bool = False) -> bytes:
    meta = {"avro.schema": json.dumps(SCHEMA).encode(), "avro.codec": codec.encode()}
    head = b"Obj\x01" + _long(len(meta))
    head += b"".join(_str(k.encode()) + _str(v) for k, v in meta.items()) + b"\x00" + SYNC
    body = b""
    for start in range(0, len(records), 3):  # blocks of three records
        chunk = records[start : start + 3]
        data = b"".join(_record(r, negative_blocks=negative_blocks) for r in chunk)
        if codec == "deflate":
            c = zlib.compressobj(wbits=-15)
            data = c.compress(data) + c.flush()
        body += _long(len(chunk)) + _long(len(data)) + data + SYNC
    return head + body


@given(st.lists(avro_records(), max_size=8), st.sampled_from(["null", "deflate"]), st.booleans())
def test_records_read_back_as_written(
    records: list[dict[str, Any]], codec: str, negative: bool
) -> None:
    meta, got = read_records(_file(records, codec, negative_blocks=negative))
    assert meta["avro.codec"] == codec.encode()
    assert list(got) == records


def test_what_it_does_not_read_is_unsupported() -> None:
    one = {
        "n": -1,
        "name": "a",
        "ok": True,
        "x": 0.5,
        "raw": b"abcd",
        "tags": ["t"],
        "props": {"k": b"v"},
        "kind": "B",
        "same": None,
    }
    good = _file([one], "null")
    with pytest.raises(UnsupportedAvro, match="codec"):
        read_records(_file([one], "snappy"))
    with pytest.raises(UnsupportedAvro, match="not an Avro"):
        read_records(b"PAR1" + good[4:])
    with pytest.raises(UnsupportedAvro, match="sync"):
        list(read_records(good[:-1] + b"\xff")[1])
    with pytest.raises(UnsupportedAvro):
        list(read_records(good[:-20])[1])
