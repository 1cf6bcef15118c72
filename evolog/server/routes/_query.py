"""The read side of ``/v1``: SQL, edges, advice, routing, ledger, stats and verify.

Every query runs on a worker thread, against its own snapshot of the log: a slow query
never holds up appends or other readers. SQL goes through the projections' sandbox exactly
as ``evolog sql`` does (one read-only statement, on a DuckDB with no file system at all),
within the server's :class:`~evolog.server._config.SqlLimits`: a time limit (and a stop
when the client goes away), DuckDB memory and threads, a streamed result that stops at
``max_rows``, and a few worker threads of its own, so that hostile queries queue or are
refused (503) instead of taking the threads every other route needs.
"""

from __future__ import annotations

import contextlib
import io
import os
import threading
from typing import TYPE_CHECKING, Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import msgspec
from anyio import to_thread
from starlette.responses import Response

from .._body import decode, read_body
from .._errors import Problem
from .._http import AppState, endpoint, json_response, problem_of, query_int
from .._types import AdviseRequest, EdgesRequest, RouteRequest, SqlRequest, SqlResponse

if TYPE_CHECKING:
    import pyarrow as pa
    from starlette.requests import Request

ARROW_STREAM = "application/vnd.apache.arrow.stream"
#: Query bodies are small; this is far more than any needs.
QUERY_BODY_LIMIT = 1 << 20


def _time(value: int | str | None, name: str) -> int | None:
    from evolog.eventlog import parse_ts

    return None if value is None else parse_ts(value, name)


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    from evolog.projections import py_rows

    return py_rows(table)


# -- SQL ---------------------------------------------------------------------------------------
def run_sql(state: AppState, req: SqlRequest, cancel: Any = None) -> tuple[bytes, str]:
    """One query within the server's limits (on the calling thread): body, media type."""
    from evolog.projections import QueryLimits

    bounds = state.config.sql
    limits = QueryLimits(
        timeout=bounds.timeout,
        memory_mb=bounds.memory_mb,
        threads=bounds.threads,
        max_rows=req.max_rows + 1,  # one more than returned: whether it was truncated
        max_bytes=bounds.max_bytes,
    )
    # In a query process of its own, whose memory the OS caps: DuckDB's memory_limit does
    # not count what a SELECT list builds, and such a query must not take the server down.
    table = sql_pool(state).run(
        state.store.paths.root,
        req.query,
        as_of=req.as_of,
        as_of_ts=_time(req.as_of_ts, "as_of_ts"),
        now=_time(req.now, "now"),
        limits=limits,
        cancel=cancel,
    )
    truncated = table.num_rows > req.max_rows
    if truncated:
        table = table.slice(0, req.max_rows)
    if req.format == "arrow":
        import pyarrow as pa

        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        return sink.getvalue().to_pybytes(), ARROW_STREAM
    if req.format == "csv":
        import csv

        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow(table.column_names)
        for row in _rows(table):
            w.writerow(_csv_cell(v) for v in row.values())
        return out.getvalue().encode(), "text/csv; charset=utf-8"
    body = SqlResponse(table.column_names, _rows(table), table.num_rows, truncated)
    return msgspec.json.encode(body), "application/json"


_POOL_LOCK = threading.Lock()


def sql_pool(state: AppState) -> Any:
    """The state's query processes, started on first use if the app has not yet."""
    with _POOL_LOCK:
        if state.sql_pool is None:
            from evolog.projections import SqlPool

            bounds = state.config.sql
            state.sql_pool = SqlPool(bounds.concurrency, bounds.memory_mb, bounds.max_bytes)
        return state.sql_pool


def close_sql_pool(state: AppState) -> None:
    with _POOL_LOCK:
        pool, state.sql_pool = state.sql_pool, None
    if pool is not None:
        pool.close()


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, dict)):
        return msgspec.json.encode(value).decode()
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


async def sql_result(
    state: AppState, req: SqlRequest, request: Request | None = None
) -> tuple[bytes, str]:
    """Run ``req`` on a SQL thread once one of ``--sql-concurrency`` is free, or refuse it
    (503) when they are all busy and ``--sql-queue`` queries already wait. The query is
    stopped when the task is cancelled, and when ``request``'s client disconnects."""
    from evolog.projections import Cancel

    limiter = _limiter(state)
    stats = limiter.statistics()
    if (
        stats.borrowed_tokens >= limiter.total_tokens
        and stats.tasks_waiting >= state.config.sql.queue
    ):
        raise Problem(
            503,
            f"the server is running {stats.borrowed_tokens} SQL queries and {stats.tasks_waiting} "
            "more are waiting (its --sql-concurrency and --sql-queue); retry later",
            None,
        )
    cancel = Cancel()
    finished = False

    async def watch() -> None:
        try:
            if request is None:
                await anyio.sleep_forever()
            else:
                while (await request.receive())["type"] != "http.disconnect":
                    pass
                cancel.cancel("the client went away; the query was stopped")
        except anyio.get_cancelled_exc_class():
            if not finished:  # cancelled while the query runs (a shutdown, an MCP cancel)
                cancel.cancel("the query was cancelled")
            raise

    outcome: tuple[bytes, str] | BaseException
    async with limiter, anyio.create_task_group() as tg:
        tg.start_soon(watch)
        try:
            outcome = await _in_sql_thread(run_sql, state, req, cancel)
        finally:
            finished = True
            tg.cancel_scope.cancel()
    if isinstance(outcome, BaseException):  # raised here: out of the group, not wrapped in one
        raise outcome
    return outcome


async def _in_sql_thread(func: Any, *args: Any) -> Any:
    """``func(*args)`` on a new thread of lower CPU priority: its result, or its exception.

    A query's DuckDB threads start from it and inherit the priority, so hostile queries take
    what CPU the event loop and the other routes leave (a new thread each time: a thread's
    priority cannot be raised back without privileges, so pool threads are not lowered).
    """
    token = anyio.lowlevel.current_token()
    done = anyio.Event()
    box: list[Any] = []

    def target() -> None:
        _lower_priority()
        try:
            box.append(func(*args))
        except BaseException as exc:
            box.append(exc)
        finally:
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits
                anyio.from_thread.run_sync(done.set, token=token)

    threading.Thread(target=target, name="evolog-sql", daemon=True).start()
    # Shielded: a cancelled caller has interrupted the query (watch), which returns at once.
    with anyio.CancelScope(shield=True):
        await done.wait()
    return box[0]


def _lower_priority() -> None:
    with contextlib.suppress(OSError, AttributeError):  # not on every platform
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + 10))


def _limiter(state: AppState) -> anyio.CapacityLimiter:
    if state.sql_limiter is None:
        state.sql_limiter = anyio.CapacityLimiter(state.config.sql.concurrency)
    limiter: anyio.CapacityLimiter = state.sql_limiter
    return limiter


@endpoint("read", "sql")
async def sql(request: Request, state: AppState) -> Response:
    """One read-only SQL query; JSON, CSV or Arrow IPC (``format``)."""
    req = decode(await read_body(request, QUERY_BODY_LIMIT), SqlRequest)
    try:
        body, media = await sql_result(state, req, request)
    except Exception as exc:
        raise problem_of(exc, "query") from None
    return Response(body, 200, media_type=media)


# -- edges, advice, route --------------------------------------------------------------------
def _run_edges(state: AppState, req: EdgesRequest) -> list[dict[str, Any]]:
    from evolog.projections import Projections

    proj = Projections(state.store.paths.root)
    now = _time(req.now, "now")
    if req.priors:
        table = proj.gene_priors(
            genes=req.genes, as_of=req.as_of, now=now, mode=req.mode,
            gene_half_life_days=req.gene_half_life_days,
        )  # fmt: skip
    else:
        table = proj.edges(
            signals=req.signals, keys=req.keys, genes=req.genes, as_of=req.as_of, now=now,
            mode=req.mode, half_life_days=req.half_life_days,
            gene_half_life_days=req.gene_half_life_days,
        )  # fmt: skip
    return _rows(table)


@endpoint("read", "edges")
async def edges(request: Request, state: AppState) -> Response:
    """Edge stats per (signal key, gene), or gene priors."""
    req = decode(await read_body(request, QUERY_BODY_LIMIT), EdgesRequest)
    return json_response({"rows": await to_thread.run_sync(_run_edges, state, req)})


def advise_json(state: AppState, req: AdviseRequest) -> dict[str, Any]:
    def run(engine: Any) -> dict[str, Any]:
        advice = engine.advise(
            req.signals, req.genes, policy=req.policy, drift=req.driftEnabled, now=req.now,
            as_of=req.as_of, include_dead=req.include_dead,
        )  # fmt: skip
        out: dict[str, Any] = advice.to_json()
        return out

    return state.store.with_advice(run)


@endpoint("read", "advise")
async def advise(request: Request, state: AppState) -> Response:
    """Which gene to prefer for the signals, which to avoid (``evolog advise``)."""
    req = decode(await read_body(request, QUERY_BODY_LIMIT), AdviseRequest)
    return json_response(await to_thread.run_sync(advise_json, state, req))


def route_json(state: AppState, req: RouteRequest) -> dict[str, Any]:
    from evolog.advice import Router, RouterConfig

    with state.store.route_lock:
        router = Router.from_log(
            state.store.reader, config=RouterConfig(top_k=req.top_k), include_dead=req.include_dead
        )
    decision = router.route(req.task, current=req.current)
    out: dict[str, Any] = msgspec.to_builtins(decision)
    if decision.entry is not None:
        out["plan"] = msgspec.to_builtins(router.plan(decision.entry.node))
    return out


@endpoint("read", "route")
async def route(request: Request, state: AppState) -> Response:
    """Route a task: zero-shot, a memory traversal (with its plan) or a context jump."""
    req = decode(await read_body(request, QUERY_BODY_LIMIT), RouteRequest)
    return json_response(await to_thread.run_sync(route_json, state, req))


# -- ledger, stats, verify ---------------------------------------------------------------------
def _run_ledger(state: AppState, as_of: int | None, entry: str | None) -> dict[str, Any]:
    from evolog.projections import ledger

    view = ledger(state.store.paths.root, as_of, history=[entry] if entry else False)
    if entry:
        found = view.entry(entry)
        if found is None:
            raise Problem(404, f"entry: no entry {entry!r} was ever born in this log", "entry")
        return _entry(found)
    return {**view.summary(), "entries": [_entry(e) for e in view.entries()]}


def _entry(entry: Any) -> dict[str, Any]:
    out: dict[str, Any] = msgspec.to_builtins(entry)
    if out.get("history") is None:
        out.pop("history", None)
    return out


@endpoint("read", "ledger")
async def ledger(request: Request, state: AppState) -> Response:
    """The survival ledger (``as_of``; ``entry`` for one entry with its history)."""
    as_of = query_int(request, "as_of", -1)
    entry = request.query_params.get("entry") or None
    out = await to_thread.run_sync(_run_ledger, state, None if as_of < 0 else as_of, entry)
    return json_response(out)


@endpoint("read", "stats")
async def stats(request: Request, state: AppState) -> Response:
    """Counts and sizes of the store (``evolog stats``)."""
    return json_response(await to_thread.run_sync(state.store.reader.stats))


@endpoint("read", "verify")
async def verify(request: Request, state: AppState) -> Response:
    """Checksums, seq continuity and the manifest against the files (``evolog verify``)."""
    report = await to_thread.run_sync(state.store.reader.verify)
    return json_response(msgspec.to_builtins(report), 200)
