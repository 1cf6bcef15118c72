"""``/v1/events``: append one event or an NDJSON batch; read events after a seq as NDJSON, or
follow the log live with Server-Sent Events."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from anyio import to_thread
from starlette.responses import Response, StreamingResponse

from .._body import JSON_TYPES, NDJSON_TYPES, read_body
from .._errors import Problem
from .._http import AppState, endpoint, json_response, query_bool, query_int
from .._types import AppendBatchResponse, Receipt
from ._reads import events_after, parse_kinds

if TYPE_CHECKING:
    from starlette.requests import Request

    from evolog.eventlog import AnyEvent

#: Events per NDJSON answer unless ``limit`` says otherwise, and the most it may say.
DEFAULT_LIMIT = 10_000
MAX_LIMIT = 100_000
#: Decode bodies larger than this on a worker thread (the event loop keeps answering).
_THREAD_DECODE_BYTES = 256 << 10
KEEPALIVE_S = 15.0


def _decode_ndjson(body: bytes) -> list[AnyEvent]:
    from evolog.eventlog import from_json

    return [
        from_json(line, f"line {n}") for n, line in enumerate(body.split(b"\n"), 1) if line.strip()
    ]


@endpoint("write", "append")
async def append(request: Request, state: AppState) -> Response:
    """Append one JSON event (-> its receipt) or an NDJSON batch (-> all receipts, atomic)."""
    from evolog.eventlog import from_json

    body = await read_body(request, state.config.max_body, JSON_TYPES + NDJSON_TYPES)
    ctype = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    committer = state.store.committer
    if ctype in JSON_TYPES:
        if not body.strip():
            raise Problem(422, "body: expected one JSON event; got an empty body", "body")
        event = from_json(body, "body")
        (receipt,) = await committer.submit([event], "", validated=True)
        state.metrics.appended(1, receipt.duplicate)
        return json_response(Receipt(receipt.seq, receipt.id, receipt.duplicate))
    if len(body) > _THREAD_DECODE_BYTES:
        events = await to_thread.run_sync(_decode_ndjson, body)
    else:
        events = _decode_ndjson(body)
    if not events:
        raise Problem(422, "body: expected NDJSON events, one a line; got none", "body")
    receipts = await committer.submit(events, "event ", validated=True)
    dups = sum(r.duplicate for r in receipts)
    state.metrics.appended(len(receipts) - dups, dups)
    out = AppendBatchResponse(
        count=len(receipts),
        duplicates=dups,
        receipts=[Receipt(r.seq, r.id, r.duplicate) for r in receipts],
    )
    return json_response(out)


@endpoint("read", "events")
async def events(request: Request, state: AppState) -> Response:
    """Events with seq > ``after`` as NDJSON (``limit``, ``kinds``), or an SSE stream with
    ``follow=true`` or ``Accept: text/event-stream`` (resumes from ``Last-Event-ID``)."""
    after = query_int(request, "after", 0)
    kinds = parse_kinds(request.query_params.get("kinds"))
    follow = query_bool(request, "follow")
    if follow or "text/event-stream" in request.headers.get("accept", ""):
        last = request.headers.get("last-event-id")
        if last is not None:
            text = last.strip()
            # ASCII digits only: a header is decoded as Latin-1, and str.isdigit takes its
            # superscripts ("\xb2"), which int() then refuses (an internal error).
            if not (text.isascii() and text.isdigit() and int(text) < 1 << 63):
                raise Problem(422, f"Last-Event-ID: expected a seq; got {last!r}", "Last-Event-ID")
            after = max(after, int(text))
        return StreamingResponse(
            _sse(state, after, kinds),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )
    limit = query_int(request, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
    page = await to_thread.run_sync(events_after, state.store.paths, after, limit, kinds)
    headers = {"X-Evolog-Next-After": str(page.scanned), "X-Evolog-Head-Seq": str(page.head)}
    body = b"".join(line + b"\n" for _, _, line in page.events)
    return Response(body, 200, headers, media_type="application/x-ndjson")


async def _sse(state: AppState, after: int, kinds: frozenset[str] | None) -> AsyncIterator[bytes]:
    store = state.store
    state.metrics.followers += 1
    try:
        yield b"retry: 1000\n\n"
        sent = time.monotonic()
        while not store.closing.is_set():
            page = await to_thread.run_sync(events_after, store.paths, after, 1000, kinds)
            after = page.scanned
            if page.events:
                chunk = b"".join(
                    b"id: %d\nevent: %s\ndata: %s\n\n" % (seq, kind.encode(), line)
                    for seq, kind, line in page.events
                )
                yield chunk
                sent = time.monotonic()
                if page.more:
                    continue
            elif time.monotonic() - sent > KEEPALIVE_S:
                yield b": keep-alive\n\n"
                sent = time.monotonic()
            await store.changed()
    finally:
        state.metrics.followers -= 1
