"""Building the MCP server, serving it over stdio, or mounting it at ``/mcp``."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
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


def run_stdio(
    config: ServerConfig,
    stdin: Any = None,
    stdout: Any = None,
    ready: Callable[[], None] | None = None,
) -> None:
    """Serve MCP over stdin/stdout for one client (``evolog mcp``) until it closes.

    ``stdin`` and ``stdout`` (objects with ``readline`` and ``write``/``flush``) replace the
    process's own, and ``ready`` is called once the SDK is loaded and about to serve: how
    :mod:`evolog.mcp._front` answers the handshake while the SDK loads.
    """
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

    server = build_server(state, lifespan)
    if stdin is None and stdout is None:
        server.run("stdio")
        return

    import anyio
    from mcp.server.stdio import stdio_server

    async def serve() -> None:
        async with stdio_server(anyio.wrap_file(stdin), anyio.wrap_file(stdout)) as (r, w):
            if ready is not None:
                ready()
            # MCPServer.run_stdio_async does exactly this with the process's own streams.
            low = server._lowlevel_server
            await low.run(r, w, low.create_initialization_options())

    anyio.run(serve)
