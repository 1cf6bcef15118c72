"""``POST /v1/dream``: dream the undreamed traces, answered as JSON or as SSE progress."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec
from anyio import to_thread
from starlette.responses import Response, StreamingResponse

from .._body import decode, read_body
from .._http import AppState, endpoint, json_response
from .._sse import Report, job_events
from .._types import DreamRequest

if TYPE_CHECKING:
    from starlette.requests import Request

    from evolog.dream import Trace


def run_dream(
    state: AppState,
    req: DreamRequest,
    report: Report | None = None,
    select: Callable[[Trace], bool] | None = None,
) -> dict[str, Any]:
    """Dream with the heuristic dreamer through the server's writer (only the traces
    ``select`` accepts, when given)."""
    from evolog.dream import DreamConfig, dream

    config = DreamConfig(
        batch_size=req.batch_size, max_traces=req.max_traces, compaction=req.compact,
        select=select,
    )  # fmt: skip

    def progress(done: int, total: int) -> None:
        if report is not None:
            report("progress", {"done": done, "total": total})

    result = dream(state.store.log, config=config, progress=progress)
    out: dict[str, Any] = msgspec.to_builtins(result)
    return out


@endpoint("write", "dream")
async def dream(request: Request, state: AppState) -> Response:
    """Dream now; with ``Accept: text/event-stream``, stream ``started``, ``progress``
    (``{done, total}`` traces) and ``completed`` (the report) or ``error``."""
    req = decode(await read_body(request, 1 << 20), DreamRequest)
    if "text/event-stream" in request.headers.get("accept", ""):
        return StreamingResponse(
            job_events(lambda report: run_dream(state, req, report)),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store"},
        )
    return json_response(await to_thread.run_sync(run_dream, state, req))
