"""Guarding an ASGI application mounted inside the server (the MCP endpoint) with the same
checks as every route."""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.datastructures import Headers

from evolog.server import AppState, Need, Problem, authorize, error_response

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send


class guarded:
    """``app`` behind :func:`~evolog.server._auth.authorize` for ``need``."""

    def __init__(self, state: AppState, app: ASGIApp, need: Need = "write") -> None:
        self.state = state
        self.app = app
        self.need = need

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = Headers(scope=scope)
        try:
            authorize(self.state.config, self.need, headers)
        except Problem as problem:
            self.state.metrics.observe("mcp", problem.status, 0.0)
            await error_response(problem)(scope, receive, send)
            return
        await self.app(scope, receive, send)
