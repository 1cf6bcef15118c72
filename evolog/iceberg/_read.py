"""``evolog sql --iceberg``: DuckDB over a table's data files.

The scan (the snapshot, the files a seq or time bound can skip) is planned from the
table's metadata files directly (:mod:`._plan`) for the default SQLite catalog, else by
pyiceberg (other catalogs, delete files, ...: whatever :mod:`._plan` does not read). DuckDB
reads those files in place, offline, with ``store_id`` filled from each file's partition
value. The query goes through the rules of ``evolog sql`` (:mod:`projections._sqlguard`):
one read-only statement, checked before anything runs, on a connection with no file access
at all: the planned files are pyarrow datasets registered on it (the data files of a table
published from a store are that store's own segments, which a DuckDB that can open them by
path could also overwrite). A table in object storage (``s3://``) is read the same way,
its datasets on the file system of the table's own FileIO (pyarrow's S3 client): no DuckDB
extension is needed, and no store's folder.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._catalog import (
    backend_errors,
    close_catalog,
    one_line,
    open_catalog,
    predicate,
    split_target,
    table_identifier,
    table_name,
)
from ._errors import CatalogError, IcebergInputError
from ._plan import Unsupported, column_of, duckdb_type, metadata_location, plan_files
from ._schema import STORE_ID
from ._storage import is_local, s3_properties

_names = itertools.count(1)

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa
    import pyarrow.fs as pafs
    from pyiceberg.io import FileIO
    from pyiceberg.schema import Schema
    from pyiceberg.table import Table


def iceberg_sql(
    target: str,
    query: str,
    *,
    snapshot_id: int | None = None,
    as_of: int | None = None,
    as_of_ts: int | None = None,
    warehouse: str | None = None,
    s3_endpoint: str | None = None,
    s3_region: str | None = None,
) -> pa.Table:
    """Run one read-only ``query`` over the table ``target`` (``CATALOG:TABLE``) as the
    view ``events``; ``snapshot_id`` reads an older snapshot, ``as_of`` keeps each store's
    events with ``seq <= as_of`` and ``as_of_ts`` those with an event time (µs) up to it.
    ``s3_endpoint``, ``s3_region``: the S3 server of a table in object storage (else from
    the environment, see :func:`._storage.s3_properties`)."""
    from evolog.projections import check_query, connect, run_query, seal_off

    catalog, table = split_target(target)
    for label, value in (("snapshot", snapshot_id), ("as_of", as_of), ("as_of_ts", as_of_ts)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise IcebergInputError(f"{label}: expected an integer or None; got {value!r}")
    bounds = {k: v for k, v in (("seq", as_of), ("ts", as_of_ts)) if v is not None}
    props = s3_properties(s3_endpoint, s3_region)
    con = connect(catalog=True)
    try:
        seal_off(con)  # before anything, the query's text included, reaches it
        check_query(query, con)  # refused before the catalog is even opened
        try:
            groups, columns = plan_direct(catalog, table, snapshot_id, bounds)
        except Unsupported:
            groups, columns = plan_pyiceberg(
                con, catalog, table, snapshot_id, bounds, warehouse, props
            )
        with backend_errors(f"reading the data files of table {table}"):
            view = _events_sql(con, groups, columns, as_of, as_of_ts)
            con.execute(f"CREATE VIEW events AS {view}")
        return run_query(con, query)
    finally:
        con.close()


@dataclass(slots=True)
class Group:
    """One store's data files, and the columns they hold (None: not known)."""

    paths: list[str]
    present: set[str] | None
    #: The table's FileIO when pyiceberg planned the scan: it reaches the files that are
    #: not local (``paths`` holds their URIs, ``sizes`` what the table recorded).
    io: FileIO | None = None
    sizes: list[int] = dataclasses.field(default_factory=list)

    def add(
        self, uri: str, size: int, counts: dict[int, int] | None, column_of: dict[int, str]
    ) -> None:
        self.paths.append(uri if self.io is not None and not is_local(uri) else _local(uri, size))
        self.sizes.append(size)
        # The columns a file holds, from its metadata (every leaf column has a value
        # count): no footer is read to learn that a store's files lack a column.
        if not counts or self.present is None:
            self.present = None  # no statistics: DuckDB reads the footers instead
        else:
            self.present.update(column_of[i] for i in counts if i in column_of)


#: (name, DuckDB type) of the table's columns, in order.
Columns = list[tuple[str, str]]


def plan_direct(
    catalog: str, table: str, snapshot_id: int | None, bounds: dict[str, int]
) -> tuple[dict[str, Group], Columns]:
    """The plan read from the table's metadata files (:mod:`._plan`), or Unsupported."""
    ident = table_identifier(table)
    name = ".".join(ident)
    location = metadata_location(catalog, ident)
    plan = plan_files(location, name, snapshot_id, bounds, partition=STORE_ID)
    columns = [(f["name"], duckdb_type(f["type"])) for f in plan.schema["fields"]]
    where = column_of(plan.schema)
    groups: dict[str, Group] = {}
    for f in plan.files:
        groups.setdefault(f.partition, Group([], set())).add(f.path, f.size, f.value_counts, where)
    return groups, columns


def plan_pyiceberg(
    con: duckdb.DuckDBPyConnection,
    catalog: str,
    table: str,
    snapshot_id: int | None,
    bounds: dict[str, int],
    warehouse: str | None,
    properties: dict[str, str] | None = None,
) -> tuple[dict[str, Group], Columns]:
    """The plan of pyiceberg's ``plan_files``, for any catalog and table it reads."""
    cat = open_catalog(catalog, create=False, warehouse=warehouse, properties=properties)
    try:
        with backend_errors(f"loading table {table}"):
            tbl = cat.load_table(table_identifier(table))
        groups, schema = plan(tbl, snapshot_id, bounds)
    finally:
        close_catalog(cat)
    from pyiceberg.io.pyarrow import schema_to_pyarrow

    types = con.from_arrow(schema_to_pyarrow(schema).empty_table()).types
    return groups, [(f.name, str(t)) for f, t in zip(schema.fields, types, strict=True)]


def plan(
    tbl: Table, snapshot_id: int | None, bounds: dict[str, int]
) -> tuple[dict[str, Group], Schema]:
    """The files to read by store id, and the snapshot's schema, planned by pyiceberg."""
    from pyiceberg.expressions import AlwaysTrue, And, BooleanExpression

    if snapshot_id is not None and tbl.snapshot_by_id(snapshot_id) is None:
        known = [s.snapshot_id for s in tbl.snapshots()][-5:]
        raise IcebergInputError(
            f"snapshot: expected a snapshot of table {table_name(tbl)} (latest: {known}); "
            f"got {snapshot_id}"
        )
    where: BooleanExpression = AlwaysTrue()
    for column, value in bounds.items():
        where = And(where, predicate("LessThanOrEqual", column, value))
    groups: dict[str, Group] = {}
    with backend_errors(f"planning the scan of table {table_name(tbl)}"):
        scan = tbl.scan(row_filter=where, snapshot_id=snapshot_id)
        projection = scan.projection()
        column_of = _column_of(projection)
        for task in scan.plan_files():
            if task.delete_files:
                raise IcebergInputError(
                    f"table {table_name(tbl)}: has delete files, which evolog sql --iceberg does "
                    "not apply (read it with Spark or Trino)"
                )
            f = task.file
            group = groups.setdefault(str(f.partition[0]), Group([], set(), tbl.io))
            group.add(f.file_path, f.file_size_in_bytes, f.value_counts, column_of)
        return groups, projection


def _column_of(schema: Schema) -> dict[int, str]:
    """The top-level column of every field id, nested ones included."""
    from pyiceberg.types import ListType, MapType, NestedField, StructType

    out: dict[int, str] = {}

    def walk(field: NestedField, top: str) -> None:
        out[field.field_id] = top
        kind = field.field_type
        if isinstance(kind, StructType):
            children = list(kind.fields)
        elif isinstance(kind, ListType):
            children = [kind.element_field]
        elif isinstance(kind, MapType):
            children = [kind.key_field, kind.value_field]
        else:
            children = []
        for child in children:
            walk(child, top)

    for field in schema.fields:
        walk(field, field.name)
    return out


def _local(uri: str, size: int) -> str:
    """The local path of a data file whose size is still the one the table recorded."""
    if uri.startswith("file://"):
        path = uri[len("file://") :]
    elif "://" not in uri:
        path = uri
    else:
        raise IcebergInputError(
            f"{uri}: evolog sql --iceberg reads local files only (offline); "
            "query this table with an engine that reaches its storage"
        )
    try:
        got = os.stat(path).st_size
    except OSError as exc:
        raise CatalogError(
            f"{path}: a data file of the table cannot be read ({exc.strerror}; a store's "
            "garbage collection removes replaced segments after its grace period)"
        ) from None
    if got != size:
        raise CatalogError(
            f"{path}: expected a data file of {size} bytes (per the table); got {got} bytes "
            "(changed after it was published)"
        )
    return path


def _events_sql(
    con: duckdb.DuckDBPyConnection,
    groups: dict[str, Group],
    columns: Columns,
    as_of: int | None,
    as_of_ts: int | None,
) -> str:
    """One SELECT per store over its files, in the table's column order (columns a
    store's files lack are typed NULLs), bounded by seq and time."""
    from evolog.projections import ident, sql_string

    null = {n: f"NULL::{t}" for n, t in columns}
    parts = []
    for sid, group in sorted(groups.items()):
        name, present = _register_files(con, group)
        cols = [
            f"{sql_string(sid)} AS {ident(n)}"
            if n == STORE_ID
            else (ident(n) if n in present else f"{null[n]} AS {ident(n)}")
            for n, _ in columns
        ]
        parts.append(f"SELECT {', '.join(cols)} FROM {name}")
    if not parts:
        # No file: the table's columns, typed, and no row.
        return "SELECT " + ", ".join(f"{null[n]} AS {ident(n)}" for n, _ in columns) + " LIMIT 0"
    where = []
    if as_of is not None:
        where.append(f"seq <= {int(as_of)}")
    if as_of_ts is not None:
        where.append(f"ts <= make_timestamptz({int(as_of_ts)}::BIGINT)")
    body = " UNION ALL ".join(parts)
    return f"SELECT * FROM ({body})" + (f" WHERE {' AND '.join(where)}" if where else "")


def _register_files(con: duckdb.DuckDBPyConnection, group: Group) -> tuple[str, set[str]]:
    """One store's data files as a pyarrow dataset on ``con``: its name, and its columns.

    The dataset's schema is the union of the files' (each footer is read): a column some
    files lack is read from them as nulls.
    """
    import pyarrow as pa
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    fs, paths = _remote(group) if any(not is_local(p) for p in group.paths) else (None, group.paths)
    try:
        schema = pa.unify_schemas(
            [pq.read_schema(p, filesystem=fs) for p in paths], promote_options="permissive"
        )
        dataset = ds.dataset(paths, schema=schema, format="parquet", filesystem=fs)
    except (OSError, pa.ArrowException) as exc:
        raise CatalogError(f"a data file of the table cannot be read: {one_line(exc)}") from None
    name = f"_evolog_iceberg_{next(_names)}"
    con.register(name, dataset)
    return name, set(schema.names)


def _remote(group: Group) -> tuple[pafs.FileSystem, list[str]]:
    """The file system and paths of a store's files in object storage, each file's size
    still the one the table recorded (one listing request per file)."""
    import pyarrow.fs as pafs
    from pyiceberg.io.pyarrow import PyArrowFileIO

    first = group.paths[0]
    if not isinstance(group.io, PyArrowFileIO) or any(is_local(p) for p in group.paths):
        raise IcebergInputError(
            f"{first}: evolog sql --iceberg reads local files, or object storage through "
            "pyiceberg's PyArrow FileIO (py-io-impl); query this table with an engine that "
            "reaches its storage"
        )
    where = [PyArrowFileIO.parse_location(p) for p in group.paths]
    scheme, netloc = where[0][0], where[0][1]
    if any((s, n) != (scheme, netloc) for s, n, _ in where):
        raise IcebergInputError(
            f"{first}: a store's data files are in more than one bucket; evolog sql "
            "--iceberg reads each store's from one"
        )
    paths = [p for _, _, p in where]
    with backend_errors(f"reading the data files of {scheme}://{netloc}"):
        fs = group.io.fs_by_scheme(scheme, netloc)
        infos = fs.get_file_info(paths)
    for uri, info, size in zip(group.paths, infos, group.sizes, strict=True):
        if info.type == pafs.FileType.NotFound:
            raise CatalogError(f"{uri}: a data file of the table is missing from the storage")
        if info.size != size:
            raise CatalogError(
                f"{uri}: expected a data file of {size} bytes (per the table); got "
                f"{info.size} bytes (changed after it was published)"
            )
    return fs, paths
