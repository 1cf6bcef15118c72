"""The Arrow/Parquet schema of events, derived from the msgspec types, and conversions.

One wide schema: the envelope, then one typed column per distinct field name across all
kinds (null where a kind has no such field). Free-form fields (``observed``, ``selector``,
...) are JSON text, marked with the field metadata ``evolog.json``; nested Structs
(mutation, personality) are Arrow structs. Any engine can read the segments directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter
from typing import Any

import msgspec
import numpy as np  # loaded with pyarrow anyway
import pyarrow as pa

from .._errors import CorruptLogError
from ..schema._codec import gc_paused, kind_of
from ..schema._events import Event
from ..schema._union import EVENT_TYPES, KINDS, AnyEvent

JSON_META = {b"evolog.json": b"1"}
TS_TYPE = pa.timestamp("us", tz="UTC")
ENVELOPE = ("seq", "id", "ts", "kind", "agent", "session", "source", "v")


def arrow_type(t: Any) -> tuple[pa.DataType, bool]:
    """(arrow type, is_json) for a msgspec type_info node."""
    mi = msgspec.inspect
    if isinstance(t, mi.UnionType):
        inner = [x for x in t.types if not isinstance(x, mi.NoneType)]
        if len(inner) == 1:
            return arrow_type(inner[0])
        return pa.string(), True
    if isinstance(t, (mi.StrType, mi.LiteralType)):
        return pa.string(), False
    if isinstance(t, mi.BoolType):
        return pa.bool_(), False
    if isinstance(t, mi.IntType):
        return pa.int64(), False
    if isinstance(t, mi.FloatType):
        return pa.float64(), False
    if isinstance(t, mi.ListType) and isinstance(t.item_type, mi.StrType):
        return pa.list_(pa.string()), False
    if isinstance(t, mi.StructType):
        fields = [pa.field(f.name, arrow_type(f.type)[0]) for f in t.fields]
        return pa.struct(fields), False
    return pa.string(), True


def _build_schema() -> tuple[pa.Schema, frozenset[str], frozenset[str]]:
    fields: dict[str, pa.Field] = {
        "seq": pa.field("seq", pa.int64(), nullable=False),
        "id": pa.field("id", pa.string(), nullable=False),
        "ts": pa.field("ts", TS_TYPE, nullable=False),
        "kind": pa.field("kind", pa.string(), nullable=False),
        "agent": pa.field("agent", pa.string()),
        "session": pa.field("session", pa.string()),
        "source": pa.field("source", pa.string()),
        "v": pa.field("v", pa.int64()),
    }
    json_cols: set[str] = set()
    struct_cols: set[str] = set()
    for cls in EVENT_TYPES:
        for f in msgspec.inspect.type_info(cls).fields:  # type: ignore[attr-defined]
            if f.name in fields:
                continue
            typ, is_json = arrow_type(f.type)
            fields[f.name] = pa.field(f.name, typ, metadata=JSON_META if is_json else None)
            if is_json:
                json_cols.add(f.name)
            if pa.types.is_struct(typ):
                struct_cols.add(f.name)
    return pa.schema(list(fields.values())), frozenset(json_cols), frozenset(struct_cols)


SCHEMA, JSON_COLUMNS, STRUCT_COLUMNS = _build_schema()
_json = msgspec.json.Encoder()

#: Where a seal's Arrow buffers come from. pyarrow's default pool (mimalloc) maps fresh
#: pages for a process's first seal, and on this class of machine the page faults cost
#: more than the conversion: with it the first seal of a process (a CLI ``seal``, an
#: auto-seal in a hook) ran at 185-189k events/s, with the C allocator, which hands back
#: the memory the decoded Python objects have just freed, at 257-261k/s. Later seals run
#: at the same speed either way (see bench/RESULTS.md).
POOL = pa.system_memory_pool()


_astuple = msgspec.structs.astuple


def column(name: str, values: Sequence[Any]) -> pa.Array:
    typ = SCHEMA.field(name).type
    if name in JSON_COLUMNS:
        values = [None if v is None else _json.encode(v).decode() for v in values]
    elif name in STRUCT_COLUMNS:
        values = [None if v is None else msgspec.to_builtins(v) for v in values]
    elif name == "ts":
        return pa.array(values, pa.int64(), memory_pool=POOL).cast(TS_TYPE, memory_pool=POOL)
    return pa.array(values, typ, memory_pool=POOL)


def events_to_table(events: Sequence[AnyEvent], first_seq: int | None = None) -> pa.Table:
    """A table in :data:`SCHEMA` order, one row per event in the order given (seq order).

    With ``first_seq`` the rows get seqs ``first_seq, first_seq+1, ...`` and the events'
    own ``seq`` fields are not read (a seal: WAL bodies do not carry their seqs).
    """
    if not events:
        return SCHEMA.empty_table()
    with gc_paused():  # hundreds of thousands of short-lived tuples
        return _events_to_table(events, first_seq)


def _group(
    events: Sequence[AnyEvent],
) -> tuple[dict[type[Event], Sequence[AnyEvent]], np.ndarray[Any, Any] | None]:
    """The events by kind, and the permutation that puts the kinds' rows back in order.

    Done with C loops (type codes, a stable argsort, one itemgetter call) rather than a
    Python loop over the events: this runs for every event a seal writes.
    """
    types = list(map(type, events))
    classes = list(dict.fromkeys(types))
    if len(classes) == 1:
        return {classes[0]: events}, None
    code = {cls: i for i, cls in enumerate(classes)}
    codes = np.fromiter(map(code.__getitem__, types), dtype=np.int32, count=len(types))
    order = np.argsort(codes, kind="stable")
    grouped = itemgetter(*order.tolist())(events)
    groups: dict[type[Event], Sequence[AnyEvent]] = {}
    start = 0
    for cls, count in zip(classes, np.bincount(codes).tolist(), strict=True):
        groups[cls] = grouped[start : start + count]
        start += count
    back = np.empty_like(order)
    back[order] = np.arange(len(order))
    return groups, back


def _events_to_table(events: Sequence[AnyEvent], first_seq: int | None) -> pa.Table:
    groups, back = _group(events)
    # Only the columns some kind in this batch has go through the merge below; a segment's
    # other columns are all null and are added afterwards, cheaply.
    # A seal numbers the rows itself (first_seq): the events' seq fields are not read.
    skip = "seq" if first_seq is not None else ""
    present = [
        f
        for f in SCHEMA
        if f.name == "kind"
        or (f.name != skip and any(f.name in cls.__struct_fields__ for cls in groups))
    ]
    schema = pa.schema(present)
    tables = []
    for cls, group in groups.items():
        names = cls.__struct_fields__
        # map() rather than a generator: no Python frame per event. The column tuples go
        # to pa.array as they are, without a copy into lists.
        columns = dict(zip(names, zip(*map(_astuple, group), strict=True), strict=True))
        n = len(group)
        arrays = []
        for field in present:
            if field.name == "kind":
                arrays.append(pa.array([kind_of(group[0])] * n, pa.string(), memory_pool=POOL))
            elif field.name in columns:
                arrays.append(column(field.name, columns[field.name]))
            else:
                arrays.append(pa.nulls(n, field.type, memory_pool=POOL))
        tables.append(pa.Table.from_arrays(arrays, schema=schema))
    if back is None:
        table = tables[0]
    else:
        table = pa.concat_tables(tables).combine_chunks(memory_pool=POOL)
        table = _pc().take(table, pa.array(back), memory_pool=POOL)
    n = table.num_rows
    out = []
    for f in SCHEMA:
        if f.name in schema.names:
            out.append(table[f.name])
        elif f.name == "seq" and first_seq is not None:
            out.append(pa.array(np.arange(first_seq, first_seq + n, dtype=np.int64)))
        else:
            out.append(pa.nulls(n, f.type, memory_pool=POOL))
    return pa.Table.from_arrays(out, schema=SCHEMA)


_ts_to_int = pa.int64()


def table_to_events(table: pa.Table) -> list[AnyEvent]:
    """Rebuild events from rows of :data:`SCHEMA` (any row order; returned by seq)."""
    if table.num_rows == 0:
        return []
    out: list[AnyEvent] = []
    kinds = table["kind"]
    for kind in _pc().unique(kinds).to_pylist():
        cls = _class_of(kind)
        part = table.filter(_pc().equal(kinds, kind))
        names = [n for n in cls.__struct_fields__ if n in SCHEMA.names]
        lists = [_pylist(part, n) for n in names]
        rows = [
            {k: v for k, v in zip(names, vals, strict=True) if v is not None}
            for vals in zip(*lists, strict=True)
        ]
        try:
            out.extend(msgspec.convert(rows, list[cls]))  # type: ignore[valid-type]
        except msgspec.ValidationError as exc:
            raise CorruptLogError(f"segment rows of kind {kind!r} do not decode: {exc}") from None
    out.sort(key=lambda e: e.seq)
    return out


def _pylist(table: pa.Table, name: str) -> list[Any]:
    col = table[name]
    if name == "ts":
        col = col.cast(_ts_to_int)
    values: list[Any] = col.to_pylist()
    if name in JSON_COLUMNS:
        return [None if v is None else msgspec.json.decode(v) for v in values]
    if name in STRUCT_COLUMNS:
        return [
            None if v is None else {k: x for k, x in v.items() if x is not None} for v in values
        ]
    return values


def _pc() -> Any:
    # pyarrow.compute costs 40-60 ms to import; a reader of a sealed store never needs it here.
    import pyarrow.compute as pc

    return pc


def _class_of(kind: str) -> type[Event]:
    try:
        return KINDS[kind]
    except KeyError:
        raise CorruptLogError(f"segment holds an unknown kind {kind!r}") from None
