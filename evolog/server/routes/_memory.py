"""``/v1/remember``, ``/v1/recall`` and ``/v1/feedback``: memory items, as ``evolog remember``,
``recall`` and ``feedback`` give them (one warm item index per server)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec
from anyio import to_thread
from starlette.responses import Response

from .._auth import authorize
from .._body import decode, read_body
from .._http import AppState, endpoint, json_response
from .._types import FeedbackRequest, RecallRequest, RememberRequest

if TYPE_CHECKING:
    from starlette.requests import Request

BODY_LIMIT = 1 << 20


def remember_json(state: AppState, req: RememberRequest) -> dict[str, Any]:
    from evolog import remember

    done = state.store.with_items(
        lambda log, items: remember(
            log, items, req.branch, req.text, req.tags, kind=req.kind, author=req.author
        )
    )
    out: dict[str, Any] = msgspec.to_builtins(done)
    return out


def recall_json(state: AppState, req: RecallRequest) -> dict[str, Any]:
    from evolog import recall

    def run(log: Any, items: Any) -> Any:
        return recall(
            log, items, req.query, budget_chars=req.budget_chars, top_n=req.top_n,
            threshold=req.threshold, branches=req.branches, include_dead=req.include_dead,
            action_id=req.action_id, record=req.record, signals=req.signals,
        )  # fmt: skip

    out: dict[str, Any] = msgspec.to_builtins(state.store.with_items(run))
    return out


def feedback_json(state: AppState, req: FeedbackRequest) -> dict[str, Any]:
    from evolog import feedback

    seq = state.store.with_items(
        lambda log, items: feedback(
            log, items, req.item, req.verdict, req.note, action_id=req.action_id
        )
    )
    return {"seq": seq, "item": req.item, "verdict": req.verdict}


@endpoint("write", "remember")
async def remember(request: Request, state: AppState) -> Response:
    """Write a note to a branch; a near-copy supersedes its original."""
    req = decode(await read_body(request, BODY_LIMIT), RememberRequest)
    return json_response(await to_thread.run_sync(remember_json, state, req))


@endpoint("read", "recall")
async def recall(request: Request, state: AppState) -> Response:
    """The block to inject for a query and the scored items behind it."""
    req = decode(await read_body(request, BODY_LIMIT), RecallRequest)
    if req.record:  # the recall event is a write
        authorize(state.config, "write", request.headers)
    return json_response(await to_thread.run_sync(recall_json, state, req))


@endpoint("write", "feedback")
async def feedback(request: Request, state: AppState) -> Response:
    """A verdict on a memory item: helpful, harmful or neutral."""
    req = decode(await read_body(request, BODY_LIMIT), FeedbackRequest)
    return json_response(await to_thread.run_sync(feedback_json, state, req))


def recalled_items(state: AppState, action_id: str) -> list[str]:
    """The items recalled for ``action_id`` (its ``recall`` events), first seen first."""
    from evolog.projections import Projections

    con = Projections(state.store.paths.root).connect()
    try:
        rows = con.sql(
            "SELECT items FROM recalls WHERE action_id = ? ORDER BY seq", params=[action_id]
        ).fetchall()
    finally:
        con.close()
    return list(dict.fromkeys(i for (items,) in rows for i in items or ()))


def fetch_json(
    state: AppState, ids: list[str], action_id: str, via: str, record: bool = True
) -> dict[str, Any]:
    """Items' details by the ids a recall block shows, recorded as one ``fetched`` event.

    Over MCP without an ``action_id``, the fetch serves the only open Claude Code attempt of
    the server's working directory (as ``record_outcome`` joins it), so the hook's outcome
    credits what the agent fetched."""
    import os

    from evolog import fetch

    if not action_id and via == "mcp":
        from evolog.hook import open_attempt

        action_id = open_attempt(state.store.paths.root, os.getcwd())
    return state.store.with_items(
        lambda log, items: fetch(
            log, items, ids, action_id=action_id, via=via, record=record,
            envelope={"agent": via},
        )
    )  # fmt: skip


@endpoint("read", "memory_get")
async def memory_get(request: Request, state: AppState) -> Response:
    """An item's details by the id a recall block shows (``record=false``: not recorded;
    recorded, it is a write)."""
    from evolog import UnknownItemError

    from .._errors import Problem
    from .._http import query_bool

    record = query_bool(request, "record", True)
    if record:
        authorize(state.config, "write", request.headers)
    action_id = request.query_params.get("action_id", "")
    item_id = request.path_params["item_id"]
    try:
        out = await to_thread.run_sync(fetch_json, state, [item_id], action_id, "http", record)
    except UnknownItemError as exc:
        raise Problem(404, str(exc).splitlines()[0], "ids") from None
    return json_response(out)
