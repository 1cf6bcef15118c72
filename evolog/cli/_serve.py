"""``evolog serve`` (HTTP, with MCP at ``/mcp``) and ``evolog mcp`` (MCP over stdio).

Both need the ``server`` extra (``pip install 'evolog[server]'``); without it they say so in
one line. Registering the commands imports nothing of the server.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from ._common import store_path

if TYPE_CHECKING:
    import argparse

_EXTRA = "pip install 'evolog[server]'"


def add_server_commands(sub: Any) -> None:
    """Register ``serve`` and ``mcp`` on the ``evolog`` sub-parsers."""
    from ._help import doc

    s = sub.add_parser(
        "serve",
        help="serve the store over HTTP (native /v1 API, evolver /kg, MCP at /mcp)",
        **doc("serve"),
    )
    s.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    s.add_argument("--port", type=int, default=8420, help="TCP port (default: 8420)")
    _durability(s)
    s.add_argument(
        "--token-file",
        help="bearer tokens, one a line: 'read TOKEN' or 'write TOKEN' (also EVOLOG_TOKEN, "
        "EVOLOG_READ_TOKEN; MEMORY_GRAPH_REMOTE_KEY guards /kg)",
    )
    s.add_argument(
        "--max-body", type=int, default=16 << 20, help="largest request body, bytes (16 MiB)"
    )
    s.add_argument(
        "--kg-policy",
        choices=["evolver", "evolog"],
        default="evolver",
        help="the advice policy /kg/advice answers with (default: evolver)",
    )
    s.add_argument("--no-mcp", action="store_true", help="do not serve MCP at /mcp")
    _sql_limits(s)
    s.add_argument(
        "--log-level",
        choices=["critical", "error", "warning", "info", "debug"],
        default="warning",
        help="uvicorn's log level (default: warning)",
    )
    s.set_defaults(func=run_serve)

    m = sub.add_parser(
        "mcp",
        help="serve the store to one MCP client over stdio",
        **doc("mcp"),
    )
    _durability(m)
    _sql_limits(m)
    m.set_defaults(func=run_mcp)


def _sql_limits(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("SQL limits (every /v1/sql and MCP sql query)")
    g.add_argument("--sql-timeout", type=float, default=30.0, help="seconds (default: 30)")
    g.add_argument(
        "--sql-memory-mb", type=int, default=1024, help="DuckDB memory, MiB (default: 1024)"
    )
    g.add_argument("--sql-threads", type=int, default=1, help="DuckDB threads (default: 1)")
    g.add_argument(
        "--sql-max-bytes", type=int, default=256 << 20, help="result size, bytes (256 MiB)"
    )
    g.add_argument(
        "--sql-concurrency", type=int, default=2, help="queries run at once (default: 2)"
    )
    g.add_argument(
        "--sql-queue", type=int, default=8, help="queries waiting; more get 503 (default: 8)"
    )


def _durability(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--durability",
        choices=["always", "batch", "none"],
        default="batch",
        help="when an append is acknowledged: always (fsynced), batch (written, fsynced "
        "within 10 ms; survives kill -9), none (written) (default: batch)",
    )


def _error(message: str, code: int) -> int:
    print(f"evolog: error: {message}", file=sys.stderr)
    return code


def _config(args: argparse.Namespace) -> Any:
    from evolog.server import ServerConfig, SqlLimits, load_tokens

    names = ("timeout", "memory_mb", "threads", "max_bytes", "concurrency", "queue")
    limits = {n: getattr(args, f"sql_{n}") for n in names if hasattr(args, f"sql_{n}")}
    return ServerConfig(
        store=store_path(args),
        host=getattr(args, "host", "127.0.0.1"),
        port=getattr(args, "port", 8420),
        durability=args.durability,
        tokens=load_tokens(getattr(args, "token_file", None)),
        max_body=getattr(args, "max_body", 16 << 20),
        kg_policy=getattr(args, "kg_policy", "evolver"),
        mcp=not getattr(args, "no_mcp", False),
        sql=SqlLimits(**limits),
    )


def _ensure_store(store: str) -> None:
    """Create the store if it is missing (after every check passed: a refused start leaves
    nothing behind)."""
    import os

    from evolog.eventlog import Paths, init_store

    if not os.path.exists(Paths.of(store).marker):
        init_store(store)


def _missing_extra() -> str | None:
    import importlib.util

    for name in ("starlette", "uvicorn", "mcp"):
        if importlib.util.find_spec(name) is None:
            return name
    return None


def run_serve(args: argparse.Namespace) -> int:
    """``evolog serve``."""
    missing = _missing_extra()
    if missing:
        return _error(f"evolog serve needs the server extra ({missing} is missing): {_EXTRA}", 1)
    from evolog.eventlog import EventLogError
    from evolog.server import ConfigError, check_bind, serve

    try:
        config = _config(args)
        check_bind(config)
        _ensure_store(config.store)
    except ConfigError as exc:
        return _error(str(exc), 2)
    except EventLogError as exc:
        return _error(str(exc), 1)
    ready = (
        f"evolog: serving {config.store} on http://{config.host}:{config.port} "
        f"(durability {config.durability})"
    )
    serve(config, log_level=args.log_level, ready=ready)
    return 0


def run_mcp(args: argparse.Namespace) -> int:
    """``evolog mcp``."""
    missing = _missing_extra()
    if missing:
        return _error(f"evolog mcp needs the server extra ({missing} is missing): {_EXTRA}", 1)
    from evolog.eventlog import EventLogError
    from evolog.mcp import serve_stdio
    from evolog.server import ConfigError

    try:
        config = _config(args)
        _ensure_store(config.store)
    except (ConfigError, EventLogError) as exc:
        return _error(str(exc), 2 if isinstance(exc, ValueError) else 1)
    serve_stdio(config)
    return 0
