"""WAL bodies to an Arrow table, through the C converter in :mod:`evolog.eventlog._native`.

The converter walks the msgpack bodies once and fills column buffers; no Python object is
made per event. It takes only what msgspec's typed decoder would take and gives the same
values; for anything else (a field or kind it does not know, a value out of range, a
build without the extension) it raises ValueError and the events go the Python way
(:func:`eventlog.sealed._arrow.events_to_table` over msgspec-decoded events), which then accepts
them or raises the error any reader would. tests/eventlog/test_bodies.py checks that both ways give
equal tables for every kind.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from types import ModuleType
from typing import Any, NamedTuple, TypeAlias

import msgspec
import numpy as np  # loaded with pyarrow anyway
import pyarrow as pa

from ..schema._codec import decode_array
from ..schema._union import EVENT_TYPES
from ..wal._frames import array_header
from ._arrow import JSON_COLUMNS, SCHEMA, STRUCT_COLUMNS, arrow_type, column, events_to_table

_native: ModuleType | None
try:
    from .. import _native
except ImportError:  # installed without a C compiler: sealing still works, more slowly
    _native = None

Buffer: TypeAlias = bytes | memoryview

# Column storage codes shared with _native.c.
SKIP, STR, INT, FLOAT, BOOL, LIST, RAW = range(7)

#: How many groups took the Python way since start-up (tests and benchmarks read it).
fallbacks = 0


class _Plan(NamedTuple):
    capsule: object
    codes: list[int]  # per SCHEMA column
    decoders: list[dict[int, msgspec.msgpack.Decoder[Any]]]  # per kind: free-form columns


def available() -> bool:
    """Whether the C converter was built and accepts this schema."""
    return _plan() is not None


def bodies_to_table(bodies: Sequence[Buffer], skip: int, count: int, first_seq: int) -> pa.Table:
    """A table in SCHEMA order of ``count`` events, numbered from ``first_seq``: the msgpack
    bodies back to back in ``bodies`` (WAL frame bodies), less the first ``skip`` events.
    Equal to ``events_to_table`` of the decoded events."""
    plan = _plan()
    if plan is not None and count:
        try:
            return _convert(plan, bodies, skip, count, first_seq)
        except (ValueError, TypeError, msgspec.MsgspecError):
            pass  # not a body the converter takes: the Python way decides
    global fallbacks
    fallbacks += 1
    data = array_header(skip + count) + b"".join(bodies)
    return events_to_table(decode_array(data)[skip:], first_seq)


def _convert(
    plan: _Plan, bodies: Sequence[Buffer], skip: int, count: int, first_seq: int
) -> pa.Table:
    assert _native is not None
    columns = _native.convert(plan.capsule, list(bodies), skip, count)
    arrays = []
    for field, code, col in zip(SCHEMA, plan.codes, columns, strict=True):
        if code == SKIP:
            arrays.append(pa.array(np.arange(first_seq, first_seq + count, dtype=np.int64)))
        elif code == RAW:
            arrays.append(_free_form(plan, field.name, col, count))
        elif col is None:
            arrays.append(_nulls(count, field.type))
        else:
            arrays.append(_from_buffers(field.type, code, count, col))
    return pa.Table.from_arrays(arrays, schema=SCHEMA)


@functools.lru_cache(maxsize=512)
def _nulls(n: int, typ: pa.DataType) -> pa.Array:
    # Arrays are immutable: every group of a seal (most have the same length) shares one
    # all-null column per type instead of allocating and zeroing it again.
    return pa.nulls(n, typ)


def _buffer(spec: tuple[int, int, object]) -> pa.Buffer:
    """A buffer the converter allocated, owned by the capsule that frees it."""
    address, size, owner = spec
    return pa.py_buffer(b"") if owner is None else pa.foreign_buffer(address, size, owner)


def _from_buffers(typ: pa.DataType, code: int, n: int, col: tuple[Any, ...]) -> pa.Array:
    nulls, valid, *rest = col
    validity = None if nulls == 0 else _buffer(valid)
    if code != LIST:
        return pa.Array.from_buffers(typ, n, [validity, *map(_buffer, rest)], nulls)
    offsets, item_offsets, data = rest
    items = pa.Array.from_buffers(
        pa.string(), item_offsets[1] // 4 - 1, [None, _buffer(item_offsets), _buffer(data)], 0
    )
    return pa.Array.from_buffers(typ, n, [validity, _buffer(offsets)], nulls, children=[items])


def _free_form(plan: _Plan, name: str, raws: list[tuple[int, int, bytes]], n: int) -> pa.Array:
    """A JSON or struct column from the values msgspec decodes (rare: most rows are null)."""
    if not raws:
        return _nulls(n, SCHEMA.field(name).type)
    col = SCHEMA.get_field_index(name)
    values: list[Any] = [None] * n
    for row, kind, data in raws:
        values[row] = plan.decoders[kind][col].decode(data)
    return column(name, values)


def _code(field: pa.Field) -> int:
    if field.name == "seq":
        return SKIP
    if field.name in JSON_COLUMNS or field.name in STRUCT_COLUMNS:
        return RAW
    t = field.type
    if pa.types.is_timestamp(t) or pa.types.is_int64(t):
        return INT
    codes = {pa.string(): STR, pa.float64(): FLOAT, pa.bool_(): BOOL, pa.list_(pa.string()): LIST}
    return codes[t]


def _literals(t: Any) -> tuple[str, ...]:
    mi = msgspec.inspect
    if isinstance(t, mi.LiteralType):
        return tuple(str(v) for v in t.values)
    return ()


def _nullable(t: Any) -> bool:
    mi = msgspec.inspect
    if isinstance(t, mi.AnyType):
        return True
    return isinstance(t, mi.UnionType) and any(isinstance(x, mi.NoneType) for x in t.types)


def _default(info: Any) -> bytes | None:
    if info.default is not msgspec.NODEFAULT:
        return msgspec.msgpack.encode(info.default)
    if info.default_factory is not msgspec.NODEFAULT:
        return msgspec.msgpack.encode(info.default_factory())
    return None


@functools.cache
def _plan() -> _Plan | None:
    """The converter's plan, or None when it cannot express this schema exactly."""
    if _native is None:
        return None
    codes = [_code(f) for f in SCHEMA]
    literals: dict[int, tuple[str, ...]] = {}
    kinds = []
    decoders: list[dict[int, msgspec.msgpack.Decoder[Any]]] = []
    kind_col = SCHEMA.get_field_index("kind")
    for cls in EVENT_TYPES:
        annotations = {f.name: f.type for f in msgspec.structs.fields(cls)}
        fields: list[tuple[int, bool, bytes | None]] = [(kind_col, False, None)]
        free: dict[int, msgspec.msgpack.Decoder[Any]] = {}
        for info in msgspec.inspect.type_info(cls).fields:  # type: ignore[attr-defined]
            col = SCHEMA.get_field_index(info.name)
            if col < 0:
                return None
            typ, is_json = arrow_type(info.type)
            want = pa.int64() if info.name == "ts" else SCHEMA.field(col).type
            if typ != want or is_json != (info.name in JSON_COLUMNS):
                return None  # a field whose column has another type: the Python way copes
            if literals.setdefault(col, _literals(info.type)) != _literals(info.type):
                return None  # one column, different Literal values in different kinds
            fields.append((col, _nullable(info.type), _default(info)))
            if codes[col] == RAW:
                free[col] = msgspec.msgpack.Decoder(annotations[info.name])
        kinds.append((str(cls.__struct_config__.tag), fields))
        decoders.append(free)
    columns = [
        (f.name, code, literals.get(i, ()))
        for i, (f, code) in enumerate(zip(SCHEMA, codes, strict=True))
    ]
    return _Plan(_native.make_plan(columns, kinds, kind_col), codes, decoders)
