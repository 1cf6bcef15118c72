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
