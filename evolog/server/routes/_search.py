"""Finding events by the text they contain: ``POST /v1/search`` and the MCP ``search_events``
tool (one function, so both answer alike)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from anyio import to_thread

from .._body import decode, read_body
from .._errors import Problem
from .._http import AppState, endpoint, json_response
from .._types import SearchRequest, SearchResponse

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from evolog.eventlog import Paths

BODY_LIMIT = 1 << 20


def search_events(
    paths: Paths, text: str, kinds: Sequence[str] | None, limit: int
) -> list[dict[str, Any]]:
    """Events whose JSON contains ``text`` (case-insensitive), newest first, null fields
    left out. Runs on a sealed-off connection: no file but the snapshot is reachable."""
    from evolog.eventlog import KINDS
    from evolog.projections import Projections, py_rows

    unknown = sorted(set(kinds or ()) - set(KINDS))
    if unknown:
        raise Problem(
            422, f"kinds: expected some of {', '.join(sorted(KINDS))}; got {unknown[0]!r}", "kinds"
        )
    where: list[str] = []
    params: list[Any] = []
    if kinds:
        where.append("list_contains(?, kind)")
        params.append(list(kinds))
    if text:
        where.append("contains(lower(CAST(to_json(e) AS VARCHAR)), ?)")
        params.append(text.lower())
    clause = f"WHERE {' AND '.join(where)}" if where else ""
    con = Projections(paths.root).connect()
    try:
        table = con.sql(
            f"SELECT * FROM events e {clause} ORDER BY seq DESC LIMIT ?", params=[*params, limit]
        ).to_arrow_table()
    finally:
        con.close()
    return [
        {k: v for k, v in row.items() if v is not None and v != [] and v != {}}
        for row in py_rows(table)
    ]


@endpoint("read", "search")
async def search(request: Request, state: AppState) -> Response:
    """``{text, kinds, limit}`` -> ``{events, count}``: events containing ``text``
    (case-insensitive), newest first."""
    req = decode(await read_body(request, BODY_LIMIT), SearchRequest)
    found = await to_thread.run_sync(
        search_events, state.store.paths, req.text, req.kinds, req.limit
    )
    return json_response(SearchResponse(found, len(found)))
