"""Running user SQL read-only, on a connection that can reach nothing but the store.

Two locks, so that a gap in one is caught by the other:

1. before anything runs, DuckDB's own parser must find exactly one statement, of type
   SELECT (which covers WITH, FROM-first, VALUES, DESCRIBE, SHOW, SUMMARIZE, PIVOT inside
   a query), or EXPLAIN [ANALYZE] of such a statement: EXPLAIN ANALYZE *runs* what it
   explains, so the explained statement is found with DuckDB's tokenizer and checked in
   turn. COPY, ATTACH, INSTALL/LOAD, SET, PRAGMA, CREATE (temporary objects and macros
   too), INSERT, CALL, EXPORT, ... are refused by type, not by pattern matching;
2. after the catalog views are created the connection is locked down (:func:`lock_down`):
   DuckDB may then open only the segment files of the snapshot, by their exact paths (no
   directory, so no file can be created and nothing else read), spilling to disk is off
   (DuckDB would otherwise write, and allow, ``<cwd>/.tmp/``), Python variables are not
   scanned and ``lock_configuration`` keeps any SET from undoing it.

Results are written only outside the store (:func:`outside_store`: ``sql --out``, ``export``).

A connection handed to Python code (``Projections.connect``) has no first lock, so it gets
a stricter second one (:func:`seal_off`): the segments are read through Arrow and DuckDB's
local file system is switched off, so no statement of any type reaches a file.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import duckdb
import pyarrow as pa

from ._errors import EngineError, QueryError, RefusedQueryError
from ._source import sql_string

_READ = duckdb.StatementType.SELECT
_EXPLAIN = duckdb.StatementType.EXPLAIN
#: How far into an EXPLAIN the explained statement may start (EXPLAIN (ANALYZE, FORMAT
#: json) is 8 tokens); a statement found later is refused rather than searched for.
_EXPLAIN_PREFIX_TOKENS = 24
_BAD_INPUT = (
    duckdb.ParserException,
    duckdb.BinderException,
    duckdb.CatalogException,
    duckdb.ConversionException,
    duckdb.InvalidInputException,
    duckdb.OutOfRangeException,
    duckdb.TypeMismatchException,
    duckdb.NotImplementedException,
)
_WHAT_RUNS = (
    "expected a read-only query (SELECT, WITH, FROM, VALUES, DESCRIBE, SHOW, SUMMARIZE, "
    "or EXPLAIN [ANALYZE] of one)"
)
_WHY = (
    "which evolog sql refuses: the log is changed only by appending events, and nothing "
    "outside the store's segments may be read or written"
)


def check_query(sql: str, con: duckdb.DuckDBPyConnection | None = None) -> str:
    """The one read-only statement in ``sql``, or :class:`RefusedQueryError`.

    ``con`` parses with an existing connection (the module-level parser would first open
    DuckDB's default connection, about 30 ms).
    """
    if not isinstance(sql, str) or not sql.strip():
        raise RefusedQueryError(f"expected one SQL query (SELECT ...); got {sql!r}")
    parser = con or duckdb
    try:
        statements = parser.extract_statements(sql)
    except duckdb.Error as exc:
        raise QueryError(f"SQL does not parse: {_one_line(exc)}") from None
    if len(statements) != 1:
        raise RefusedQueryError(
            f"expected exactly one SQL statement; got {len(statements)} (run them one at a time)"
        )
    kind = statements[0].type
    if kind == _EXPLAIN:
        kind = _explained(parser, sql)
        if kind != _READ:
            raise RefusedQueryError(f"{_WHAT_RUNS}; got EXPLAIN of a {_name(kind)}, {_WHY}")
    elif kind != _READ:
        raise RefusedQueryError(f"{_WHAT_RUNS}; got a {_name(kind)}, {_WHY}")
    return sql


def _explained(parser: object, sql: str) -> duckdb.StatementType | None:
    """The type of the statement an EXPLAIN explains (None if it cannot be found).

    It is the first tail of the text, cut at a token boundary after EXPLAIN, that parses
    as one statement: the words between (ANALYZE, an option list) never parse as a SELECT
    on their own, and a tail that starts inside them and still parses begins with ANALYZE
    (a VACUUM statement), which is refused like anything else that is not a SELECT.
    """
    try:
        tokens = duckdb.tokenize(sql)
    except duckdb.Error:
        return None
    for offset, _ in tokens[1 : 1 + _EXPLAIN_PREFIX_TOKENS]:
        try:
            inner = parser.extract_statements(sql[offset:])  # type: ignore[attr-defined]
        except duckdb.Error:
            continue
        return inner[0].type if len(inner) == 1 else None
    return None


def _name(kind: duckdb.StatementType | None) -> str:
    if kind is None:
        return "statement that cannot be recognised"
    return f"{kind.name.replace('_', ' ')} statement"


def _one_line(exc: BaseException) -> str:
    """DuckDB's message on one line (its parser errors add the query and a caret)."""
    return " ".join(str(exc).split("\n\n")[0].split())


def lock_down(con: duckdb.DuckDBPyConnection, files: Sequence[str]) -> None:
    """Allow DuckDB to open ``files`` (read_parquet of the segments) and nothing else.

    Exact paths, not their directory: DuckDB's allow-lists do not tell reading from
    writing, and a directory would let a write create a file in it. ``temp_directory`` is
    emptied first: DuckDB adds it to the allowed directories, and spilling would write.
    """
    paths = "[" + ", ".join(sql_string(f) for f in files) + "]"
    # One script: each round trip through the Python client costs a fraction of a ms.
    _settings(
        con,
        f"SET temp_directory = ''; SET allowed_paths = {paths}; SET allowed_directories = []; "
        "SET enable_external_access = false; SET python_enable_replacements = false; "
        "SET lock_configuration = true",
    )


def seal_off(con: duckdb.DuckDBPyConnection) -> None:
    """Forbid DuckDB every file: for connections whose segments are Arrow datasets."""
    _settings(
        con,
        "SET temp_directory = ''",
        "SET allowed_paths = []",
        "SET allowed_directories = []",
        "SET enable_external_access = false",
        "SET disabled_filesystems = 'LocalFileSystem'",
        "SET python_enable_replacements = false",
        "SET lock_configuration = true",
    )


def _settings(con: duckdb.DuckDBPyConnection, *statements: str) -> None:
    try:
        # Not one script here: DuckDB checks the statements after disabled_filesystems
        # against the file system it has just disabled, and refuses them.
        for statement in statements:
            con.execute(statement)
    except duckdb.Error as exc:
        raise EngineError(f"could not lock down the SQL connection: {_one_line(exc)}") from None


def outside_store(root: str, path: str | os.PathLike[str], what: str) -> str:
    """``path`` resolved (symlinks, ``..``), or :class:`RefusedQueryError` if it is in the store.

    Writers then use the resolved path, so what is checked is what is written.
    """
    target = os.path.realpath(os.fspath(path))
    store = os.path.realpath(root)
    if target == store or target.startswith(store.rstrip(os.sep) + os.sep):
        raise RefusedQueryError(
            f"{what}: expected a path outside the store {store}; got {os.fspath(path)!r} "
            f"(which is {target}): results are never written into the store"
        )
    return target


def run_query(con: duckdb.DuckDBPyConnection, sql: str) -> pa.Table:
    """Run one checked, read-only query and return its rows as Arrow."""
    query = check_query(sql, con)
    try:
        return con.sql(query).to_arrow_table()
    except duckdb.PermissionException as exc:
        raise RefusedQueryError(
            f"refused: the query reaches outside the store's segments ({_one_line(exc)})"
        ) from None
    except _BAD_INPUT as exc:
        raise QueryError(_one_line(exc)) from None
    except duckdb.Error as exc:
        raise EngineError(f"the query failed: {type(exc).__name__}: {_one_line(exc)}") from None
