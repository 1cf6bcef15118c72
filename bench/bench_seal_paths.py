"""Where sealing's time goes: five ways from WAL bodies to one zstd Parquet file, on the
same demo-mix events.

    python bench/bench_seal_paths.py            # 2e5 events, 4 rounds per path
    python bench/bench_seal_paths.py --quick    # 2e4 events, 2 rounds

``native`` is what a seal does today (eventlog/_native.c walks the msgpack bodies 16k at a
time into Arrow buffers); ``structs`` is its Python way, which a seal takes for bodies the
converter refuses or when it was not built (msgspec decodes event Structs, converted to
Arrow in Python). The others hand the parsing to C++: ``transcode``
re-encodes the decoded Structs as JSON lines for DuckDB's ``read_ndjson``; ``json-duckdb``
and ``json-pyarrow`` start from JSON lines, as if the WAL bodies were stored as JSON.
Each path runs in a fresh process (its first round pays what a process pays for its first
seal) and must produce the same table as ``structs``, defaults of omitted fields included.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec

PATHS = ("native", "structs", "transcode", "json-duckdb", "json-pyarrow")
GROUP = 16 * 1024


def _duck_type(t: Any) -> str:
    import pyarrow as pa

    if pa.types.is_struct(t):
        return "STRUCT(" + ", ".join(f'"{f.name}" {_duck_type(f.type)}' for f in t) + ")"
    if pa.types.is_list(t):
        return _duck_type(t.value_type) + "[]"
    names = {pa.string(): "VARCHAR", pa.int64(): "BIGINT", pa.float64(): "DOUBLE"}
    return names.get(t, "BOOLEAN" if t == pa.bool_() else "BIGINT")


def _literal(v: Any) -> str:
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    if isinstance(v, list):
        return "[]::VARCHAR[]"
    return repr(v).upper() if isinstance(v, bool) else repr(v)


def _select() -> str:
    """Columns in segment order; an omitted field reads as its kind's default."""
    from evolog.eventlog.schema._union import EVENT_TYPES
    from evolog.eventlog.sealed._arrow import SCHEMA

    defaults: dict[str, list[tuple[str, Any]]] = {}
    for cls in EVENT_TYPES:
        kind = str(cls.__struct_config__.tag)
        for f in msgspec.structs.fields(cls):
            d = f.default if f.default_factory is msgspec.NODEFAULT else f.default_factory()
            if d is not None and d is not msgspec.NODEFAULT and f.name not in ("seq", "ts"):
                defaults.setdefault(f.name, []).append((kind, d))
    cols = []
    for f in SCHEMA:
        if f.name == "seq":
            continue  # rows come out in file order; their seqs are added in Arrow
        if f.name in defaults:
            whens = " ".join(
                f"WHEN '{k}' THEN coalesce(\"{f.name}\", {_literal(d)})"
                for k, d in defaults[f.name]
            )
            cols.append(f'CASE kind {whens} ELSE "{f.name}" END AS "{f.name}"')
        else:
            cols.append(f'"{f.name}"')
    return ", ".join(cols)


def _columns() -> str:
    from evolog.eventlog.sealed._arrow import JSON_COLUMNS, SCHEMA

    spec = {
        f.name: "JSON" if f.name in JSON_COLUMNS else _duck_type(f.type)
        for f in SCHEMA
        if f.name not in ("ts", "seq")
    }
    spec["ts"] = "BIGINT"
    return "{" + ", ".join(f"'{k}': '{v}'" for k, v in spec.items()) + "}"


def _to_schema(table: Any) -> Any:
    import numpy as np
    import pyarrow as pa
    from evolog.eventlog.sealed._arrow import SCHEMA, TS_TYPE

    cols = []
    for f in SCHEMA:
        if f.name == "seq":
            cols.append(pa.array(np.arange(1, table.num_rows + 1, dtype=np.int64)))
            continue
        if f.name not in table.column_names:  # json-pyarrow: free-form fields left out
            cols.append(pa.nulls(table.num_rows, f.type))
            continue
        col = table[f.name]
        cols.append(col.cast(pa.int64()).cast(TS_TYPE) if f.name == "ts" else col.cast(f.type))
    return pa.Table.from_arrays(cols, schema=SCHEMA)


def _round(path: str, events: list[Any], tmp: Path) -> tuple[float, Any]:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from evolog.eventlog.schema._codec import decode_array, encode
    from evolog.eventlog.sealed._arrow import events_to_table
    from evolog.eventlog.wal._frames import array_header

    groups = [events[i : i + GROUP] for i in range(0, len(events), GROUP)]
    msgpack = [array_header(len(g)) + b"".join(encode(e) for e in g) for g in groups]
    lines = [msgspec.json.Encoder().encode_lines(g) for g in groups]
    ndjson = tmp / "wal.ndjson"
    start = time.perf_counter()
    if path == "structs":
        tables = []
        first = 1
        for data in msgpack:
            decoded = decode_array(data)
            for seq, e in enumerate(decoded, first):
                msgspec.structs.force_setattr(e, "seq", seq)
            first += len(decoded)
            tables.append(events_to_table(decoded))
        table = pa.concat_tables(tables)
    elif path == "native":
        from evolog.eventlog.sealed._bodies import bodies_to_table

        header = len(array_header(1))
        tables, first = [], 1
        for data, group in zip(msgpack, groups, strict=True):
            tables.append(bodies_to_table([memoryview(data)[header:]], 0, len(group), first))
            first += len(group)
        table = pa.concat_tables(tables)
    elif path == "json-pyarrow":
        import io

        import pyarrow.json as pj
        from evolog.eventlog.sealed._arrow import JSON_COLUMNS, SCHEMA

        schema = pa.schema(
            [
                pa.field("ts", pa.int64()) if f.name == "ts" else f
                for f in SCHEMA
                if f.name not in JSON_COLUMNS and f.name != "seq"
            ]
        )
        # A lower bound: the free-form fields are skipped and omitted defaults stay null.
        opts = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
        table = pj.read_json(io.BytesIO(b"".join(lines)), parse_options=opts)
    else:
        import duckdb

        with open(ndjson, "wb") as f:
            for data, text in zip(msgpack, lines, strict=True):
                f.write(text if path == "json-duckdb" else _transcode(decode_array(data)))
        con = duckdb.connect()
        rel = con.sql(
            f"SELECT {_select()} FROM read_ndjson('{ndjson}', columns={_columns()}, "
            "format='newline_delimited')"
        )
        table = rel.to_arrow_table()
    if path not in ("structs", "native"):
        table = _to_schema(table)
    pq.write_table(table, tmp / "seg.parquet", compression="zstd", compression_level=1)
    return time.perf_counter() - start, table


def _transcode(decoded: list[Any]) -> bytes:
    return msgspec.json.Encoder().encode_lines(decoded)


def child(path: str, n: int, rounds: int) -> None:
    import pyarrow.parquet  # noqa: F401  the one-time import is not part of a seal
    from bench_eventlog import _demo_events

    events = _demo_events(n)  # seq 0, as a WAL body holds them: the frame header carries seqs
    times = []
    with tempfile.TemporaryDirectory() as d:
        for _ in range(rounds):
            dt, table = _round(path, events, Path(d))
            times.append(dt)
        if path not in ("structs", "json-pyarrow"):
            _, expected = _round("structs", events, Path(d))
            if not table.equals(expected):
                raise SystemExit(f"{path}: the table differs from what a seal writes")
    warm = statistics.median(times[1:]) if len(times) > 1 else times[0]
    print(
        f"{path:13s} {n / times[0]:9.0f} events/s first round, {n / warm:9.0f} events/s "
        f"warm (median of {len(times) - 1})"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--path", choices=PATHS)
    args = ap.parse_args()
    n, rounds = (20_000, 2) if args.quick else (200_000, 4)
    if args.path:
        child(args.path, n, rounds)
        return
    print(f"{n} demo-mix events, WAL bodies -> one zstd Parquet file, goal >= 500,000/s")
    for path in PATHS:
        cmd = [sys.executable, __file__, "--path", path, *(["--quick"] if args.quick else [])]
        subprocess.run(cmd, check=True)


if __name__ == "__main__":
    main()
