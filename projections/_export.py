"""Exporting the projections of one snapshot as Parquet or CSV files."""

from __future__ import annotations

import contextlib
import os
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Literal, Protocol

import duckdb
from evolog.eventlog import temp_beside

from ._catalog import create_views
from ._errors import EngineError, InvalidParameterError
from ._source import Bounds, EventScan, engine_errors, ident, sql_string, workspace
from ._sqlguard import outside_store
from .edges._eval import evaluate
from .edges._state import ALL_BUCKETS

if TYPE_CHECKING:
    from evolog.eventlog import Paths, Snapshot

    from .edges._eval import EdgeParams, EdgeState
    from .edges._state import Buckets

ExportFormat = Literal["parquet", "csv"]
FORMATS: tuple[ExportFormat, ...] = ("parquet", "csv")
_OPTIONS = {"parquet": "FORMAT parquet, COMPRESSION zstd", "csv": "FORMAT csv, HEADER true"}


class Exportable(Protocol):
    """What an export reads of :class:`~evolog.projections.Projections` (a protocol, so
    that this module and the class do not import each other)."""

    @property
    def paths(self) -> Paths: ...
    @property
    def params(self) -> EdgeParams: ...
    def snapshot(self) -> Snapshot: ...
    def _now(self, bounds: Bounds, now: int | None) -> int: ...
    def _edge_state(
        self, snap: Snapshot, bounds: Bounds, params: EdgeParams, buckets: Buckets
    ) -> AbstractContextManager[EdgeState]: ...


def export(
    proj: Exportable,
    directory: str | os.PathLike[str],
    fmt: ExportFormat = "parquet",
    *,
    as_of: int | None = None,
    as_of_ts: int | None = None,
    now: int | None = None,
) -> list[str]:
    """Write ``events``, ``traces``, ``edges``, ``gene_priors`` and every typed view that
    has rows to ``directory/<name>.<fmt>``; return the paths written, in order.

    Each file is written under a temporary name and renamed, so a reader never sees half a
    file. Nested columns (lists, structs) are kept in Parquet and written as text in CSV.
    """
    if fmt not in FORMATS:
        raise InvalidParameterError(f"format: expected one of {', '.join(FORMATS)}; got {fmt!r}")
    out_dir = outside_store(proj.paths.root, directory, "export directory")
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as exc:
        raise EngineError(f"{out_dir}: cannot create the export directory: {exc}") from None
    bounds = Bounds(as_of, as_of_ts)
    at = proj._now(bounds, now)
    written: list[str] = []
    with proj.snapshot() as snap, workspace() as con:
        views = create_views(con, EventScan(con, snap, bounds))
        with proj._edge_state(snap, bounds, proj.params, ALL_BUCKETS) as state:
            edges = evaluate(state, proj.params, at)
            genes = evaluate(state, proj.params, at, genes_only=True)
        with engine_errors("registering edges for export"):
            con.register("edges", edges)
            con.register("gene_priors", genes)
        for name in ["events", "traces", "edges", "gene_priors", *views[1:-1]]:
            if name not in ("events", "traces", "edges", "gene_priors") and not _has_rows(
                con, name
            ):
                continue
            written.append(_copy(con, name, out_dir, fmt))
    return written


def _has_rows(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    return bool(con.sql(f"SELECT 1 FROM {ident(name)} LIMIT 1").fetchall())


def _copy(con: duckdb.DuckDBPyConnection, name: str, out_dir: str, fmt: ExportFormat) -> str:
    path = os.path.join(out_dir, f"{name}.{fmt}")
    tmp = temp_beside(path)
    with engine_errors(f"{path}: exporting {name}"):
        con.execute(f"COPY (SELECT * FROM {ident(name)}) TO {sql_string(tmp)} ({_OPTIONS[fmt]})")
    try:
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise EngineError(f"{path}: cannot write the export: {exc}") from None
    return path
