"""Running the server under uvicorn, with a shutdown that flushes.

On SIGINT/SIGTERM uvicorn stops accepting connections and waits for open requests; event
streams (SSE) are told to end at once, so the wait is short. The store's lifespan then
answers every queued append and closes the log, which flushes and fsyncs what group commit
holds: an acknowledged append is never lost to a graceful stop.
"""

from __future__ import annotations

import sys
from typing import Any

from ._config import ServerConfig, check_bind

#: How long a graceful stop waits for open requests before cancelling them (seconds).
GRACE_S = 5


def serve(config: ServerConfig, *, log_level: str = "warning", ready: Any = None) -> None:
    """Serve ``config.store`` until interrupted (``ready`` is printed once listening)."""
    import uvicorn

    from ._app import create_app

    check_bind(config)
    app = create_app(config)
    state = app.state.evolog

    class _Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            # Followers end now; uvicorn then waits only for ordinary requests.
            state.store.closing.set()
            super().handle_exit(sig, frame)

        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if ready is not None and self.started:
                print(ready, file=sys.stderr, flush=True)

    uv_config = uvicorn.Config(
        app,
        host=config.host,
        port=config.port,
        log_level=log_level,
        access_log=False,
        timeout_graceful_shutdown=GRACE_S,
        lifespan="on",
        server_header=False,
        # Nothing here reads the client's address, so forwarded headers are not parsed.
        proxy_headers=False,
    )
    _Server(uv_config).run()
