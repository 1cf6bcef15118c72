"""``/mcp`` inside ``evolog serve``: the MCP SDK loaded in the background.

Importing the SDK takes most of a second, longer than everything else the server needs to
start; the server answers ``/healthz`` and ``/v1`` at once while the SDK loads on a worker
thread, and a request to ``/mcp`` that arrives before it is ready waits for it.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

from anyio import to_thread

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

    from evolog.server import AppState

#: How long a request waits for the SDK to load before it is answered 503 (seconds).
LOAD_WAIT_S = 30.0


class McpEndpoint:
    """The ASGI app of ``/mcp``; :meth:`run` (a lifespan task) loads and serves it."""

    def __init__(self, state: AppState) -> None:
        self.state = state
        self.ready = asyncio.Event()
        self.app: ASGIApp | None = None
        self.error: BaseException | None = None

    def _build(self) -> tuple[Any, ASGIApp]:
        from mcp.server.transport_security import TransportSecuritySettings
        from starlette.routing import Route

        from ._server import build_server

        server = build_server(self.state)
        sub = server.streamable_http_app(
            streamable_http_path="/mcp",
            stateless_http=True,
            json_response=True,
            # The server checks Host and bearer tokens itself, for every route alike
            # (evolog.server._auth); the SDK's own guard would only repeat it.
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            max_request_body_size=self.state.config.max_body,
        )
        app = next(r.app for r in sub.routes if isinstance(r, Route) and r.path == "/mcp")
        return server, app

    async def run(self, stop: asyncio.Event) -> None:
        """Load the SDK on a thread, then serve until ``stop`` is set."""
        try:
            server, app = await to_thread.run_sync(self._build)
            async with server.session_manager.run():
                self.app = app
                self.ready.set()
                await stop.wait()
        except Exception as exc:  # a broken SDK install: /mcp says so, the rest serves on
            self.error = exc
            self.ready.set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        from evolog.server import Problem, error_response

        if not self.ready.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.ready.wait(), LOAD_WAIT_S)
        if self.app is None:
            why = f"{type(self.error).__name__}: {self.error}" if self.error else "still loading"
            await error_response(Problem(503, f"MCP is not available ({why})", None))(
                scope, receive, send
            )
            return
        await self.app(scope, receive, send)
