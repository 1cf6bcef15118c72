"""Routes compatible with evolving-memory's REST server, under ``/cte``.

Same paths and shapes as evolving-memory's (docs/reference/cte-rest.md), with its defects
fixed: a bad enum value is a 422 naming the field (not a 500), ``/route`` honours
``top_k``, ``/query`` and ``/route`` only read (evolving-memory counts an access on every
query, so a query changed what later ones saw), and dreaming streams real progress as
Server-Sent Events (``POST /cte/dream/stream``) where evolving-memory's WebSocket sends none.

Domains: a trace is in the domain named by a ``domain:NAME`` tag, else ``default`` (as are
traces not posted here). Dreaming a domain dreams only that domain's undreamed traces and
leaves the others for later (evolving-memory dreams every pending session whatever domain it
is asked for, and marks even those past its per-cycle limit as processed, so they are never
dreamed); a dream without a domain takes every undreamed trace.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import msgspec
from anyio import to_thread
from starlette.responses import Response, StreamingResponse

from .._auth import Need
from .._body import decode, read_body
from .._errors import Problem
from .._http import AppState, Handler, endpoint, json_response, query_int
from .._sse import Report, job_events
from .._types import DreamRequest
from ..routes._dream import run_dream
from ._types import CTE_AGENT, OUTCOME, CteDream, CteRoute, CteTrace, CteTraceResponse, trace_events

if TYPE_CHECKING:
    from starlette.requests import Request

    from evolog.dream import Trace

BODY_LIMIT = 4 << 20
SYSTEM_PROMPT = (
    "You are an agent acting from learned strategies: given your reasoning, produce the "
    "next action."
)
#: evolog's graph has no hierarchy levels; evolving-memory's default for a strategy.
STRATEGY_LEVEL = 3


def _cte(need: Need, name: str) -> Callable[[Handler], Callable[[Request], Awaitable[Response]]]:
    return endpoint(need, f"cte_{name}", detail=True)


@_cte("open", "health")
async def health(request: Request, state: AppState) -> Response:
    return json_response({"status": "ok"})


def _graph(state: AppState) -> Any:
    from evolog.projections import load_memgraph

    return load_memgraph(state.store.reader)


def _stats(state: AppState) -> dict[str, Any]:
    from evolog.projections import Projections

    graph = _graph(state)
    nodes = list(graph.nodes())
    row = (
        Projections(state.store.paths.root)
        .sql("SELECT count(*) AS traces, count(DISTINCT session) AS sessions FROM traces")
        .to_pylist()[0]
    )
    return {
        "parent_nodes": len(nodes),
        "child_nodes": sum(len(graph.steps(n.id)) for n in nodes),
        "edges": len(graph.edges()),
        "sessions": row["sessions"],
        "traces": row["traces"],
        "dream_cycles": len(graph.cycles()),
        "isa_version": _isa()["current"],
    }


@_cte("read", "stats")
async def stats(request: Request, state: AppState) -> Response:
    return json_response(await to_thread.run_sync(_stats, state))


@_cte("write", "traces")
async def traces(request: Request, state: AppState) -> Response:
    from evolog.eventlog import new_id

    trace = decode(await read_body(request, BODY_LIMIT), CteTrace)
    trace_id, session_id = new_id(), new_id()
    await state.store.committer.submit(trace_events(trace, trace_id, session_id), "action ")
    return json_response(CteTraceResponse(trace_id, session_id))


def _dream_json(report: dict[str, Any]) -> dict[str, Any]:
    cycles = report["cycles"]
    return {
        "journal_id": cycles[-1]["cycle"] if cycles else "",
        "traces_processed": report["traces_dreamed"],
        "nodes_created": sum(c["nodes_created"] for c in cycles),
        "nodes_merged": sum(c["nodes_merged"] for c in cycles),
        "edges_created": sum(c["links"] for c in cycles),
        "constraints_extracted": sum(c["constraints"] for c in cycles),
        "phase_log": [line for c in cycles for line in c["phase_log"]],
    }


def _dream_domain(
    state: AppState, domain: str | None, report: Report | None = None
) -> dict[str, Any]:
    """Dream the undreamed traces of ``domain`` (every one when None), as evolving-memory
    reports a dream."""
    select: Callable[[Trace], bool] | None = None
    if domain is not None:
        # Decided before the dream from the traces posted so far: one posted meanwhile
        # has no known domain and waits for the next dream.
        known = {row["attempt_id"]: _domain(row["cte"]) for row in _cte_traces(state)}

        def select(trace: Trace) -> bool:
            found = known.get(trace.id, "default" if trace.agent != CTE_AGENT else None)
            return found == domain

    return _dream_json(run_dream(state, DreamRequest(), report, select))


@_cte("write", "dream_run")
async def dream_run(request: Request, state: AppState) -> Response:
    """Dream every undreamed trace, or with ``{"domain": NAME}`` only that domain's."""
    req = decode(await read_body(request, BODY_LIMIT), CteDream)
    return json_response(await to_thread.run_sync(_dream_domain, state, req.domain))


@_cte("write", "dream_stream")
async def dream_stream(request: Request, state: AppState) -> Response:
    """SSE: ``started``, ``progress`` {done, total}, then ``completed`` or ``error``."""
    req = decode(await read_body(request, BODY_LIMIT), CteDream)

    def job(report: Report) -> dict[str, Any]:
        return {"domain": req.domain, **_dream_domain(state, req.domain, report)}

    return StreamingResponse(
        job_events(job, {"domain": req.domain}), media_type="text/event-stream"
    )


def _route(state: AppState, query: str, top_k: int, full: bool) -> dict[str, Any]:
    from evolog.advice import Router, RouterConfig

    with state.store.route_lock:
        router = Router.from_log(state.store.reader, config=RouterConfig(top_k=top_k))
    decision = router.route(query)
    out: dict[str, Any] = {
        "path": str(getattr(decision.path, "value", decision.path)),
        "reasoning": decision.reasoning,
        "confidence": decision.confidence,
    }
    entry = decision.entry
    if entry is not None:
        point: dict[str, Any] = {"node_id": entry.node, "goal": entry.goal}
        point["summary"] = entry.summary
        if full:
            point.update(similarity_score=entry.similarity, composite_score=entry.composite)
        out["entry_point"] = point
    return out


@_cte("read", "query")
async def query(request: Request, state: AppState) -> Response:
    q = request.query_params.get("q")
    if not q:
        raise Problem(422, "q: expected a query string parameter; got none", "q")
    return json_response(await to_thread.run_sync(_route, state, q, 5, True))


@_cte("read", "route")
async def route(request: Request, state: AppState) -> Response:
    req = decode(await read_body(request, BODY_LIMIT), CteRoute)
    return json_response(await to_thread.run_sync(_route, state, req.query, req.top_k, False))


def _node(state: AppState, node_id: str) -> dict[str, Any]:
    graph = _graph(state)
    node = graph.node(node_id)
    if node is not None:
        # evolving-memory's counts: the traces it was dreamed from, and outcomes since.
        s, f = graph.outcomes(node.id)
        return {
            "node_id": node.id, "type": "parent", "hierarchy_level": STRATEGY_LEVEL,
            "goal": node.goal, "summary": node.summary, "confidence": node.confidence,
            "outcome": "success" if s > f else "failure" if f > s else "unknown",
            "success_rate": s / (s + f) if s + f else 0.0, "version": node.version,
            "child_count": len(graph.steps(node.id)), "trigger_goals": list(node.trigger_goals),
            "negative_constraints": [c.description for c in graph.constraints(node.id)],
        }  # fmt: skip
    for parent in graph.nodes():
        for step in graph.steps(parent.id):
            if step.id == node_id:
                return {
                    "node_id": step.id, "type": "child", "parent_node_id": parent.id,
                    "hierarchy_level": STRATEGY_LEVEL + 1, "summary": step.action,
                    "reasoning": step.reasoning, "action": step.action, "result": step.result,
                    "step_index": step.index, "confidence": parent.confidence,
                }  # fmt: skip
    raise Problem(404, "Node not found", "node_id")


@_cte("read", "node")
async def node(request: Request, state: AppState) -> Response:
    node_id = request.path_params["node_id"]
    return json_response(await to_thread.run_sync(_node, state, node_id))


def _children(state: AppState, node_id: str) -> list[dict[str, Any]]:
    graph = _graph(state)
    parent = graph.node(node_id)
    if parent is None:
        return []
    return [
        {
            "node_id": s.id,
            "step_index": s.index,
            "summary": s.action,
            "reasoning": s.reasoning,
            "action": s.action,
            "result": s.result,
            "confidence": parent.confidence,
            "is_critical_path": s.critical,
        }
        for s in graph.steps(node_id)
    ]


@_cte("read", "children")
async def children(request: Request, state: AppState) -> Response:
    node_id = request.path_params["node_id"]
    return json_response(await to_thread.run_sync(_children, state, node_id))


def _traverse(state: AppState, node_id: str) -> dict[str, Any]:
    graph = _graph(state)
    edges = graph.edges()

    def edge(e: Any, end: str, other: str) -> dict[str, Any]:
        # evolving-memory's edge types are lower case (next_step, is_child_of, ...).
        eid = f"{e.src}->{e.dst}:{e.edge_type}"
        return {"edge_id": eid, end: other, "type": e.edge_type.lower(), "weight": e.weight}

    return {
        "node_id": node_id,
        "edges_out": [edge(e, "target", e.dst) for e in edges if e.src == node_id],
        "edges_in": [edge(e, "source", e.src) for e in edges if e.dst == node_id],
    }


@_cte("read", "traverse")
async def traverse(request: Request, state: AppState) -> Response:
    node_id = request.path_params["node_id"]
    return json_response(await to_thread.run_sync(_traverse, state, node_id))


def _cte_traces(state: AppState) -> list[dict[str, Any]]:
    """The posted traces with their CTE fields (oldest first)."""
    from evolog.projections import Projections

    proj = Projections(state.store.paths.root)
    observed = {
        r["id"]: msgspec.json.decode(r["observed"]).get("cte", {})
        for r in proj.sql(
            "SELECT id, observed FROM attempts WHERE agent = 'cte' AND observed IS NOT NULL"
        ).to_pylist()
    }
    rows = proj.traces().to_pylist()
    return [{**r, "cte": observed[r["attempt_id"]]} for r in rows if r["attempt_id"] in observed]


def _domain(cte: dict[str, Any]) -> str:
    for tag in cte.get("tags", []):
        if isinstance(tag, str) and tag.startswith("domain:") and tag[7:]:
            return tag[7:]
    return "default"


@_cte("read", "domains")
async def domains(request: Request, state: AppState) -> Response:
    rows = await to_thread.run_sync(_cte_traces, state)
    return json_response({"domains": sorted({_domain(r["cte"]) for r in rows} | {"default"})})


@_cte("write", "domain_dream")
async def domain_dream(request: Request, state: AppState) -> Response:
    """Dream the undreamed traces of one domain (the others stay undreamed)."""
    name = request.path_params["name"]
    report = await to_thread.run_sync(_dream_domain, state, name)
    keep = ("journal_id", "traces_processed", "nodes_created", "nodes_merged")
    return json_response({"domain": name, **{k: report[k] for k in keep}})


def _isa() -> dict[str, Any]:
    from evolog.dream import ISA_REGISTRY, ISA_VERSION

    return {"current": ISA_VERSION, "supported": sorted(ISA_REGISTRY.versions())}


@_cte("open", "isa_version")
async def isa_version(request: Request, state: AppState) -> Response:
    return json_response(_isa())


def _training(state: AppState, outcome: str | None, source: str | None, min_actions: int) -> bytes:
    lines: list[bytes] = []
    for trace in _cte_traces(state):
        cte = trace["cte"]
        if outcome is not None and OUTCOME.get(trace["status"] or "unknown") != outcome:
            continue
        if source is not None and cte.get("source") != source:
            continue
        steps = trace["steps"] or []
        if len(steps) < min_actions:
            continue
        for step in steps:
            if not (step["reasoning"] or "").strip() or not (step["action"] or "").strip():
                continue
            messages = [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": step["reasoning"]},
                {"role": "assistant", "content": step["action"]},
            ]
            lines.append(msgspec.json.encode({"messages": messages}) + b"\n")
    return b"".join(lines)


@_cte("read", "export")
async def export_training_data(request: Request, state: AppState) -> Response:
    from typing import get_args

    from ._types import CteOutcome, CteSource

    params = request.query_params
    outcome, source = params.get("outcome") or None, params.get("source") or None
    for name, value, allowed in (("outcome", outcome, CteOutcome), ("source", source, CteSource)):
        if value is not None and value not in get_args(allowed):
            choices = ", ".join(get_args(allowed))
            raise Problem(422, f"{name}: expected one of {choices}; got {value!r}", name)
    if params.get("format", "jsonl") != "jsonl":
        raise Problem(422, f"format: expected jsonl; got {params.get('format')!r}", "format")
    min_actions = query_int(request, "min_actions", 1)
    body = await to_thread.run_sync(_training, state, outcome, source, min_actions)
    headers = {"Content-Disposition": "attachment; filename=training_data.jsonl"}
    return Response(body, 200, headers, media_type="application/x-ndjson")
