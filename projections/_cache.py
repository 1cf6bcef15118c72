"""The edge checkpoint: state tables in a DuckDB file under ``<store>/cache/projections/``.

The file is a cache: deleting it changes no answer (it is rebuilt from the log on demand),
and a file that is unreadable, from another DuckDB version, built for other half-lives or
for another log is rebuilt silently. A refresh applies only the events with a seq above the
checkpoint's. ``meta`` records that seq and the ids of the events at seq 1 and at that seq,
which identify the log the state was built from, with the segment files that held them
(segments are immutable and their names random, so an unchanged file name proves an
unchanged id without reading the file).

A DuckDB file was chosen over Parquet because a refresh rewrites only the rows it changes
(about 1e3 edges after 1e4 events) instead of the whole state; see
bench/RESULTS.md. Refreshes are serialised by an ``flock`` on a lock file next to
the database: DuckDB itself lets only one process open the file for writing.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from dataclasses import dataclass

import duckdb
from evolog.eventlog import Snapshot

from ._errors import EngineError
from ._source import Bounds, EventScan, engine_errors, sql_string, workspace
from .edges._state import HalfLives, apply_events, create_state

#: 2: event times clamped to the range the log accepts (see evolog.projections.edges._state).
FORMAT = 2
#: Fold the cache's WAL into the file past this size: replaying it costs every attach.
WAL_CHECKPOINT_BYTES = 256 << 10
_META_DDL = """CREATE OR REPLACE TABLE meta (format INTEGER, edge_us BIGINT, gene_us BIGINT,
    applied_seq BIGINT, first_id VARCHAR, first_file VARCHAR, applied_id VARCHAR,
    applied_file VARCHAR)"""
_STATE_TABLES = ("edge_totals", "edge_buckets", "gene_buckets")


@dataclass(frozen=True, slots=True)
class Refresh:
    """What a refresh did: the seq range it applied and whether it started from scratch."""

    from_seq: int
    to_seq: int
    rebuilt: bool


@dataclass(frozen=True, slots=True)
class _Mark:
    """The id of the event at one seq, and the segment file that holds it ('' = the WAL)."""

    seq: int
    id: str
    file: str


class EdgeCache:
    """The checkpoint of one store for one pair of half-lives."""

    def __init__(self, cache_dir: str, hl: HalfLives) -> None:
        self.dir = os.path.join(cache_dir, "projections")
        self.path = os.path.join(self.dir, f"edges-{hl.edge_us}-{hl.gene_us}.duckdb")
        self.hl = hl
        self._first: _Mark | None = None  # the checkpoint's mark of seq 1, once read

    @contextlib.contextmanager
    def refreshed(self, snap: Snapshot) -> Iterator[tuple[duckdb.DuckDBPyConnection, Refresh]]:
        """A cursor whose state tables hold exactly the snapshot's events."""
        try:
            os.makedirs(self.dir, exist_ok=True)
            lock_fd = os.open(self.path + ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise EngineError(f"{self.dir}: cannot create the edge cache: {exc}") from None
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX)
            with contextlib.ExitStack() as stack:
                try:
                    con = stack.enter_context(workspace(self.path))
                except EngineError:
                    # A file from another DuckDB version, or a torn one: it is only a cache.
                    self.delete()
                    con = stack.enter_context(workspace(self.path))
                yield con, self._refresh(con, snap)
        finally:
            os.close(lock_fd)  # closing the descriptor releases the flock

    def delete(self) -> None:
        """Remove the database files (not the lock file, which other processes may hold)."""
        for suffix in ("", ".wal"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path + suffix)

    def _refresh(self, con: duckdb.DuckDBPyConnection, snap: Snapshot) -> Refresh:
        scan = EventScan(con, snap, Bounds(), narrow=True)
        head = scan.head
        with engine_errors(f"{self.path}: refreshing the edge cache"):
            applied = self._valid_applied_seq(con, scan)
            if applied == head:
                return Refresh(head, head, False)
            con.begin()
            try:
                if applied is None:
                    for table in _STATE_TABLES:
                        con.execute(f"DROP TABLE IF EXISTS {table}")
                    create_state(con)
                apply_events(con, scan, applied or 0, self.hl, fresh=applied is None)
                first, last = _mark(scan, 1, self._first), _mark(scan, head, None)
                values = [FORMAT, self.hl.edge_us, self.hl.gene_us, head]
                marks = [first.id, first.file, last.id, last.file]
                row = ", ".join([*map(str, values), *map(sql_string, marks)])
                con.execute(f"{_META_DDL}; INSERT INTO meta VALUES ({row})")
                con.commit()
            except BaseException:
                con.rollback()
                raise
            if _size(self.path + ".wal") > WAL_CHECKPOINT_BYTES:
                con.execute("CHECKPOINT")
        return Refresh(applied or 0, head, applied is None)

    def _valid_applied_seq(self, con: duckdb.DuckDBPyConnection, scan: EventScan) -> int | None:
        """The checkpoint's seq if it belongs to this log and these half-lives, else None."""
        try:
            # One round trip; a missing state table fails the bind.
            tables = ", ".join(_STATE_TABLES)
            rows = con.sql(
                f"SELECT m.* FROM meta m LEFT JOIN (SELECT 1 FROM {tables} LIMIT 0) ON true"
            ).fetchall()
        except duckdb.CatalogException:
            return None
        if len(rows) != 1:
            return None
        fmt, edge_us, gene_us, applied, first_id, first_file, applied_id, applied_file = rows[0]
        if (fmt, edge_us, gene_us) != (FORMAT, self.hl.edge_us, self.hl.gene_us):
            return None
        if applied > scan.head:
            return None
        self._first = _Mark(1, first_id, first_file)
        for mark in (self._first, _Mark(applied, applied_id, applied_file)):
            if mark.seq and _mark(scan, mark.seq, mark).id != mark.id:
                return None
        return int(applied)


def _mark(scan: EventScan, seq: int, known: _Mark | None) -> _Mark:
    """The id at ``seq``; read only if ``known`` names another file than the one holding it."""
    if seq <= 0 or seq > scan.head:
        return _Mark(seq, "", "")
    for info in scan.snap.segments:
        if info.first_seq <= seq <= info.last_seq:
            if known is not None and known.file == info.file:
                return known  # segments are immutable: same file, same id
            rows = scan.con.sql(f"SELECT id FROM {scan.sql(seq - 1, seq)}").fetchall()
            return _Mark(seq, str(rows[0][0]) if rows else "", info.file)
    return _Mark(seq, scan.tail_id(seq), "")


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
