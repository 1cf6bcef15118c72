"""``evolog worker start|stop|status|run``: the store's local worker.

``start`` starts it detached if none runs and waits until it listens; ``stop`` stops it
gracefully (what it answered is recorded first); ``status`` prints where it listens, or
``running: false`` (exit 1); ``run`` serves in the foreground (what ``start`` runs). Each
prints JSON. The port is ``--port``, else ``EVOLOG_WORKER_PORT``, else 8421.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._files import DEFAULT_PORT

if TYPE_CHECKING:
    import argparse

__all__ = ["add_worker_commands", "status_of"]

#: Default seconds after the last Stop/SessionEnd before the background dream.
DREAM_AFTER_S = 30.0
START_WAIT_S = 20.0


_DOCS = {
    "worker": (
        "The store's local worker: one long-lived process that Claude Code's http hooks\n"
        "post to (POST /hook/claude-code), serving evolog serve's API and MCP at /mcp on\n"
        "127.0.0.1 behind the secret in <store>/worker/token. It records each payload with\n"
        "the command hook's code and dreams (offline) after Stop/SessionEnd. The port is\n"
        "--port, else EVOLOG_WORKER_PORT, else 8421. Needs the extra evolog[server].",
        ("evolog worker start", "evolog worker status", "evolog worker stop"),
    ),
    "start": (
        "Start the worker detached if none runs, wait until it listens, print its status.",
        (
            "EVOLOG_WORKER_PORT=8431 evolog worker start --dream-after 60",
            "evolog worker start --evolve 'ace >> reasoning_bank >> reme'",
        ),
    ),
    "run": (
        "Serve the worker in the foreground until SIGINT/SIGTERM (what start runs).",
        ("evolog --store ~/.evolog worker run --port 8421 --dream-after -1",),
    ),
    "stop": (
        "Stop the worker gracefully: what it answered is recorded first.",
        ("evolog worker stop",),
    ),
    "status": (
        "Print where the worker listens (its hook and MCP URLs); exit 1 if none runs.",
        ("evolog worker status || evolog worker start",),
    ),
}


def _doc(name: str) -> dict[str, Any]:
    from evolog.cli import parser_doc

    return parser_doc(*_DOCS[name])


def add_worker_commands(sub: Any) -> None:
    """Register ``worker`` on the ``evolog`` sub-parsers."""
    w = sub.add_parser(
        "worker",
        help="the store's local worker that Claude Code's http hooks post to (start/stop/...)",
        **_doc("worker"),
    )
    actions = w.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, text in (
        ("start", "start the worker detached (if none runs) and wait until it listens"),
        ("run", "serve in the foreground"),
    ):
        a = actions.add_parser(name, help=text, **_doc(name))
        a.add_argument("--port", type=int, default=None, help=f"TCP port (default {DEFAULT_PORT})")
        a.add_argument(
            "--dream-after",
            type=float,
            default=None,
            metavar="SECONDS",
            help="dream this long after the last Stop/SessionEnd (default: "
            f"$EVOLOG_WORKER_DREAM_AFTER or {DREAM_AFTER_S:g}; negative: never)",
        )
        a.add_argument(
            "--evolve",
            default=None,
            metavar="EXPRESSION",
            help="also run this memory-evolution pipeline after each dream, offline, e.g. "
            "'ace >> reasoning_bank >> reme' (default: $EVOLOG_WORKER_EVOLVE, else none)",
        )
        a.set_defaults(func=_cmd_start if name == "start" else _cmd_run)
    actions.add_parser("stop", help="stop the worker", **_doc("stop")).set_defaults(func=_cmd_stop)
    actions.add_parser("status", help="where the worker listens", **_doc("status")).set_defaults(
        func=_cmd_status
    )


def _one_line_errors(func: Callable[[argparse.Namespace], int]) -> Callable[[Any], int]:
    """A bad option or environment value is one line and exit 2, as everywhere in the CLI."""

    @functools.wraps(func)
    def run(args: argparse.Namespace) -> int:
        try:
            return func(args)
        except ValueError as exc:
            print(f"evolog: error: {' '.join(str(exc).split())}", file=sys.stderr)
            return 2

    return run


def _root(args: argparse.Namespace, create: bool = True) -> str:
    """The store's directory; created for start and run only (status and stop of a store
    that does not exist find no worker and leave nothing behind)."""
    from evolog.cli import store_path

    if not create:
        return os.path.abspath(store_path(args))
    from evolog.eventlog import init_store

    return init_store(store_path(args)).root


def _port(args: argparse.Namespace) -> int:
    from ._files import worker_port

    port: int | None = getattr(args, "port", None)
    if port is None:
        return worker_port()
    if not 1 <= port <= 65535:
        raise ValueError(f"--port: expected a TCP port from 1 to 65535; got {port}")
    return port


def _dream_after(args: argparse.Namespace) -> float:
    value: float | None = getattr(args, "dream_after", None)
    if value is not None:
        return value
    raw = os.environ.get("EVOLOG_WORKER_DREAM_AFTER", "").strip()
    try:
        return float(raw) if raw else DREAM_AFTER_S
    except ValueError:
        raise ValueError(
            f"EVOLOG_WORKER_DREAM_AFTER: expected seconds (a number); got {raw!r}"
        ) from None


def status_of(root: str) -> dict[str, Any]:
    """What ``status`` prints (``running``, ``pid``, ``url``, ``hook_url``, ``mcp_url``)."""
    from ._files import running

    record = running(root)
    if record is None:
        return {"store": root, "running": False}
    base = f"http://{record.host}:{record.port}"
    return {
        "store": root,
        "running": True,
        "ready": record.ready,
        "pid": record.pid,
        "version": record.version or None,
        "executable": record.executable or None,
        "url": base,
        "hook_url": f"{base}/hook/claude-code",
        "mcp_url": f"{base}/mcp",
    }


def _print(doc: dict[str, Any]) -> None:
    from evolog.cli import print_json

    print_json(doc)


@_one_line_errors
def _cmd_status(args: argparse.Namespace) -> int:
    doc = status_of(_root(args, create=False))
    _print(doc)
    return 0 if doc["running"] else 1


@_one_line_errors
def _cmd_stop(args: argparse.Namespace) -> int:
    from ._files import stop

    root = _root(args, create=False)
    record = stop(root)
    _print({"store": root, "stopped": record is not None, "pid": record and record.pid})
    return 0


@_one_line_errors
def _cmd_start(args: argparse.Namespace) -> int:
    from ._files import ensure_started, running

    # Every option is checked before the store is touched: a refused start leaves nothing.
    port, dream_after, evolve = _port(args), _dream_after(args), _evolve(args)
    root = _root(args)
    extra = ["--dream-after", repr(dream_after)] + (["--evolve", evolve] if evolve else [])
    record, started = ensure_started(root, port, extra)
    deadline = time.monotonic() + START_WAIT_S
    while time.monotonic() < deadline:
        now = running(root)
        if now is None:
            log = os.path.join(root, "worker", "worker.log")
            raise OSError(f"the worker exited while starting; see {log}")
        if now.ready:
            _print({**status_of(root), "started": started})
            return 0
        time.sleep(0.05)
    raise OSError(f"the worker (pid {record.pid}) did not listen within {START_WAIT_S:g} s")


@_one_line_errors
def _cmd_run(args: argparse.Namespace) -> int:
    import importlib.util

    for name in ("starlette", "uvicorn", "mcp"):
        if importlib.util.find_spec(name) is None:
            print(
                f"evolog: error: evolog worker needs the server extra ({name} is missing): "
                "pip install 'evolog[server]'",
                file=sys.stderr,
            )
            return 1
    port, dream_after, evolve = _port(args), _dream_after(args), _evolve(args)
    run_worker(_root(args), port, dream_after, evolve)
    return 0


def _evolve(args: argparse.Namespace) -> str | None:
    """The pipeline to run after each dream (checked here: a typo fails the start)."""
    expression: str | None = getattr(args, "evolve", None)
    if expression is None:
        expression = os.environ.get("EVOLOG_WORKER_EVOLVE", "").strip() or None
    if expression:
        from evolog.dream.evolve import pipeline

        pipeline(expression)
    return expression


def run_worker(root: str, port: int, dream_after: float, evolve: str | None = None) -> None:
    """Serve the worker until SIGINT/SIGTERM; ``worker.json`` names it while it listens."""
    import uvicorn

    from evolog.server import GRACE_S

    from ._app import worker_app
    from ._files import current, read_token, remove_record, write_record

    app = worker_app(root, port, read_token(root), dream_after, evolve)
    state = app.state.evolog
    pid = os.getpid()

    class _Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            state.store.closing.set()
            super().handle_exit(sig, frame)

        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.started:
                write_record(root, current(pid, port, ready=True))
                print(f"evolog: worker for {root} on http://127.0.0.1:{port}", file=sys.stderr)

    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=GRACE_S,
        lifespan="on",
        server_header=False,
        proxy_headers=False,
    )
    try:
        _Server(config).run()
    finally:
        remove_record(root, pid)
