"""``Projections``: the read side of one store, as of any point in its history."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import duckdb
import pyarrow as pa
from evolog.eventlog import Paths, Snapshot, StoreNotFoundError, now_us

from ._catalog import create_views
from ._errors import InvalidParameterError
from ._source import Bounds, EventScan, connect, cursor, engine_errors, workspace
from ._sqlguard import NO_LIMITS, Cancel, QueryLimits, check_query, run_query, seal_off
from ._traces import TRACE_INPUTS, traces_sql

# The edge machinery is imported by the methods that use it: a catalog query (a cold
# `evolog sql`) does not pay for it.
if TYPE_CHECKING:
    from evolog.eventlog import EventLog

    from ._cache import EdgeCache, Refresh
    from ._export import ExportFormat
    from .edges._eval import DecayMode, EdgeParams, EdgeState
    from .edges._state import Buckets

_DERIVED = ("edges", "gene_priors")


def _referenced_names(con: duckdb.DuckDBPyConnection, query: str) -> set[str]:
    """The table names a query refers to, to create only the views it needs.

    Every word of the query counts as a possible name, which creates more views, not
    fewer. Only when a word names ``edges`` or ``gene_priors``, which cost a refresh or a
    rebuild, does DuckDB's extractor decide (about 3 ms: it binds a little; a JOIN ...
    USING fails without the tables, and then the words stand).
    """
    words = set(re.findall(r"[a-z_][a-z0-9_]*", query.lower()))
    if not words & set(_DERIVED):
        return words
    try:
        return {n.lower() for n in con.get_table_names(query)}
    except duckdb.Error:
        return words


class Projections:
    """SQL, edge stats, gene priors and traces of a store; nothing here writes the log.

    ``params`` are the default edge parameters; the checkpoint under ``<store>/cache`` holds
    the per-event state for their half-lives. Every query takes ``as_of`` (a seq) and/or
    ``as_of_ts`` (event time, µs) and answers from exactly the events at or before them;
    edge queries also take other half-lives and decay modes (counterfactuals) and ``now``.
    ``cache=False`` recomputes everything from the log (the answers are identical).
    """

    def __init__(
        self,
        store: str | os.PathLike[str] | EventLog,
        *,
        params: EdgeParams | None = None,
        cache: bool = True,
    ) -> None:
        if not isinstance(store, (str, os.PathLike)):  # an EventLog (not imported to check)
            self._log: EventLog | None = store
            self.paths = store.paths
        else:
            self._log = None
            self.paths = Paths.of(store)
            if not os.path.exists(self.paths.marker):
                raise StoreNotFoundError(
                    f"{self.paths.root}: expected an evolog store; found none "
                    f"(create one with `evolog init {self.paths.root}`)"
                )
        self._edge_params = params
        self.use_cache = cache

    @property
    def params(self) -> EdgeParams:
        """The default edge parameters (half-lives, decay mode)."""
        if self._edge_params is None:
            from .edges._eval import EdgeParams

            self._edge_params = EdgeParams()
        return self._edge_params

    @params.setter
    def params(self, params: EdgeParams) -> None:
        self._edge_params = params

    # -- snapshots and connections ---------------------------------------------------------
    def snapshot(self) -> Snapshot:
        """A consistent snapshot of the log (close it when done)."""
        return self._log.snapshot() if self._log is not None else Snapshot.take(self.paths)

    def connect(
        self,
        *,
        as_of: int | None = None,
        as_of_ts: int | None = None,
        read_only: bool = True,
        views: set[str] | None = None,
    ) -> duckdb.DuckDBPyConnection:
        """A new DuckDB connection with ``events``, the typed views and ``traces``.

        ``read_only`` (the default) reads the segments through Arrow and then takes all
        file access away from DuckDB: no statement on the connection can open, create,
        change or delete any file (nor reach the network, load an extension or change a
        setting). With ``read_only=False`` it is an ordinary DuckDB connection that can do
        whatever the process can. ``views``: create only these views (and ``events``),
        as a caller that knows its queries can save binding the others. The caller closes it.
        """
        bounds = Bounds(as_of, as_of_ts)
        con = connect(catalog=True)
        try:
            with self.snapshot() as snap:
                create_views(con, EventScan(con, snap, bounds, via_arrow=read_only), views)
            if read_only:
                seal_off(con)
        except BaseException:
            con.close()
            raise
        return con

    def sql(
        self,
        query: str,
        *,
        as_of: int | None = None,
        as_of_ts: int | None = None,
        now: int | None = None,
        limits: QueryLimits = NO_LIMITS,
        cancel: Cancel | None = None,
    ) -> pa.Table:
        """Run one read-only query over the catalog (plus ``edges`` and ``gene_priors``).

        ``edges`` and ``gene_priors`` are computed only if the query names them, with the
        default parameters, at ``now`` (default: ``as_of_ts`` or the current time). The
        query runs on a connection with no file access at all (the segments are Arrow
        datasets; see :mod:`._sqlguard`), within ``limits``; ``cancel`` stops it from
        another thread.
        """
        bounds = Bounds(as_of, as_of_ts)
        con = connect(catalog=True)
        try:
            # Sealed before the query's text touches it: finding the names it refers to
            # binds it, and a table function's bind may already open files.
            seal_off(con, limits)
            check_query(query, con)
            referenced = _referenced_names(con, query)
            with self.snapshot() as snap:
                create_views(con, EventScan(con, snap, bounds, via_arrow=True), referenced)
                names = referenced & set(_DERIVED)
                if names:
                    self._register_derived(con, snap, bounds, names, now)
            return run_query(con, query, limits, cancel)
        finally:
            con.close()

    def _register_derived(
        self,
        con: duckdb.DuckDBPyConnection,
        snap: Snapshot,
        bounds: Bounds,
        names: set[str],
        now: int | None,
    ) -> None:
        from .edges._eval import evaluate
        from .edges._state import ALL_BUCKETS

        at = self._now(bounds, now)
        with self._edge_state(snap, bounds, self.params, ALL_BUCKETS) as state:
            tables = {
                "edges": evaluate(state, self.params, at),
                "gene_priors": evaluate(state, self.params, at, genes_only=True),
            }
        with engine_errors("registering edges"):
            for name in sorted(names):
                con.register(name, tables[name])

    # -- edges -------------------------------------------------------------------------------
    def edges(
        self,
        *,
        signals: Sequence[str] | None = None,
        keys: Sequence[str] | None = None,
        genes: Sequence[str] | None = None,
        as_of: int | None = None,
        as_of_ts: int | None = None,
        now: int | None = None,
        mode: DecayMode | None = None,
        half_life_days: float | None = None,
        gene_half_life_days: float | None = None,
        related: bool = False,
    ) -> pa.Table:
        """Edge stats per (signal_key, gene), sorted; see :mod:`evolog.projections.edges._eval`.

        ``signals`` selects the edges of their evolver signal key (added to ``keys``); with
        ``related``, also those of every key holding all of the signals (a key also carries an
        error's hash, a tool name...: ``test_failure,flaky`` finds ``errsig_norm:…|flaky|
        test_failure``, which the exact key never does).
        """
        params = self._params(mode, half_life_days, gene_half_life_days)
        if signals is None:
            return self._evaluate(params, as_of, as_of_ts, now, keys=keys, genes=genes)
        from evolog.eventlog.schema import compute_signal_key, normalize_signals_for_matching

        keys = [*(keys or []), compute_signal_key(list(signals))]
        if not related:
            return self._evaluate(params, as_of, as_of_ts, now, keys=keys, genes=genes)
        table = self._evaluate(params, as_of, as_of_ts, now, genes=genes)
        return _holding(table, set(normalize_signals_for_matching(list(signals))), keys)

    def gene_priors(
        self,
        *,
        genes: Sequence[str] | None = None,
        as_of: int | None = None,
        as_of_ts: int | None = None,
        now: int | None = None,
        mode: DecayMode | None = None,
        gene_half_life_days: float | None = None,
    ) -> pa.Table:
        """Per-gene stats over all signal keys (evolver's gene outcomes), sorted by gene."""
        params = self._params(mode, None, gene_half_life_days)
        return self._evaluate(params, as_of, as_of_ts, now, genes=genes, genes_only=True)

    def refresh(self) -> Refresh:
        """Bring the checkpoint up to the log's head (queries do this on their own)."""
        with self.snapshot() as snap, self._cache().refreshed(snap) as (_, done):
            return done

    def clear_cache(self) -> None:
        """Delete the checkpoint; the next query rebuilds it (answers do not change)."""
        self._cache().delete()

    def _cache(self) -> EdgeCache:
        from ._cache import EdgeCache

        return EdgeCache(self.paths.cache, self.params.half_lives)

    def _params(
        self, mode: DecayMode | None, hl: float | None, gene_hl: float | None
    ) -> EdgeParams:
        changes: dict[str, object] = {}
        if mode is not None:
            changes["mode"] = mode
        if hl is not None:
            changes["half_life_days"] = hl
        if gene_hl is not None:
            changes["gene_half_life_days"] = gene_hl
        return replace(self.params, **changes) if changes else self.params  # type: ignore[arg-type]

    def _evaluate(
        self,
        params: EdgeParams,
        as_of: int | None,
        as_of_ts: int | None,
        now: int | None,
        *,
        keys: Sequence[str] | None = None,
        genes: Sequence[str] | None = None,
        genes_only: bool = False,
    ) -> pa.Table:
        from .edges._eval import evaluate

        bounds = Bounds(as_of, as_of_ts)
        at = self._now(bounds, now)
        buckets = frozenset({"gene" if genes_only else "edge"})
        with self.snapshot() as snap, self._edge_state(snap, bounds, params, buckets) as state:
            return evaluate(state, params, at, genes_only=genes_only, keys=keys, genes=genes)

    @staticmethod
    def _now(bounds: Bounds, now: int | None) -> int:
        if now is None:
            return bounds.as_of_ts if bounds.as_of_ts is not None else now_us()
        if isinstance(now, bool) or not isinstance(now, int):
            raise InvalidParameterError(f"now: expected integer microseconds; got {now!r}")
        return now

    @contextlib.contextmanager
    def _edge_state(
        self, snap: Snapshot, bounds: Bounds, params: EdgeParams, buckets: Buckets
    ) -> Iterator[EdgeState]:
        """The edge state of ``snap`` within ``bounds``, from the checkpoint when it fits.

        The checkpoint is always at the head and built for the default half-lives; an
        older point in history, or per-event decay with other half-lives, is recomputed
        from the log in memory (it never touches the checkpoint), with only the per-event
        ``buckets`` the evaluation reads (none in ``newest`` mode).
        """
        from .edges._eval import EdgeState
        from .edges._state import part_table

        current = bounds.as_of_ts is None and (
            bounds.as_of_seq is None or bounds.as_of_seq >= snap.head_seq
        )
        fits = params.mode == "newest" or params.half_lives == self.params.half_lives
        # A store on read-only media is still queryable, just without a checkpoint.
        writable = os.access(self.paths.cache, os.W_OK)
        if self.use_cache and current and fits and writable:
            with self._cache().refreshed(snap) as (con, _):
                yield EdgeState(con)
            return
        with cursor() as con:
            needed = buckets if params.mode == "per_event" else frozenset()
            scan = EventScan(con, snap, bounds, narrow=True)
            yield EdgeState(con, part_table(con, scan, params.half_lives, needed))

    # -- traces and export -----------------------------------------------------------------
    def traces(
        self,
        *,
        as_of: int | None = None,
        as_of_ts: int | None = None,
        action_ids: Sequence[str] | None = None,
        open_only: bool = False,
        after_seq: int = 0,
    ) -> pa.Table:
        """Traces (see :mod:`evolog.projections._traces`), optionally filtered."""
        params = [list(action_ids)] if action_ids is not None else None
        sql = traces_sql(after_seq, "$1" if params else None)
        if open_only:
            sql = f"SELECT * FROM ({sql}) WHERE open ORDER BY seq"
        bounds = Bounds(as_of, as_of_ts)
        with self.snapshot() as snap, workspace() as con:
            create_views(con, EventScan(con, snap, bounds), set(TRACE_INPUTS))
            with engine_errors("reading traces"):
                return con.sql(sql, params=params).to_arrow_table()

    def export(
        self,
        directory: str | os.PathLike[str],
        fmt: ExportFormat = "parquet",
        *,
        as_of: int | None = None,
        as_of_ts: int | None = None,
        now: int | None = None,
    ) -> list[str]:
        """Write the projections to ``directory`` (see :func:`projections._export.export`)."""
        from ._export import export

        return export(self, directory, fmt, as_of=as_of, as_of_ts=as_of_ts, now=now)


def _holding(table: pa.Table, wanted: set[str], keys: list[str]) -> pa.Table:
    """The rows of ``table`` whose key is one of ``keys`` or holds every signal in ``wanted``."""
    column = table.column("signal_key").to_pylist()
    keep = [k in keys or (bool(wanted) and wanted <= set(k.split("|"))) for k in column]
    return table.filter(pa.array(keep, type=pa.bool_()))
