"""``/healthz``, ``/metrics`` (Prometheus text) and ``/openapi.json``."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from anyio import to_thread
from starlette.responses import Response

from .._http import AppState, endpoint, json_response
from .._types import Health

if TYPE_CHECKING:
    from starlette.requests import Request


@endpoint("open", "healthz")
async def healthz(request: Request, state: AppState) -> Response:
    """Whether the server is up, and the log's head."""
    head = await to_thread.run_sync(state.store.head_seq)
    uptime = time.time() - state.store.started
    return json_response(Health("ok", head, state.config.durability, round(uptime, 3)))


@endpoint("read", "metrics")
async def metrics(request: Request, state: AppState) -> Response:
    """Counters and gauges in Prometheus' text exposition format."""
    head = await to_thread.run_sync(state.store.head_seq)
    text = state.metrics.render(
        head, state.store.committer.groups, time.time() - state.store.started
    )
    return Response(text, 200, media_type="text/plain; version=0.0.4; charset=utf-8")


@endpoint("open", "openapi")
async def openapi(request: Request, state: AppState) -> Response:
    """This API's OpenAPI 3.1 document."""
    return json_response(request.app.state.openapi)
