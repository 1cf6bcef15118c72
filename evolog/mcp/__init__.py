"""evolog over the Model Context Protocol: ``evolog mcp`` (stdio) and ``/mcp`` in ``evolog serve``.

Tools: ``remember``, ``recall``, ``record_outcome``, ``advise``, ``route``, ``sql``
(read-only) and ``search_events``, with the official ``mcp`` SDK (an optional extra:
``pip install 'evolog[server]'``). Nothing here is imported by ``import evolog`` or by the
hook: the SDK alone takes over half a second to import.

Errors: tool failures reach the client as MCP tool errors; configuration problems raise
:class:`evolog.server.ConfigError` (the server package's base, ``ServerError``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evolog._lazy import lazy_exports

if TYPE_CHECKING:
    from ._endpoint import McpEndpoint
    from ._front import serve_stdio
    from ._mount import guarded
    from ._server import build_server, run_stdio

__all__ = [
    "McpEndpoint",
    "build_server",
    "guarded",
    "run_stdio",
    "serve_stdio",
]


__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "._endpoint": "McpEndpoint",
        "._mount": "guarded",
        "._server": "build_server run_stdio",
        "._front": "serve_stdio",
    },
    globals(),
)
