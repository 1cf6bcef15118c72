"""Running user SQL read-only, on a connection that can reach nothing but the store.

Two locks, so that a gap in one is caught by the other:

1. before anything runs, DuckDB's own parser must find exactly one statement, of type
   SELECT (which covers WITH, FROM-first, VALUES, DESCRIBE, SHOW, SUMMARIZE, PIVOT inside
   a query) or EXPLAIN; COPY, ATTACH, INSTALL/LOAD, SET, PRAGMA, CREATE, INSERT, CALL,
   EXPORT, ... are refused by type, not by pattern matching;
2. the connection is a separate DuckDB instance holding only the catalog views; after they
   are created it is locked down: ``enable_external_access = false`` (no file, network or
   extension access except the segment files the views were bound to, which are listed in
   ``allowed_directories``), ``python_enable_replacements = false`` (no scanning of Python
   variables of this process) and ``lock_configuration = true`` (no SET can undo it).
"""

from __future__ import annotations

import duckdb
import pyarrow as pa

from ._errors import EngineError, QueryError, RefusedQueryError
from ._source import sql_string

_ALLOWED = {duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN}
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


def check_query(sql: str, con: duckdb.DuckDBPyConnection | None = None) -> str:
    """The one read-only statement in ``sql``, or :class:`RefusedQueryError`.

    ``con`` parses with an existing connection (the module-level parser would first open
    DuckDB's default connection, about 30 ms).
    """
    if not isinstance(sql, str) or not sql.strip():
        raise RefusedQueryError(f"expected one SQL query (SELECT ...); got {sql!r}")
    try:
        statements = (con or duckdb).extract_statements(sql)
    except duckdb.Error as exc:
        raise QueryError(f"SQL does not parse: {exc}") from None
    if len(statements) != 1:
        raise RefusedQueryError(
            f"expected exactly one SQL statement; got {len(statements)} (run them one at a time)"
        )
    statement = statements[0]
    if statement.type not in _ALLOWED:
        kind = statement.type.name.replace("_", " ")
        raise RefusedQueryError(
            f"expected a read-only query (SELECT, WITH, FROM, VALUES, DESCRIBE, SHOW, "
            f"SUMMARIZE or EXPLAIN); got a {kind} statement, which evolog sql refuses: "
            "the log is changed only by appending events, and nothing outside the store "
            "may be read or written"
        )
    return sql


def lock_down(con: duckdb.DuckDBPyConnection, allowed_dirs: list[str]) -> None:
    """Forbid file, network, extension and Python-variable access from now on."""
    dirs = "[" + ", ".join(sql_string(d.rstrip("/") + "/") for d in allowed_dirs) + "]"
    try:
        # One script: each round trip through the Python client costs a fraction of a ms.
        con.execute(
            f"SET allowed_directories = {dirs}; SET enable_external_access = false; "
            "SET python_enable_replacements = false; SET lock_configuration = true"
        )
    except duckdb.Error as exc:
        raise EngineError(f"could not lock down the SQL connection: {exc}") from None


def run_query(con: duckdb.DuckDBPyConnection, sql: str) -> pa.Table:
    """Run one checked, read-only query and return its rows as Arrow."""
    query = check_query(sql, con)
    try:
        return con.sql(query).to_arrow_table()
    except duckdb.PermissionException as exc:
        raise RefusedQueryError(
            f"refused: the query reaches outside the store's segments ({exc})"
        ) from None
    except _BAD_INPUT as exc:
        raise QueryError(str(exc)) from None
    except duckdb.Error as exc:
        raise EngineError(f"the query failed: {type(exc).__name__}: {exc}") from None
