"""The Starlette application: the route table, its OpenAPI document, the store's lifespan."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import anyio
from anyio import to_thread
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Route

from ._config import ServerConfig, version
from ._http import AppState
from ._metrics import Metrics
from ._openapi import Param, Spec, document
from ._store import ServerStore
from ._types import (
    AdviceResponse,
    AdviseRequest,
    AppendBatchResponse,
    DreamRequest,
    EdgesRequest,
    FeedbackRequest,
    Health,
    KgAdviceRequest,
    KgAdviceResponse,
    KgIngestRequest,
    KgIngestResponse,
    RecallRequest,
    Receipt,
    RememberRequest,
    RouteRequest,
    RowsResponse,
    SearchRequest,
    SearchResponse,
    SqlRequest,
    SqlResponse,
)
from .cte import _routes as _cte
from .cte._types import CteDream, CteRoute, CteTrace, CteTraceResponse
from .kg import _routes as _kg
from .routes import _dream as _routes_dream
from .routes import _events as _routes_events
from .routes import _memory as _routes_memory
from .routes import _ops as _routes_ops
from .routes import _query as _routes_query
from .routes import _search as _routes_search

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

_NDJSON = "application/x-ndjson"
_INT = {"type": "integer", "minimum": 0}
_HANDLERS: dict[str, Any] = {
    "healthz": _routes_ops.healthz,
    "metrics": _routes_ops.metrics,
    "openapi": _routes_ops.openapi,
    "append": _routes_events.append,
    "events": _routes_events.events,
    "sql": _routes_query.sql,
    "search": _routes_search.search,
    "edges": _routes_query.edges,
    "advise": _routes_query.advise,
    "route": _routes_query.route,
    "ledger": _routes_query.ledger,
    "stats": _routes_query.stats,
    "verify": _routes_query.verify,
    "dream": _routes_dream.dream,
    "remember": _routes_memory.remember,
    "recall": _routes_memory.recall,
    "feedback": _routes_memory.feedback,
    "memory_get": _routes_memory.memory_get,
    "kg_advice": _kg.kg_advice,
    "kg_ingest": _kg.kg_ingest,
    "cte_health": _cte.health,
    "cte_stats": _cte.stats,
    "cte_traces": _cte.traces,
    "cte_dream_run": _cte.dream_run,
    "cte_dream_stream": _cte.dream_stream,
    "cte_query": _cte.query,
    "cte_route": _cte.route,
    "cte_node": _cte.node,
    "cte_children": _cte.children,
    "cte_traverse": _cte.traverse,
    "cte_domains": _cte.domains,
    "cte_domain_dream": _cte.domain_dream,
    "cte_isa_version": _cte.isa_version,
    "cte_export": _cte.export_training_data,
}

_ID = {"type": "string"}
CTE_SPECS = (
    Spec("get", "/cte/health", "cte_health", "open", "evolving-memory: health"),
    Spec("get", "/cte/stats", "cte_stats", "read", "evolving-memory: graph counts"),
    Spec("post", "/cte/traces", "cte_traces", "write", "evolving-memory: store a trace",
         body=CteTrace, answer=CteTraceResponse),
    Spec("post", "/cte/dream/run", "cte_dream_run", "write",
         "evolving-memory: dream every undreamed trace, or one domain's", body=CteDream),
    Spec("post", "/cte/dream/stream", "cte_dream_stream", "write",
         "evolving-memory: dream with SSE progress", body=CteDream,
         answer_media=("text/event-stream",)),
    Spec("get", "/cte/query", "cte_query", "read", "evolving-memory: route a query",
         params=(Param("q", "query", _ID, "the query"),)),
    Spec("post", "/cte/route", "cte_route", "read", "evolving-memory: route (top_k honoured)",
         body=CteRoute),
    Spec("get", "/cte/nodes/{node_id}", "cte_node", "read", "evolving-memory: a node",
         params=(Param("node_id", "path", _ID, "a strategy node or step id"),)),
    Spec("get", "/cte/nodes/{node_id}/children", "cte_children", "read",
         "evolving-memory: a node's steps",
         params=(Param("node_id", "path", _ID, "a strategy node id"),)),
    Spec("get", "/cte/nodes/{node_id}/traverse", "cte_traverse", "read",
         "evolving-memory: a node's edges",
         params=(Param("node_id", "path", _ID, "a node id"),)),
    Spec("get", "/cte/domains", "cte_domains", "read", "evolving-memory: domains"),
    Spec("post", "/cte/domains/{name}/dream", "cte_domain_dream", "write",
         "evolving-memory: dream the undreamed traces of one domain",
         params=(Param("name", "path", _ID, "domain"),)),
    Spec("get", "/cte/isa/version", "cte_isa_version", "open", "evolving-memory: ISA versions"),
    Spec("get", "/cte/export/training-data", "cte_export", "read",
         "evolving-memory: chat-format JSONL, one line per action",
         params=(Param("outcome", "query", _ID, "success|failure|partial|aborted|unknown"),
                 Param("source", "query", _ID, "the trace source"),
                 Param("format", "query", _ID, "jsonl"),
                 Param("min_actions", "query", _INT, "fewest actions (1)")),
         answer_media=(_NDJSON,)),
)  # fmt: skip

SPECS = (
    Spec("get", "/healthz", "healthz", "open", "liveness and the log's head", answer=Health),
    Spec("get", "/metrics", "metrics", "read", "Prometheus metrics",
         answer_media=("text/plain",)),
    Spec("get", "/openapi.json", "openapi", "open", "this document"),
    Spec("post", "/v1/events", "append", "write",
         "append one JSON event (-> its receipt) or an NDJSON batch (atomic; -> receipts)",
         answer=AppendBatchResponse,
         body_media=("application/json", _NDJSON, "application/jsonl")),
    Spec("get", "/v1/events", "events", "read",
         "events after a seq as NDJSON, or followed live as Server-Sent Events",
         params=(Param("after", "query", _INT, "return events with seq > after (0)"),
                 Param("limit", "query", _INT, "at most this many (10000, max 100000)"),
                 Param("kinds", "query", {"type": "string"}, "comma-separated kinds"),
                 Param("follow", "query", {"type": "boolean"}, "stream as SSE"),
                 Param("Last-Event-ID", "header", _INT, "resume an SSE stream after it")),
         answer_media=(_NDJSON, "text/event-stream")),
    Spec("post", "/v1/sql", "sql", "read", "one read-only SQL query (JSON, CSV or Arrow IPC)",
         body=SqlRequest, answer=SqlResponse,
         answer_media=("application/json", "text/csv", "application/vnd.apache.arrow.stream")),
    Spec("post", "/v1/search", "search", "read",
         "events whose text contains a phrase (case-insensitive), newest first "
         "(as the MCP tool search_events)", body=SearchRequest, answer=SearchResponse),
    Spec("post", "/v1/edges", "edges", "read", "edge stats or gene priors",
         body=EdgesRequest, answer=RowsResponse),
    Spec("post", "/v1/advise", "advise", "read", "gene advice for signals",
         body=AdviseRequest, answer=AdviceResponse),
    Spec("post", "/v1/route", "route", "read", "route a task over the memory graph",
         body=RouteRequest),
    Spec("get", "/v1/ledger", "ledger", "read", "the survival ledger",
         params=(Param("as_of", "query", _INT, "as of this seq"),
                 Param("entry", "query", {"type": "string"}, "one entry, with its history"))),
    Spec("get", "/v1/stats", "stats", "read", "counts and sizes"),
    Spec("post", "/v1/verify", "verify", "read", "check the store's files"),
    Spec("post", "/v1/remember", "remember", "write", "write a memory note to a branch",
         body=RememberRequest),
    Spec("post", "/v1/recall", "recall", "read",
         "memory items for a query, within a budget (record: true needs a write token)",
         body=RecallRequest),
    Spec("post", "/v1/feedback", "feedback", "write", "a verdict on a memory item",
         body=FeedbackRequest),
    Spec("get", "/v1/memory/{item_id}", "memory_get", "read",
         "a memory item's details by the id a recall block shows, recorded as a fetched "
         "event (record=false: not recorded; recorded, it needs a write token)",
         params=(Param("item_id", "path", _ID, "an item id, short as the block shows it"),
                 Param("action_id", "query", _ID, "the attempt the fetch serves"),
                 Param("record", "query", {"type": "boolean"}, "append the event (true)"))),
    Spec("post", "/v1/dream", "dream", "write",
         "dream the undreamed traces; SSE progress with Accept: text/event-stream",
         body=DreamRequest, answer_media=("application/json", "text/event-stream")),
    Spec("post", "/kg/advice", "kg_advice", "kg", "evolver remote memory graph: advice",
         body=KgAdviceRequest, answer=KgAdviceResponse),
    Spec("post", "/kg/ingest", "kg_ingest", "kg", "evolver remote memory graph: ingest",
         body=KgIngestRequest, answer=KgIngestResponse),
    *CTE_SPECS,
)  # fmt: skip
_ = Receipt  # an append of one event answers a Receipt (documented with the batch form)


class EvologApp(Starlette):
    """Starlette, with the routes of a fixed path answered without its router.

    Starlette's middleware stack and router cost about a third of the application's time
    for a single-event append. Every route here is an :func:`~._http.endpoint`, which
    already turns each error into a JSON answer, so a request whose method and path name
    one exactly is handed to it directly; anything else (paths with parameters, HEAD, a
    wrong method, a trailing slash, MCP, the lifespan) goes through Starlette as before.
    """

    exact: dict[tuple[str, str], Any]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not scope.get("root_path"):
            handler = self.exact.get((scope["method"], scope["path"]))
            if handler is not None:
                scope["app"] = self
                response = await handler(Request(scope, receive, send))
                await response(scope, receive, send)
                return
        await super().__call__(scope, receive, send)


def _warm_sql() -> None:
    import pyarrow.dataset  # noqa: F401

    # Looking the names up loads the modules behind them.
    from evolog.projections import Projections, view_name  # noqa: F401


def create_app(config: ServerConfig, *, mcp: bool | None = None) -> Starlette:
    """The server for ``config.store`` (the store opens when the app starts)."""
    with_mcp = config.mcp if mcp is None else mcp
    store = ServerStore(config)
    state = AppState(config, store, Metrics())
    routes: list[Any] = [
        Route(s.path, _HANDLERS[s.name], methods=[s.method.upper()]) for s in SPECS
    ]
    # The viewer (evolog.ui) rides on the same auth; the worker's app is this one too.
    from evolog.ui import routes as ui_routes

    routes.extend(ui_routes())
    endpoint = None
    if with_mcp:
        from evolog.mcp import McpEndpoint, guarded

        endpoint = McpEndpoint(state)
        routes.append(Route("/mcp", guarded(state, endpoint), methods=["GET", "POST", "DELETE"]))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await store.start()
        stop = asyncio.Event()
        try:
            async with anyio.create_task_group() as tasks:
                if endpoint is not None:
                    tasks.start_soon(endpoint.run, stop)  # the SDK loads while the server answers
                # The first SQL query would import DuckDB, pyarrow's datasets and the catalog
                # on its thread, holding the GIL for long stretches while the loop waits: done
                # here, while nothing else runs yet.
                tasks.start_soon(to_thread.run_sync, _warm_sql)
                # Query processes take about a second to load DuckDB: started now, they
                # are warm when the first query comes.
                _routes_query.sql_pool(state)
                try:
                    yield
                finally:
                    stop.set()
        finally:
            _routes_query.close_sql_pool(state)
            await store.stop()

    app = EvologApp(routes=routes, lifespan=lifespan)
    app.exact = {(s.method.upper(), s.path): _HANDLERS[s.name] for s in SPECS if "{" not in s.path}
    app.state.evolog = state
    app.state.openapi = document(SPECS, version())
    return app


def asgi_app(config: ServerConfig) -> ASGIApp:
    return create_app(config)
