"""The viewer's routes under ``/ui``, with the server's own auth.

The frame and its two static files carry no data and are open, so a browser can load them
without a token; every view is a ``read`` route and every action a ``write`` route, called
by ui.js with the bearer token the page was opened with (kept in the URL's fragment, which
never reaches a server or a Referer). Views render on a worker thread from the log as of the
chosen seq, so the same seq always gives the same page.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from anyio import to_thread
from starlette.responses import Response
from starlette.routing import Route

from evolog.server import AppState, Problem, endpoint, json_response, read_body

from . import _actions
from ._page import HEADERS, STATIC, VIEWS, shell, static_file
from ._params import Filters, parse

if TYPE_CHECKING:
    from starlette.requests import Request

    from evolog.projections import LedgerView

PREFIX = "/ui"


def _html(body: str, status: int = 200) -> Response:
    return Response(body, status, HEADERS, media_type="text/html; charset=utf-8")


@endpoint("open", "ui")
async def page(request: Request, state: AppState) -> Response:
    """The frame (no data; the views are fetched by ui.js)."""
    return _html(shell())


@endpoint("open", "ui_static")
async def static(request: Request, state: AppState) -> Response:
    name = request.path_params["name"]
    if name not in STATIC:
        raise Problem(
            404, f"name: expected one of {', '.join(sorted(STATIC))}; got {name!r}", "name"
        )
    headers = {**HEADERS, "Cache-Control": "no-cache"}
    return Response(static_file(name), 200, headers, media_type=STATIC[name])


def render(state: AppState, name: str, f: Filters) -> tuple[str, int, int]:
    """The view's HTML, the seq it shows and the log's head."""
    from evolog.projections import Projections

    root = state.store.paths.root
    head = state.store.head_seq()
    proj = Projections(root)
    con = proj.connect(as_of=f.as_of, as_of_ts=f.at, views={"events"})
    try:
        row = con.execute("SELECT max(seq), max(epoch_us(ts)) FROM events").fetchone()
        seq, last_ts = (int(row[0] or 0), row[1]) if row else (0, None)
        if name == "timeline":
            from ._timeline import steering, timeline

            body = timeline(con, f, seq, lambda ids: _credit(root, seq, ids)) + steering(con)
        elif name == "memory":
            body = _memory(state, con, seq, head, f)
        elif name == "survival":
            from ._survival import survival

            view = ledger_at(root, seq)
            body = survival(view, view)
        else:
            from ._survival import edges

            body = edges(proj.edges(as_of=seq, now=last_ts or None))
    finally:
        con.close()
    return body, seq, head


_LEDGERS: dict[tuple[str, int], LedgerView] = {}
_LEDGERS_LOCK = threading.Lock()
_LEDGERS_KEPT = 4


def ledger_at(root: str, seq: int) -> LedgerView:
    """The ledger as of ``seq`` with every entry's history. The last few are kept: the log
    as of a seq never changes, and each page at that seq (the timeline's credit, survival,
    memory) reads the same one."""
    from evolog.projections import ledger

    key = (root, seq)
    with _LEDGERS_LOCK:
        view = _LEDGERS.get(key)
    if view is None:
        view = ledger(root, seq, history=True)
        with _LEDGERS_LOCK:
            _LEDGERS[key] = view
            while len(_LEDGERS) > _LEDGERS_KEPT:
                _LEDGERS.pop(next(iter(_LEDGERS)))
    return view


def _credit(root: Any, seq: int, ids: list[str]) -> dict[str, list[tuple[Any, ...]]]:
    view = ledger_at(root, seq)
    out: dict[str, list[tuple[Any, ...]]] = {}
    for i in ids:
        e = view.entry(i)
        if e is not None:
            out[i] = [(n.seq, n.what, n.amount, n.energy) for n in e.history or []]
    return out


def _memory(state: AppState, con: Any, seq: int, head: int, f: Filters) -> str:
    from evolog import recall

    from ._memory import fold_as_of, memory, recalled

    view = ledger_at(state.store.paths.root, seq)
    if seq >= head:

        def run(log: Any, items: Any) -> str:
            with log.snapshot() as snap:
                fold = items.guarded(lambda: items.refresh(snap, log))
            found = recall(log, items, f.q, record=False) if f.q else None
            return memory(con, fold, view, recalled(found, f.q))

        out: str = state.store.with_items(run)
        return out
    note = (
        recalled(None, "")
        if not f.q
        else (
            '<p class="meta">recall answers for the log as it is now: clear "as of" to ask it</p>'
        )
    )
    return memory(con, fold_as_of(state.store.reader, seq), view, note)


@endpoint("read", "ui_view")
async def view(request: Request, state: AppState) -> Response:
    """One view as an HTML fragment (``as_of``/``at``, ``agent``, ``session``, ``since``,
    ``until``, ``q``, ``limit``)."""
    name = request.path_params["name"]
    if name not in VIEWS:
        raise Problem(404, f"view: expected one of {', '.join(VIEWS)}; got {name!r}", "view")
    f = parse(request.query_params)
    started, cpu = time.perf_counter(), time.process_time()
    body, seq, head = await to_thread.run_sync(render, state, name, f)
    took, cpu = time.perf_counter() - started, time.process_time() - cpu
    frame = f'<div class="view" data-view="{name}" data-seq="{seq}" data-head="{head}">{body}</div>'
    response = _html(frame)
    # cpu: the whole process's CPU time meanwhile (DuckDB's threads included), which a
    # shared machine's load inflates less than the wall time
    response.headers["Server-Timing"] = f"render;dur={took * 1000:.1f}, cpu;dur={cpu * 1000:.1f}"
    response.headers["X-Evolog-Seq"] = str(seq)
    response.headers["X-Evolog-Head-Seq"] = str(head)
    return response


@endpoint("write", "ui_action")
async def action(request: Request, state: AppState) -> Response:
    """Steer: one action as an event (``op``: edit, forget, pin, retract, undo, unpin)."""
    a = _actions.decode(await read_body(request, 1 << 20))
    event = await to_thread.run_sync(_actions.prepare, state, a)
    if event is None:
        ids = await to_thread.run_sync(_actions.undo, state, a.cycle)
        return json_response({"op": a.op, "cycle": a.cycle, "ids": ids})
    (receipt,) = await state.store.committer.submit([event], "")
    return json_response({"op": a.op, "seq": receipt.seq, "id": receipt.id})


def routes() -> list[Route]:
    """The viewer's routes, to add to a server's route table."""
    return [
        Route(PREFIX, page, methods=["GET"]),
        Route(PREFIX + "/", page, methods=["GET"]),
        Route(PREFIX + "/static/{name}", static, methods=["GET"]),
        Route(PREFIX + "/view/{name}", view, methods=["GET"]),
        Route(PREFIX + "/action", action, methods=["POST"]),
    ]


__all__ = ["PREFIX", "render", "routes"]
