"""DuckDB connections and scans of one snapshot of the log.

A snapshot is sealed Parquet segments plus the WAL tail. Segments are read in place with
``read_parquet``; the tail is registered as an Arrow table. Every scan is bounded by the
snapshot's head seq (and optionally an as-of seq and time), so nothing appended after the
snapshot was taken is ever seen, and a scan of a seq range opens only the segments that
overlap it (a refresh after 1e4 events reads one segment, not the whole log).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import duckdb
from evolog.eventlog import Snapshot
from evolog.eventlog.sealed import stat_segment

from ._errors import EngineError, InvalidParameterError
from ._segguard import check_footers, check_with_arrow

if TYPE_CHECKING:
    import pyarrow as pa

#: Extensions cannot be downloaded on our machines; a LOAD that tries would hang for seconds.
CONFIG = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}
_names = itertools.count(1)
#: The columns the edge projections read (``evolog.projections._tail.NARROW_SCHEMA``).
NARROW_COLUMNS = ("seq", "id", "ts", "kind", "key", "gene", "status", "action_id")


@dataclass(frozen=True, slots=True)
class Bounds:
    """Which events a projection sees: ``seq <= as_of_seq`` and ``ts <= as_of_ts`` (µs)."""

    as_of_seq: int | None = None
    as_of_ts: int | None = None

    def __post_init__(self) -> None:
        for name in ("as_of_seq", "as_of_ts"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 0
            ):
                raise InvalidParameterError(
                    f"{name}: expected a non-negative integer or None; got {value!r}"
                )


def connect(path: str = ":memory:", *, catalog: bool = False) -> duckdb.DuckDBPyConnection:
    """A new DuckDB instance configured for offline use with UTC timestamps (~15 ms).

    ``catalog``: an instance for one catalog query, which binds the segments twice (the
    views, then the query): keeping their Parquet footers saves the second read (2 ms for
    four segments). Segments never change once written, so the cache cannot be stale.
    """
    setup = "SET TimeZone = 'UTC'"
    if catalog:
        setup += "; SET parquet_metadata_cache = true"
    try:
        con = duckdb.connect(path, config=dict(CONFIG))
        con.execute(setup)
    except duckdb.Error as exc:
        raise EngineError(f"{path}: could not open a DuckDB database: {exc}") from None
    return con


_shared_lock = threading.Lock()
_shared: tuple[int, duckdb.DuckDBPyConnection] | None = None


def _instance() -> duckdb.DuckDBPyConnection:
    """The process's DuckDB instance for internal work (re-created after a fork)."""
    global _shared
    with _shared_lock:
        if _shared is None or _shared[0] != os.getpid():
            con = connect()
            # Detaching a checkpoint file would rewrite it (~15 ms); its WAL is replayed at
            # the next attach instead, and the cache checkpoints when the WAL grows.
            with engine_errors("configuring DuckDB"):
                con.execute("PRAGMA disable_checkpoint_on_shutdown")
                con.execute("SET checkpoint_on_detach = 'DISABLED'")
            _shared = (os.getpid(), con)
        return _shared[1]


@contextlib.contextmanager
def workspace(path: str | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    """A cursor whose default database is the DuckDB file ``path`` or a fresh in-memory one.

    Opening a DuckDB instance costs about 15 ms; attaching a database to a shared instance
    costs under 1 ms, which matters for a 50 ms refresh. Detaching closes the file, so
    another process can open it next.
    """
    cur = _instance().cursor()
    name = f"ws{next(_names)}"
    try:
        with engine_errors(f"{path or 'memory'}: attaching a DuckDB database"):
            cur.execute(f"ATTACH {sql_string(path or ':memory:')} AS {name}")
        try:
            cur.execute(f"USE {name}")
            yield cur
        finally:
            with contextlib.suppress(duckdb.Error):
                cur.execute("USE memory")
                cur.execute(f"DETACH {name}")
    finally:
        cur.close()


@contextlib.contextmanager
def engine_errors(what: str) -> Iterator[None]:
    """Map DuckDB failures inside projection code to :class:`EngineError`."""
    try:
        yield
    except duckdb.Error as exc:
        raise EngineError(f"{what}: {type(exc).__name__}: {exc}") from None


@contextlib.contextmanager
def cursor() -> Iterator[duckdb.DuckDBPyConnection]:
    """A cursor on the process's DuckDB instance, for work that writes nothing to a file.

    Temporary tables and registered Arrow tables are private to a cursor and go with it.
    """
    cur = _instance().cursor()
    try:
        yield cur
    finally:
        cur.close()


def arrow(con: duckdb.DuckDBPyConnection, sql: str, params: object = None) -> pa.Table:
    """The rows of one query as Arrow.

    Through the relation API: DuckDB warns about the extra copy an Arrow fetch on a DB-API
    result makes, and silencing that with ``warnings.catch_warnings`` would change the
    process-wide filters under any other thread that is running queries at the same time.
    The relation binds the query twice (for its schema, then to run it), which measured
    about 0.4 ms on a grouped scan of four segments: the price of leaving the filters alone.
    """
    return con.sql(sql, params=params).to_arrow_table()


@contextlib.contextmanager
def registered(con: duckdb.DuckDBPyConnection, table: pa.Table) -> Iterator[str]:
    """``table`` registered on ``con`` under a fresh name for the duration of the block."""
    name = f"_evolog_arrow_{next(_names)}"
    with engine_errors("registering an Arrow table"):
        con.register(name, table)
    try:
        yield name
    finally:
        with contextlib.suppress(duckdb.Error):
            con.unregister(name)


def sql_string(text: str) -> str:
    """A SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def ident(name: str) -> str:
    """A quoted SQL identifier (several event fields are SQL keywords: key, index, value)."""
    return '"' + name.replace('"', '""') + '"'


class EventScan:
    """SQL over the events of a snapshot within bounds, in the wide or the narrow schema.

    ``narrow`` keeps only :data:`NARROW_COLUMNS` and decodes the WAL tail with the light
    decoder: what the edge projections need, at a fraction of the cost. The tail is decoded
    lazily, only as far back as a scan asks for, so a refresh decodes only the WAL records
    it applies. pyarrow's compute module (about 50 ms to import) is loaded only when there
    is a tail to convert, which keeps a cold ``evolog sql`` over sealed segments fast.

    ``via_arrow`` reads the segments through pyarrow datasets registered on the connection
    instead of DuckDB's ``read_parquet``, so that DuckDB itself needs no file access at all
    (:func:`evolog.projections._sqlguard.seal_off`); scans are slower and pyarrow.dataset costs
    about 45 ms to import, so only connections handed to Python code use it.
    """

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        snap: Snapshot,
        bounds: Bounds,
        *,
        narrow: bool = False,
        via_arrow: bool = False,
    ) -> None:
        self.con = con
        self.snap = snap
        self.bounds = bounds
        self.narrow = narrow
        self.via_arrow = via_arrow
        head = snap.head_seq
        self.head = head if bounds.as_of_seq is None else min(bounds.as_of_seq, head)
        self._chunks: list[tuple[int, int, str, pa.Table]] = []  # first, last, name, rows
        self._decoded_above = max(self.head, snap.manifest.sealed_seq)
        self._present: dict[tuple[str, ...], set[str]] = {}

    def columns(self) -> tuple[str, ...]:
        """The columns a scan selects, in schema order."""
        if self.narrow:
            return NARROW_COLUMNS
        from evolog.eventlog.sealed import SCHEMA

        return tuple(SCHEMA.names)

    def sql(self, lo: int = 0, hi: int | None = None) -> str:
        """A parenthesised SELECT of events with ``lo < seq <= hi`` (``hi``: the head)."""
        hi = self.head if hi is None else min(hi, self.head)
        self._decode_tail(lo)
        tails = [name for first, last, name, _ in self._chunks if first <= hi and last > lo]
        # Wide scans of segments alone select *, so that no schema is needed to bind them.
        explicit = self.narrow or bool(tails)
        parts = []
        paths = self._segment_paths(lo, hi)
        if paths:
            parts.append(self._segments_select(paths, explicit))
        cols = ", ".join(ident(c) for c in self.columns()) if explicit else "*"
        parts.extend(f"SELECT {cols} FROM {name}" for name in tails)
        if not parts:
            parts.append(f"SELECT * FROM {self._empty()}")
        # Only filters that can drop rows: a bare read_parquet answers count(*) from the
        # Parquet footers, which any filter (or a UNION ALL with the tail) prevents.
        where = []
        if lo > 0:
            where.append(f"seq > {int(lo)}")
        if hi < self.snap.head_seq:
            where.append(f"seq <= {int(hi)}")
        if self.bounds.as_of_ts is not None:
            where.append(f"ts <= make_timestamptz({int(self.bounds.as_of_ts)}::BIGINT)")
        body = " UNION ALL ".join(parts)
        return f"(SELECT * FROM ({body}){' WHERE ' + ' AND '.join(where) if where else ''})"

    def tail_id(self, seq: int) -> str:
        """The id of the tail event at ``seq`` ('' if the tail has none)."""
        self._decode_tail(seq - 1)
        for first, last, _, rows in self._chunks:
            if first <= seq <= last:
                return str(rows["id"][seq - first].as_py())
        return ""

    def _decode_tail(self, lo: int) -> None:
        """Register the WAL records with ``lo < seq <= head`` not registered yet."""
        start = max(lo, self.snap.manifest.sealed_seq)
        if start >= self._decoded_above:
            return
        end = self._decoded_above
        if self.narrow:
            from ._tail import narrow_tail

            rows = narrow_tail(self.snap, start, end)
        else:
            from evolog.eventlog.sealed import SCHEMA, events_to_table

            events = [e for e in self.snap.tail_events() if start < e.seq <= end]
            rows = events_to_table(events) if events else SCHEMA.empty_table()
        name = f"_evolog_tail_{next(_names)}"
        with engine_errors("registering the WAL tail"):
            self.con.register(name, rows)
        self._chunks.append((start + 1, end, name, rows))
        self._decoded_above = start

    def _schema(self) -> pa.Schema:
        if self.narrow:
            from ._tail import NARROW_SCHEMA

            return NARROW_SCHEMA
        from evolog.eventlog.sealed import SCHEMA

        return SCHEMA

    def _empty(self) -> str:
        name = f"_evolog_empty_{next(_names)}"
        with engine_errors("registering an empty relation"):
            self.con.register(name, self._schema().empty_table())
        return name

    def _segment_paths(self, lo: int, hi: int) -> list[str]:
        ts_max = self.bounds.as_of_ts
        infos = [
            info
            for info in self.snap.segments
            if info.last_seq > lo
            and info.first_seq <= hi
            and (ts_max is None or info.min_ts <= ts_max)
        ]
        paths = [stat_segment(self.snap.paths.segments, info) for info in infos]
        if self.via_arrow:  # DuckDB's file system is off: pyarrow checks them instead
            check_with_arrow(self.snap.paths.segments, infos, paths)
        else:
            check_footers(self.con, infos, paths)
        return paths

    def _segments_select(self, paths: Sequence[str], explicit: bool) -> str:
        """SELECT from segments; with ``explicit`` columns, those no segment has are NULL."""
        if self.via_arrow:
            return self._dataset_select(paths)
        files = ", ".join(sql_string(p) for p in paths)
        if self.narrow:
            # Every segment ever written has the narrow columns (schema version 1), and
            # read_parquet matches columns by name: union_by_name, which reads every footer
            # when the query is bound (about 1 ms for four segments), is not needed.
            cols = ", ".join(ident(n) for n in self.columns())
            return f"SELECT {cols} FROM read_parquet([{files}])"
        scan = f"read_parquet([{files}], union_by_name = true)"
        if not explicit:
            return f"SELECT * FROM {scan}"
        names = self.columns()
        key = tuple(paths)
        if key not in self._present:
            with engine_errors("reading segment schemas"):
                self._present[key] = set(self.con.sql(f"SELECT * FROM {scan} LIMIT 0").columns)
        return f"SELECT {', '.join(self._column_or_null(n, key) for n in names)} FROM {scan}"

    def _dataset_select(self, paths: Sequence[str]) -> str:
        import pyarrow as pa
        import pyarrow.dataset as ds

        # The dataset has the whole schema: a column a segment lacks is read as nulls.
        try:
            dataset = ds.dataset(list(paths), schema=self._schema(), format="parquet")
        except (OSError, pa.ArrowException) as exc:
            raise EngineError(f"opening the segments: {exc}") from None
        name = f"_evolog_segments_{next(_names)}"
        with engine_errors("registering the segments"):
            self.con.register(name, dataset)
        cols = ", ".join(ident(n) for n in self.columns())
        return f"SELECT {cols} FROM {name}"

    def _column_or_null(self, name: str, key: tuple[str, ...]) -> str:
        if name in self._present[key]:
            return ident(name)
        return f"{null_of(self.con, name)} AS {ident(name)}"


def null_of(con: duckdb.DuckDBPyConnection, name: str) -> str:
    """A typed NULL for a column of the events schema (older segments lack newer columns)."""
    from evolog.eventlog.sealed import SCHEMA

    typ = con.from_arrow(SCHEMA.empty_table().select([name])).types[0]
    return f"NULL::{typ}"
