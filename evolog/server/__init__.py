"""evolog's server: one store for many agents, over HTTP (and MCP at ``/mcp``).

``evolog serve`` runs :func:`create_app` under uvicorn: the native API under ``/v1``,
evolver's remote memory graph under ``/kg``, ``/healthz``, ``/metrics`` and
``/openapi.json``. One writer per store (group commit across requests), readers on
snapshots. Starlette, uvicorn and the MCP SDK are an optional extra (``evolog[server]``);
neither ``import evolog`` nor the hook imports this package.

Errors::

    ServerError
    ├── ConfigError (ValueError)   cannot start as configured (public bind without token, ...)
    └── Problem                    a request answered with a JSON error (status, field)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evolog._lazy import lazy_exports

from ._config import ServerConfig, SqlLimits, Tokens, check_bind, is_loopback, load_tokens, version
from ._errors import ConfigError, Problem, ServerError

if TYPE_CHECKING:
    from ._app import create_app
    from ._auth import Need, authorize
    from ._body import read_body
    from ._http import AppState, endpoint, error_response, json_response, problem_of
    from ._metrics import Metrics
    from ._run import GRACE_S, serve
    from ._store import ServerStore
    from ._types import (
        AdviseRequest,
        DreamRequest,
        RecallRequest,
        RememberRequest,
        RouteRequest,
        SqlRequest,
    )

__all__ = [
    "GRACE_S",
    "AdviseRequest",
    "AppState",
    "ConfigError",
    "DreamRequest",
    "Metrics",
    "Need",
    "Problem",
    "RecallRequest",
    "RememberRequest",
    "RouteRequest",
    "ServerConfig",
    "ServerError",
    "ServerStore",
    "SqlLimits",
    "SqlRequest",
    "Tokens",
    "authorize",
    "check_bind",
    "create_app",
    "endpoint",
    "error_response",
    "is_loopback",
    "json_response",
    "load_tokens",
    "problem_of",
    "read_body",
    "serve",
    "version",
]


__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "._app": "create_app",
        "._run": "serve GRACE_S",
        "._types": "AdviseRequest DreamRequest RecallRequest RememberRequest RouteRequest "
        "SqlRequest",
        "._http": "AppState endpoint error_response json_response problem_of",
        "._metrics": "Metrics",
        "._auth": "Need authorize",
        "._store": "ServerStore",
        "._body": "read_body",
    },
    globals(),
)
