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

from ._config import ServerConfig, Tokens, check_bind, is_loopback, load_tokens
from ._errors import ConfigError, Problem, ServerError

if TYPE_CHECKING:
    from ._app import create_app
    from ._run import serve

__all__ = [
    "ConfigError",
    "Problem",
    "ServerConfig",
    "ServerError",
    "Tokens",
    "check_bind",
    "create_app",
    "is_loopback",
    "load_tokens",
    "serve",
]


__getattr__, __dir__ = lazy_exports(__name__, {"._app": "create_app", "._run": "serve"}, globals())
