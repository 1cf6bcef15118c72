"""What every route shares: the application state, the endpoint wrapper (auth, errors,
metrics) and JSON responses."""

from __future__ import annotations

import re
import sys
import time
import traceback
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import msgspec
from starlette.responses import Response

from ._auth import Need, authorize
from ._errors import Problem

if TYPE_CHECKING:
    from starlette.requests import Request

    from ._config import ServerConfig
    from ._metrics import Metrics
    from ._store import ServerStore

_encoder = msgspec.json.Encoder()
_LEADING_FIELD = re.compile(r"^([A-Za-z_][\w.\[\]-]*): ")


class AppState:
    """What the routes reach through ``request.app.state.evolog``."""

    def __init__(self, config: ServerConfig, store: ServerStore, metrics: Metrics) -> None:
        self.config = config
        self.store = store
        self.metrics = metrics
        #: The SQL queries' worker threads (``config.sql.concurrency``), made on first use
        #: inside the event loop.
        self.sql_limiter: Any = None
        #: The query processes user SQL runs in (a ``SqlPool``), started with the app or on
        #: first use.
        self.sql_pool: Any = None


def json_response(obj: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(_encoder.encode(obj), status, headers, media_type="application/json")


def error_response(problem: Problem, detail: bool = False) -> Response:
    """The JSON error; ``detail`` adds FastAPI's ``detail`` key (for the ``/cte`` routes,
    whose reference clients read it)."""
    headers = {"WWW-Authenticate": "Bearer"} if problem.status == 401 else None
    body = problem.body()
    if detail:
        body = {"detail": problem.message, **body}
    return json_response(body, problem.status, headers)


def problem_of(exc: BaseException, field: str | None = None) -> Problem:
    """The HTTP answer to an error from the layers below (never a raw traceback)."""
    from evolog import eventlog
    from evolog.advice import AdviceError
    from evolog.projections import (
        EngineError,
        ProjectionError,
        QueryLimitError,
        RefusedQueryError,
    )

    if isinstance(exc, Problem):
        return exc
    message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    m = _LEADING_FIELD.match(message)
    named = m.group(1) if m else field
    if isinstance(exc, eventlog.EventTooLargeError):
        return Problem(413, message, exc.field or named)
    if isinstance(exc, eventlog.InvalidEventError):
        return Problem(422, message, exc.field or named)
    if isinstance(exc, (eventlog.LockTimeoutError, eventlog.ClosedError)):
        return Problem(503, message, None)
    if isinstance(exc, eventlog.StorageError):
        return Problem(507, f"the store could not be written: {message}", None)
    if isinstance(exc, RefusedQueryError):
        return Problem(403, message, field or named)
    if isinstance(exc, QueryLimitError):
        # time and cancel: 504 (the server gave up on it); memory, size: 413 (too large)
        return Problem(504 if exc.kind in ("time", "cancel") else 413, message, "query")
    if isinstance(exc, ProjectionError) and not isinstance(exc, EngineError):
        return Problem(400, message, named or field)
    if isinstance(exc, AdviceError) and isinstance(exc, ValueError):
        return Problem(422, message, named)
    if isinstance(exc, (eventlog.EventLogError, ProjectionError, AdviceError)):
        return Problem(500, f"{type(exc).__name__}: {message}", None)
    traceback.print_exception(exc, file=sys.stderr)
    return Problem(500, f"internal error ({type(exc).__name__}); see the server's log", None)


Handler = Callable[["Request", AppState], Awaitable[Response]]


def endpoint(
    need: Need, name: str, *, detail: bool = False
) -> Callable[[Handler], Callable[[Request], Awaitable[Response]]]:
    """Wrap a route: check the caller's scope, turn every error into a JSON answer, count it."""

    def wrap(func: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def run(request: Request) -> Response:
            state: AppState = request.app.state.evolog
            started = time.perf_counter()
            try:
                authorize(state.config, need, request.headers)
                response = await func(request, state)
            except Exception as exc:
                response = error_response(problem_of(exc), detail)
            state.metrics.observe(name, response.status_code, time.perf_counter() - started)
            return response

        run.__name__ = func.__name__
        run.__doc__ = func.__doc__
        return run

    return wrap


_INTEGER = re.compile(r"-?[0-9]{1,19}")
#: What a boolean query parameter may say (any case), and nothing else: ``follow=maybe`` was
#: once read as false, silently.
BOOLEANS = {"true": True, "1": True, "false": False, "0": False}


def query_int(request: Request, name: str, default: int, low: int = 0, high: int = 1 << 62) -> int:
    """An integer query parameter within [low, high], or a 422 naming it.

    Only ASCII digits with an optional ``-``: Python's ``int`` would also take `` 5``,
    ``+5``, ``1_000`` and other scripts' digits, which no client means as an integer."""
    text = request.query_params.get(name)
    if text is None or text == "":
        return default
    if not (text.isascii() and _INTEGER.fullmatch(text)):
        raise Problem(422, f"{name}: expected an integer; got {text!r}", name)
    value = int(text)
    if not low <= value <= high:
        raise Problem(422, f"{name}: expected an integer in [{low}, {high}]; got {value}", name)
    return value


def query_bool(request: Request, name: str, default: bool = False) -> bool:
    """A boolean query parameter: one of :data:`BOOLEANS` (any case), or a 400 naming it."""
    text = request.query_params.get(name)
    if text is None:
        return default
    value = BOOLEANS.get(text.lower())
    if value is None:
        raise Problem(400, f"{name}: expected true, false, 1 or 0; got {text!r}", name)
    return value
