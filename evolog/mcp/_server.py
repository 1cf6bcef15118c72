"""Building the MCP server, serving it over stdio, or mounting it at ``/mcp``."""

from __future__ import annotations

import contextlib
import os
import select
import sys
import threading
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from ._tools import register

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from evolog.server import AppState, ServerConfig

INSTRUCTIONS = (
    "evolog is this agent's memory of what it tried and how it went. Before a task, call "
    "recall (or route) and follow what applies; ask advise which strategy (gene) to use for "
    "the signals you see; after the task, call record_outcome with the ids you were given, "
    "so helpful memories are credited and harmful ones fade. remember stores a lesson."
)


#: Seconds ``evolog mcp`` goes on once its client has closed stdin: the calls still running
#: may answer in that time, then the process ends without them. A tool runs on a thread,
#: which cannot be cancelled, and the SDK waits for it: a long call (a heavy query) kept
#: the server, and a core, busy long after its client had gone.
EXIT_GRACE_S = 3.0


def _leave() -> None:
    with contextlib.suppress(Exception):
        sys.stderr.write(
            "evolog: mcp: the client closed stdin; exiting without the calls still running\n"
        )
        sys.stderr.flush()
    os._exit(0)  # the log survives this as it survives kill -9: nothing acknowledged is lost


class _Deadline:
    """Arms, once, the timer that ends the process :data:`EXIT_GRACE_S` seconds on."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._armed = False

    def arm(self) -> None:
        with self._lock:
            if self._armed:
                return
            self._armed = True
        timer = threading.Timer(EXIT_GRACE_S, _leave)
        timer.daemon = True
        timer.start()


class _EndWatch:
    """A line source (what the front hands the SDK) whose end arms the deadline."""

    def __init__(self, inner: Any, deadline: _Deadline) -> None:
        self.inner, self.deadline = inner, deadline

    def readline(self) -> str:
        line: str = self.inner.readline()
        if not line:
            self.deadline.arm()
        return line

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if close is not None:
            close()


def _watch_hangup(fd: int, deadline: _Deadline) -> None:
    """Arm the deadline when the writers of ``fd`` (a pipe, a terminal) are gone. Only
    POLLHUP is asked for: nothing is read, the SDK reads the same pipe through its own copy."""
    poller = select.poll()
    poller.register(fd, 0)  # POLLHUP and POLLERR are reported whatever is registered
    try:
        while True:
            if any(ev & (select.POLLHUP | select.POLLERR | select.POLLNVAL)
                   for _, ev in poller.poll()):  # fmt: skip
                deadline.arm()
                return
    finally:
        os.close(fd)


def build_server(state: AppState, lifespan: Any = None) -> MCPServer:
    """An MCP server whose tools act on ``state``'s store."""
    from mcp.server.mcpserver import MCPServer

    from evolog.server import version

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
    from evolog.server import AppState, Metrics, ServerStore

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
    deadline = _Deadline()
    if stdin is None and stdout is None:
        # Watched through a copy of fd 0 made before the SDK points fd 0 at /dev/null.
        with contextlib.suppress(OSError):  # no fd 0 at all: the SDK's own error follows
            threading.Thread(
                target=_watch_hangup, args=(os.dup(0), deadline), name="evolog-mcp-hangup",
                daemon=True,
            ).start()  # fmt: skip
        server.run("stdio")
        return
    if stdin is not None:
        stdin = _EndWatch(stdin, deadline)

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
