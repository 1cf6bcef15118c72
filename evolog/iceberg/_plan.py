"""The files of a snapshot, read straight from the table's metadata (no pyiceberg).

For the catalog ``evolog publish iceberg`` makes by default (SQLite): the table's current
metadata file is looked up with the standard library's sqlite3, then its JSON, the
snapshot's manifest list and its manifests (Avro, :mod:`._avro`) give the live data files,
pruned as pyiceberg's ``plan_files`` prunes them for ``seq <= N`` and ``ts <= T`` (a
file's lower bound above the bound, or a column holding only nulls; empty files). Importing
pyiceberg and SQLAlchemy costs a cold ``evolog sql --iceberg`` about 0.7 s; this costs
milliseconds.

Anything it does not handle raises :class:`Unsupported` and the caller plans with
pyiceberg instead: other catalogs, format versions other than 2, delete files, other
partitionings, Avro codecs other than null and deflate, remote files.
"""

from __future__ import annotations

import json
import os
import sqlite3
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from ._avro import UnsupportedAvro, read_records
from ._errors import IcebergInputError

CATALOG_NAME = "evolog"  # the name `open_catalog` gives its SQL catalogs
CATALOG_FILE = "catalog.db"
_DELETED = 2  # a manifest entry's status
_INT64 = (-(2**63), 2**63 - 1)
_BOUND_FORMATS = {"long": "<q", "timestamp": "<q", "timestamptz": "<q", "int": "<i"}


class Unsupported(Exception):
    """A table this planner does not read: plan it with pyiceberg."""


@dataclass(frozen=True, slots=True)
class File:
    path: str  # as the table records it (a URI)
    size: int
    partition: str
    value_counts: dict[int, int] | None


@dataclass(frozen=True, slots=True)
class Plan:
    files: list[File]
    schema: dict[str, Any]  # the snapshot's Iceberg schema (JSON)


def metadata_location(catalog: str, ident: tuple[str, ...]) -> str:
    """The current metadata file of table ``ident`` in a SQLite SQL catalog (a warehouse
    directory or a ``sqlite:///`` URI)."""
    if catalog.startswith("sqlite:///"):
        db = catalog[len("sqlite:///") :]
    elif catalog.startswith("@") or "://" in catalog:
        raise Unsupported(catalog)
    else:
        db = os.path.join(os.path.abspath(os.path.expanduser(catalog)), CATALOG_FILE)
    if not os.path.isfile(db):
        raise Unsupported(db)  # pyiceberg's (or open_catalog's) error says what is wrong
    name = ".".join(ident)
    try:
        con = sqlite3.connect(f"file:{quote(os.path.abspath(db))}?mode=ro", uri=True)
        try:
            columns = {r[1] for r in con.execute("PRAGMA table_info(iceberg_tables)")}
            kind = " AND (iceberg_type = 'TABLE' OR iceberg_type IS NULL)"
            rows = con.execute(
                "SELECT metadata_location FROM iceberg_tables WHERE catalog_name = ? AND "
                "table_namespace = ? AND table_name = ?"
                + (kind if "iceberg_type" in columns else ""),
                (CATALOG_NAME, ".".join(ident[:-1]), ident[-1]),
            ).fetchall()
        finally:
            con.close()
    except sqlite3.Error as exc:
        raise Unsupported(str(exc)) from None
    if not rows or not rows[0][0]:
        raise IcebergInputError(f"loading table {name}: Table does not exist: {name}")
    return str(rows[0][0])


def plan_files(
    location: str,
    name: str,
    snapshot_id: int | None,
    bounds: dict[str, int],
    *,
    partition: str = "store_id",
) -> Plan:
    """The live data files of the snapshot (the current one by default) of table ``name``
    that may hold rows with ``column <= value`` for every item of ``bounds``."""
    try:
        return _plan(json.loads(_read(location)), name, snapshot_id, bounds, partition)
    except (KeyError, TypeError, ValueError, AttributeError, StopIteration) as exc:
        raise Unsupported(f"{location}: {exc!r}") from None


def _plan(
    meta: dict[str, Any],
    name: str,
    snapshot_id: int | None,
    bounds: dict[str, int],
    partition: str,
) -> Plan:
    if meta.get("format-version") != 2:
        raise Unsupported("format version")
    snapshots = meta.get("snapshots") or []
    if snapshot_id is None:
        current = meta.get("current-snapshot-id")
        snap = next((s for s in snapshots if s["snapshot-id"] == current), None)
        schema_id = meta["current-schema-id"]
    else:
        snap = next((s for s in snapshots if s["snapshot-id"] == snapshot_id), None)
        if snap is None:
            known = [s["snapshot-id"] for s in snapshots][-5:]
            raise IcebergInputError(
                f"snapshot: expected a snapshot of table {name} (latest: "
                f"{known}); got {snapshot_id}"
            )
        schema_id = snap.get("schema-id", meta["current-schema-id"])
    schema = next(s for s in meta["schemas"] if s["schema-id"] == schema_id)
    specs = {s["spec-id"]: s for s in meta["partition-specs"]}
    source = {f["name"]: f for f in schema["fields"]}.get(partition)
    prune = [_bound(schema, column, value) for column, value in bounds.items()]
    files: list[File] = []
    if snap is None:
        return Plan(files, schema)
    for manifest in _avro(snap["manifest-list"]):
        spec = specs.get(manifest["partition_spec_id"], {}).get("fields", [])
        if (
            manifest.get("content", 0) != 0
            or source is None
            or len(spec) != 1
            or spec[0]["transform"] != "identity"
            or spec[0]["source-id"] != source["id"]
        ):
            raise Unsupported("delete files or another partitioning")
        for entry in _avro(manifest["manifest_path"]):
            df = entry["data_file"]
            if entry["status"] == _DELETED:
                continue
            if df.get("content", 0) != 0 or df["file_format"].upper() != "PARQUET":
                raise Unsupported("not a Parquet data file")
            if df["record_count"] == 0 or not all(_may_match(df, *p) for p in prune):
                continue
            counts = _kv(df.get("value_counts"))
            value = next(iter(df["partition"].values()))
            files.append(File(df["file_path"], df["file_size_in_bytes"], str(value), counts))
    return Plan(files, schema)


def _bound(schema: dict[str, Any], column: str, value: int) -> tuple[int, str, int]:
    field = next((f for f in schema["fields"] if f["name"] == column), None)
    if field is None or field["type"] not in _BOUND_FORMATS:
        raise Unsupported(f"column {column}")
    if not _INT64[0] <= value <= _INT64[1]:
        raise Unsupported("a bound out of range")  # pyiceberg folds these to true/false
    return field["id"], _BOUND_FORMATS[field["type"]], value


def _may_match(df: dict[str, Any], field_id: int, fmt: str, value: int) -> bool:
    """pyiceberg's inclusive metrics evaluation of ``field <= value`` for one file."""
    if df["record_count"] < 0:
        return True
    counts = _kv(df.get("value_counts")) or {}
    nulls = _kv(df.get("null_value_counts")) or {}
    nans = _kv(df.get("nan_value_counts")) or {}
    n, nn, nan = counts.get(field_id), nulls.get(field_id), nans.get(field_id)
    if (n and nn and n == nn) or (nan and n and nan == n):
        return False
    lower = (_kv(df.get("lower_bounds")) or {}).get(field_id)
    return lower is None or struct.unpack(fmt, lower)[0] <= value


def _kv(pairs: list[dict[str, Any]] | None) -> dict[int, Any] | None:
    """An Iceberg int-keyed map (Avro: an array of key/value records)."""
    return None if pairs is None else {p["key"]: p["value"] for p in pairs}


def _avro(location: str) -> Iterator[dict[str, Any]]:
    try:
        _, records = read_records(_read(location))
        yield from records
    except UnsupportedAvro as exc:
        raise Unsupported(f"{location}: {exc}") from None


def _read(location: str) -> bytes:
    if location.startswith("file://"):
        path = location[len("file://") :]
    elif "://" in location or location.endswith(".gz.metadata.json"):
        raise Unsupported(location)
    else:
        path = location
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise Unsupported(f"{path}: {exc.strerror}") from None


def duckdb_type(kind: Any) -> str:
    """DuckDB's name of an Iceberg type (as Arrow maps it: pyiceberg's reader's types)."""
    if isinstance(kind, dict):
        if kind["type"] == "list":
            return f"{duckdb_type(kind['element'])}[]"
        if kind["type"] == "map":
            return f"MAP({duckdb_type(kind['key'])}, {duckdb_type(kind['value'])})"
        if kind["type"] == "struct":
            inner = ", ".join(f'"{f["name"]}" {duckdb_type(f["type"])}' for f in kind["fields"])
            return f"STRUCT({inner})"
        raise Unsupported(f"type {kind!r}")
    if kind in _TYPES:
        return _TYPES[kind]
    if isinstance(kind, str) and kind.startswith("decimal("):
        return kind.upper().replace(" ", "")
    if isinstance(kind, str) and kind.startswith("fixed["):
        return "BLOB"
    raise Unsupported(f"type {kind!r}")


_TYPES = {
    "boolean": "BOOLEAN",
    "int": "INTEGER",
    "long": "BIGINT",
    "float": "FLOAT",
    "double": "DOUBLE",
    "date": "DATE",
    "time": "TIME",
    "timestamp": "TIMESTAMP",
    "timestamptz": "TIMESTAMP WITH TIME ZONE",
    "string": "VARCHAR",
    "binary": "BLOB",
}


def column_of(schema: dict[str, Any]) -> dict[int, str]:
    """The top-level column of every field id of an Iceberg schema, nested ones included."""
    out: dict[int, str] = {}

    def walk(kind: Any, top: str) -> None:
        if not isinstance(kind, dict):
            return
        if kind["type"] == "struct":
            for f in kind["fields"]:
                out[f["id"]] = top
                walk(f["type"], top)
        elif kind["type"] == "list":
            out[kind["element-id"]] = top
            walk(kind["element"], top)
        elif kind["type"] == "map":
            out[kind["key-id"]] = top
            out[kind["value-id"]] = top
            walk(kind["key"], top)
            walk(kind["value"], top)

    for field in schema["fields"]:
        out[field["id"]] = field["name"]
        walk(field["type"], field["name"])
    return out
