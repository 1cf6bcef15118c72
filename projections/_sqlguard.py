"""Running user SQL on a DuckDB connection that has no way to reach a file.

What protects the store is the connection, not the reading of the query
(:func:`seal_off`): the segments and the WAL tail are registered as Arrow datasets and
tables before the query is seen, then DuckDB's local file system is disabled, external
access is off, spilling has no directory, Python variables are not scanned and
``lock_configuration`` keeps any SET from undoing it. Whatever statement runs there, and
however it is spelled, DuckDB has no file system to open, create, change or delete a file
with, and no network or extension to load one.

A second lock stands in front (:func:`check_query`): DuckDB's own parser must find exactly
one statement, of type SELECT (which covers WITH, FROM-first, VALUES, DESCRIBE, SHOW,
SUMMARIZE, PIVOT inside a query), or EXPLAIN [ANALYZE] of such a statement, so a COPY or a
SET is refused with a clear message instead of failing inside DuckDB.

:class:`QueryLimits` bounds one query (time, DuckDB memory and threads, rows and bytes of
the result, which is streamed, so a limit stops the query instead of cutting a finished
result), and a :class:`Cancel` stops it from another thread (a client that went away).

Results are written only outside the store (:func:`outside_store`: ``sql --out``, ``export``).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

import duckdb
import pyarrow as pa

from ._errors import (
    EngineError,
    InvalidParameterError,
    QueryError,
    QueryLimitError,
    RefusedQueryError,
)

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
    # The tokenizer's offsets count UTF-8 bytes, not characters: sliced as characters, a
    # multi-byte character before the explained statement shifts every cut into the
    # middle of a token (and a string literal holding 'SELECT ...' then parsed as one).
    text = sql.encode()
    for offset, _ in tokens[1 : 1 + _EXPLAIN_PREFIX_TOKENS]:
        try:
            tail = text[offset:].decode()
            inner = parser.extract_statements(tail)  # type: ignore[attr-defined]
        except UnicodeDecodeError:
            return None
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


@dataclass(frozen=True, slots=True)
class QueryLimits:
    """Bounds of one user query; None leaves that one unbounded (the default: no bounds).

    ``timeout`` (seconds) interrupts the query; ``memory_mb`` and ``threads`` are DuckDB's
    ``memory_limit`` (MiB) and ``threads`` on the query's own DuckDB instance; the result
    is streamed and the query stops at ``max_rows`` rows, or fails past ``max_bytes``
    bytes of Arrow data, so neither ever costs a whole result first.
    """

    timeout: float | None = None
    memory_mb: int | None = None
    threads: int | None = None
    max_rows: int | None = None
    max_bytes: int | None = None

    def __post_init__(self) -> None:
        if self.timeout is not None and not (
            isinstance(self.timeout, (int, float))
            and not isinstance(self.timeout, bool)
            and 0 < self.timeout < float("inf")
        ):
            raise InvalidParameterError(
                f"timeout: expected a positive number of seconds or None; got {self.timeout!r}"
            )
        for name in ("memory_mb", "threads", "max_rows", "max_bytes"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                raise InvalidParameterError(
                    f"{name}: expected a positive integer or None; got {value!r}"
                )


NO_LIMITS = QueryLimits()


class Cancel:
    """Stops one query from another thread: :meth:`cancel` before it starts or while it runs."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.reason: str | None = None

    def cancel(self, reason: str = "the query was cancelled") -> None:
        if self.reason is None:
            self.reason = reason
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self.reason is not None


class _Watch:
    """A thread that interrupts ``con`` at the deadline or when ``cancel`` is set.

    It keeps interrupting until the query has returned: DuckDB's interrupt stops only what
    is running at that moment, and a cancel can come between the check and the start of
    a query, or between two batches of its result.
    """

    def __init__(self, con: duckdb.DuckDBPyConnection, timeout: float | None, cancel: Cancel):
        self._con = con
        self._timeout = timeout
        self._cancel = cancel
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="evolog-sql-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        if not self._cancel._event.wait(self._timeout) and not self._done.is_set():
            self._cancel.cancel(
                f"the query ran longer than its time limit of {self._timeout:g} s and was stopped"
            )
        while not self._done.is_set():
            self._con.interrupt()
            self._done.wait(0.02)

    def stop(self) -> None:
        self._done.set()
        self._cancel._event.set()  # wakes the thread when there was no deadline
        self._thread.join()


def seal_off(con: duckdb.DuckDBPyConnection, limits: QueryLimits = NO_LIMITS) -> None:
    """Forbid DuckDB every file (its segments are Arrow datasets), and apply ``limits``."""
    bounds = []
    if limits.memory_mb is not None:
        bounds.append(f"SET memory_limit = '{int(limits.memory_mb)}MiB'")
    if limits.threads is not None:
        bounds.append(f"SET threads = {int(limits.threads)}")
    _settings(
        con,
        "SET temp_directory = ''",
        "SET allowed_paths = []",
        "SET allowed_directories = []",
        "SET enable_external_access = false",
        "SET disabled_filesystems = 'LocalFileSystem'",
        "SET python_enable_replacements = false",
        # A long query would otherwise draw DuckDB's progress bar on the process's terminal.
        "SET enable_progress_bar = false",
        *bounds,
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


#: Rows per streamed batch: DuckDB's vector size, so a row or byte limit stops the query
#: within one vector of it.
_BATCH_ROWS = 2048


def run_query(
    con: duckdb.DuckDBPyConnection,
    sql: str,
    limits: QueryLimits = NO_LIMITS,
    cancel: Cancel | None = None,
) -> pa.Table:
    """Run one checked, read-only query on a sealed connection; its rows as Arrow."""
    query = check_query(sql, con)
    watch = None
    if limits.timeout is not None or cancel is not None:
        cancel = cancel or Cancel()
        watch = _Watch(con, limits.timeout, cancel)
    try:
        return _fetch(con, query, limits, cancel)
    except duckdb.Error as exc:
        raise _mapped(exc, limits, cancel) from None
    finally:
        if watch is not None:
            watch.stop()


def _fetch(
    con: duckdb.DuckDBPyConnection, query: str, limits: QueryLimits, cancel: Cancel | None
) -> pa.Table:
    rel = con.sql(query)
    if rel is None:  # not a query (the check lets none through): nothing to return
        return pa.table({})
    if limits.max_rows is None and limits.max_bytes is None:
        table = rel.to_arrow_table()
        _raise_if_cancelled(cancel)
        return table
    reader = rel.to_arrow_reader(_BATCH_ROWS)
    batches: list[pa.RecordBatch] = []
    rows = size = 0
    try:
        for whole in reader:
            _raise_if_cancelled(cancel)
            batch = whole if limits.max_rows is None else whole.slice(0, limits.max_rows - rows)
            batches.append(batch)
            rows += batch.num_rows
            size += batch.nbytes
            if limits.max_bytes is not None and size > limits.max_bytes:
                raise QueryLimitError(
                    f"the result is larger than its limit of {limits.max_bytes} bytes "
                    f"(stopped after {rows} rows); select fewer rows or columns",
                    "size",
                )
            if limits.max_rows is not None and rows >= limits.max_rows:
                break
    finally:
        reader.close()
    return pa.Table.from_batches(batches, schema=reader.schema)


def _raise_if_cancelled(cancel: Cancel | None) -> None:
    if cancel is not None and cancel.reason is not None:
        raise QueryLimitError(cancel.reason, "time" if "time limit" in cancel.reason else "cancel")


def _mapped(exc: duckdb.Error, limits: QueryLimits, cancel: Cancel | None) -> Exception:
    """The projections error for a DuckDB failure of user SQL."""
    if cancel is not None and cancel.reason is not None:
        return QueryLimitError(cancel.reason, "time" if "time limit" in cancel.reason else "cancel")
    if isinstance(exc, duckdb.OutOfMemoryException):
        return QueryLimitError(
            f"the query needs more memory than its limit of {limits.memory_mb} MiB "
            f"({_one_line(exc)})",
            "memory",
        )
    if isinstance(exc, duckdb.PermissionException):
        return RefusedQueryError(
            "refused: user SQL reaches nothing outside the store's events (no file, "
            f"network, extension or setting): {_one_line(exc)}"
        )
    if isinstance(exc, _BAD_INPUT):
        return QueryError(_one_line(exc))
    return EngineError(f"the query failed: {type(exc).__name__}: {_one_line(exc)}")
