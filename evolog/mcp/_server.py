"""Building the MCP server, serving it over stdio, or mounting it at ``/mcp``."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from ._tools import register

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from evolog.server._config import ServerConfig
    from evolog.server._http import AppState

INSTRUCTIONS = (
    "evolog is this agent's memory of what it tried and how it went. Before a task, call "
    "recall (or route) and follow what applies; ask advise which strategy (gene) to use for "
    "the signals you see; after the task, call record_outcome with the ids you were given, "
    "so helpful memories are credited and harmful ones fade. remember stores a lesson."
)


def build_server(state: AppState, lifespan: Any = None) -> MCPServer:
    """An MCP server whose tools act on ``state``'s store."""
    from mcp.server.mcpserver import MCPServer

    from evolog.server._config import version

    server: MCPServer = MCPServer(
        "evolog", instructions=INSTRUCTIONS, version=version(), lifespan=lifespan,
        log_level="WARNING",
    )  # fmt: skip
    register(server, state)
    return server


def mcp_routes(state: AppState) -> tuple[MCPServer, list[Any]]:
    """The server and the Starlette routes serving it at ``/mcp`` (streamable HTTP).

    The SDK's own DNS-rebinding guard is left off: the server checks ``Host`` and bearer
    tokens itself, for every route alike (see :mod:`evolog.server._auth`).
    """
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.routing import Route

    from ._mount import guarded

    server = build_server(state)
    sub = server.streamable_http_app(
        streamable_http_path="/mcp",
        stateless_http=True,
        json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        max_request_body_size=state.config.max_body,
    )
    routes: list[Any] = []
    for route in sub.routes:
        if isinstance(route, Route) and route.path == "/mcp":
            routes.append(
                Route("/mcp", guarded(state, route.app), methods=["GET", "POST", "DELETE"])
            )
    return server, routes


def run_stdio(config: ServerConfig) -> None:
    """Serve MCP over stdin/stdout for one client (``evolog mcp``) until it closes."""
    from evolog.server._http import AppState
    from evolog.server._metrics import Metrics
    from evolog.server._store import ServerStore

    store = ServerStore(config)
    state = AppState(config, store, Metrics())

    @contextlib.asynccontextmanager
    async def lifespan(_: Any) -> AsyncIterator[None]:
        await store.start()
        try:
            yield
        finally:
            await store.stop()

    build_server(state, lifespan).run("stdio")
