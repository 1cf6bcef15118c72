"""Projections: state rebuilt from the event log, as of any point in its history.

* :class:`Projections` — one DuckDB connection over one snapshot of the log (sealed
  segments + WAL tail): the ``events`` view, typed views per kind, edge stats per
  (signal key, gene) with ``newest`` or ``per_event`` decay, gene priors, traces, and an
  incremental checkpoint under ``<store>/cache/`` that equals a full rebuild exactly.
* :class:`MemGraph` — the memory graph folded from dream opcode events (strategy nodes,
  ordered steps, typed edges, constraints, merges, prunes, retractions);
  :func:`cached_memgraph` and :func:`graph_views` read it from its checkpoint under
  ``<store>/cache/graph/`` (equal to a fold, without refolding).
* :func:`ledger` — the survival energy ledger, replayed on demand as of any point, with
  :func:`dead_entries` for selection pressure in advice and routing.
* Embedders and the usearch :class:`VectorIndex` over strategy nodes (a cache).

Errors::

    ProjectionError
    ├── InvalidParameterError (ValueError)   bad half-life / mode / as-of / format
    │   └── RefusedQueryError                not one read-only query, or reaches outside
    ├── QueryError (ValueError)              SQL DuckDB rejects (parse, bind, type)
    ├── QueryLimitError                      SQL stopped by a limit, or cancelled
    └── EngineError                          DuckDB or the file system failed underneath
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evolog._lazy import lazy_exports

if TYPE_CHECKING:
    from ._api import Projections
    from ._cache import Refresh
    from ._catalog import VIEW_NAMES, view_name
    from ._errors import (
        EngineError,
        InvalidParameterError,
        ProjectionError,
        QueryError,
        QueryLimitError,
        RefusedQueryError,
    )
    from ._export import FORMATS, ExportFormat
    from ._source import connect, ident, sql_string
    from ._sqlguard import Cancel, QueryLimits, check_query, outside_store, run_query, seal_off
    from ._sqlproc import SqlPool
    from ._timefmt import civil, py_rows
    from ._traces import traces_sql
    from ._usearch import usearch_index_class
    from .edges._eval import MODES, DecayMode, EdgeParams
    from .energy._cache import dead_entries, deaths
    from .energy._config import DAY_US, LedgerConfig, parse_cadence
    from .energy._ledger import ledger, replay_ledger
    from .energy._view import EntryView, HistoryNote, LedgerView
    from .energy.rules._rules import LedgerRules
    from .graph._cache import cached_memgraph, graph_views
    from .graph._embed import (
        DEFAULT_EMBEDDER,
        Embedder,
        HashingEmbedder,
        WordLlamaEmbedder,
        embedder_names,
        get_embedder,
        register_embedder,
    )
    from .graph._memgraph import MEMGRAPH_KINDS, MemGraph, load_memgraph
    from .graph._types import (
        STRUCTURAL_EDGE_TYPES,
        ConstraintView,
        CycleRecord,
        EdgeRecord,
        MarkRecord,
        StepRecord,
        StrategyNode,
        step_id,
    )
    from .graph._vectors import VectorIndex, node_texts, wanted_texts
    from .graph._views import GraphViews

# Names load on first use: ``evolog sql`` needs only the catalog, and importing the ledger,
# embedders and vector index with it would pull pyarrow.compute, pyarrow.parquet and numpy
# into every cold query (about 60 ms).
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "._api": "Projections",
        "._cache": "Refresh",
        "._catalog": "VIEW_NAMES view_name",
        ".edges._eval": "MODES DecayMode EdgeParams",
        ".graph._embed": "DEFAULT_EMBEDDER Embedder HashingEmbedder WordLlamaEmbedder "
        "embedder_names get_embedder register_embedder",
        "._errors": "EngineError InvalidParameterError ProjectionError QueryError "
        "QueryLimitError RefusedQueryError",
        "._export": "FORMATS ExportFormat",
        ".energy._ledger": "ledger replay_ledger",
        ".energy._cache": "dead_entries deaths",
        ".energy._config": "DAY_US LedgerConfig parse_cadence",
        ".energy.rules._rules": "LedgerRules",
        ".energy._view": "EntryView HistoryNote LedgerView",
        ".graph._cache": "cached_memgraph graph_views",
        ".graph._memgraph": "MEMGRAPH_KINDS MemGraph load_memgraph",
        ".graph._views": "GraphViews",
        ".graph._types": "STRUCTURAL_EDGE_TYPES ConstraintView CycleRecord EdgeRecord MarkRecord "
        "StepRecord StrategyNode step_id",
        "._sqlguard": "Cancel QueryLimits check_query outside_store run_query seal_off",
        "._traces": "traces_sql",
        ".graph._vectors": "VectorIndex node_texts wanted_texts",
        "._sqlproc": "SqlPool",
        "._timefmt": "civil py_rows",
        "._source": "connect ident sql_string",
        "._usearch": "usearch_index_class",
    },
    globals(),
)

__all__ = [
    "DAY_US",
    "DEFAULT_EMBEDDER",
    "FORMATS",
    "MEMGRAPH_KINDS",
    "MODES",
    "STRUCTURAL_EDGE_TYPES",
    "VIEW_NAMES",
    "Cancel",
    "ConstraintView",
    "CycleRecord",
    "DecayMode",
    "EdgeParams",
    "EdgeRecord",
    "Embedder",
    "EngineError",
    "EntryView",
    "ExportFormat",
    "GraphViews",
    "HashingEmbedder",
    "HistoryNote",
    "InvalidParameterError",
    "LedgerConfig",
    "LedgerRules",
    "LedgerView",
    "MarkRecord",
    "MemGraph",
    "ProjectionError",
    "Projections",
    "QueryError",
    "QueryLimitError",
    "QueryLimits",
    "Refresh",
    "RefusedQueryError",
    "SqlPool",
    "StepRecord",
    "StrategyNode",
    "VectorIndex",
    "WordLlamaEmbedder",
    "cached_memgraph",
    "check_query",
    "civil",
    "connect",
    "dead_entries",
    "deaths",
    "embedder_names",
    "get_embedder",
    "graph_views",
    "ident",
    "ledger",
    "load_memgraph",
    "node_texts",
    "outside_store",
    "parse_cadence",
    "py_rows",
    "register_embedder",
    "replay_ledger",
    "run_query",
    "seal_off",
    "sql_string",
    "step_id",
    "traces_sql",
    "usearch_index_class",
    "view_name",
    "wanted_texts",
]
