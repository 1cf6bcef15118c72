"""How a server is configured: where it listens, which store, who may read and write.

Tokens come from a file (``--token-file``: one token a line, ``read TOKEN`` or ``write
TOKEN``; a bare token is a write token; ``#`` starts a comment) and from the environment
(``EVOLOG_TOKEN`` write, ``EVOLOG_READ_TOKEN`` read). ``MEMORY_GRAPH_REMOTE_KEY`` is the
bearer evolver's remote adapter sends: it opens the ``/kg`` routes (and nothing else).
Without any token the server answers only on a loopback address.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from typing import Literal

import msgspec

from ._errors import ConfigError

Durability = Literal["always", "batch", "none"]
Scope = Literal["read", "write"]
#: A token guarding a public address must not be guessable.
MIN_PUBLIC_TOKEN_CHARS = 16
DEFAULT_PORT = 8420
DEFAULT_MAX_BODY = 16 << 20


class Tokens(msgspec.Struct, frozen=True):
    """Bearer tokens by scope; ``kg`` is evolver's key (the ``/kg`` routes only)."""

    read: frozenset[str] = frozenset()
    write: frozenset[str] = frozenset()
    kg: frozenset[str] = frozenset()

    @property
    def any(self) -> bool:
        return bool(self.read or self.write or self.kg)


class SqlLimits(msgspec.Struct, frozen=True, kw_only=True):
    """Bounds of every ``/v1/sql`` (and MCP ``sql``) query.

    A query runs on its own DuckDB instance with ``memory_mb`` of memory and ``threads``
    threads, is interrupted after ``timeout`` seconds or when its client goes away, and
    streams its result: it stops at the request's ``max_rows`` and fails past
    ``max_bytes``. At most ``concurrency`` queries run at once and ``queue`` more wait;
    beyond that a query is refused at once (503), so hostile queries can never hold every
    worker thread the other routes need.
    """

    timeout: float = 30.0
    memory_mb: int = 1024
    threads: int = 1
    max_bytes: int = 256 << 20
    concurrency: int = 2
    queue: int = 8

    def __post_init__(self) -> None:
        if not 0 < self.timeout < float("inf"):
            raise ConfigError(f"--sql-timeout: expected a positive number; got {self.timeout!r}")
        for name in ("memory_mb", "threads", "max_bytes", "concurrency"):
            if getattr(self, name) < 1:
                flag = "--sql-" + name.replace("_", "-")
                raise ConfigError(f"{flag}: expected a positive integer; got {getattr(self, name)}")
        if self.queue < 0:
            raise ConfigError(f"--sql-queue: expected 0 or more; got {self.queue}")


class ServerConfig(msgspec.Struct, frozen=True, kw_only=True):
    """Everything ``evolog serve`` is started with."""

    store: str
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    #: ``always``: an append is answered once fsynced; ``batch``: once written to the OS
    #: (it survives a kill -9 of the server) and fsynced within ``group_ms``; ``none``: once
    #: written, never fsynced by the server.
    durability: Durability = "batch"
    group_ms: float = 10.0
    tokens: Tokens = Tokens()
    max_body: int = DEFAULT_MAX_BODY
    #: The policy ``/kg/advice`` answers with (evolver's own, by default).
    kg_policy: Literal["evolver", "evolog"] = "evolver"
    mcp: bool = True
    sql: SqlLimits = msgspec.field(default_factory=SqlLimits)


def version() -> str:
    """evolog's installed version (for the OpenAPI document and the MCP handshake)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("evolog")
    except PackageNotFoundError:
        return "0+unknown"


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (or ``localhost``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def load_tokens(token_file: str | None, environ: Mapping[str, str] | None = None) -> Tokens:
    """Tokens from ``token_file`` and the environment (see the module docstring)."""
    env = os.environ if environ is None else environ
    read: set[str] = set()
    write: set[str] = set()
    if token_file is not None:
        _read_token_file(token_file, read, write)
    if env.get("EVOLOG_TOKEN"):
        write.add(env["EVOLOG_TOKEN"].strip())
    if env.get("EVOLOG_READ_TOKEN"):
        read.add(env["EVOLOG_READ_TOKEN"].strip())
    kg = {env["MEMORY_GRAPH_REMOTE_KEY"].strip()} if env.get("MEMORY_GRAPH_REMOTE_KEY") else set()
    return Tokens(frozenset(read - {""}), frozenset(write - {""}), frozenset(kg - {""}))


_TOKEN_FILE_CHARS = 1 << 20


def _read_token_file(path: str, read: set[str], write: set[str]) -> None:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read(_TOKEN_FILE_CHARS + 1)  # bounded: --token-file /dev/zero by mistake
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--token-file {path}: cannot read it ({exc})") from None
    if len(text) > _TOKEN_FILE_CHARS:
        raise ConfigError(
            f"--token-file {path}: expected a token file of at most {_TOKEN_FILE_CHARS} "
            "characters; got more"
        )
    lines = text.splitlines()
    for n, line in enumerate(lines, 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if len(words) == 1:
            write.add(words[0])
        elif len(words) == 2 and words[0] in ("read", "write"):
            (read if words[0] == "read" else write).add(words[1])
        else:
            raise ConfigError(
                f"--token-file {path}:{n}: expected 'read TOKEN', 'write TOKEN' or a bare "
                f"token; got {len(words)} words starting {words[0]!r}"
            )


def check_bind(config: ServerConfig) -> None:
    """Refuse a public address without tokens (and with short ones)."""
    if is_loopback(config.host):
        return
    tokens = config.tokens
    if not (tokens.read or tokens.write):
        raise ConfigError(
            f"--host {config.host}: expected a loopback address (127.0.0.1, ::1, localhost) "
            "when no token is configured; got a public one (set EVOLOG_TOKEN or --token-file "
            "to serve it)"
        )
    for token in tokens.read | tokens.write | tokens.kg:
        if len(token) < MIN_PUBLIC_TOKEN_CHARS:
            raise ConfigError(
                f"tokens: expected at least {MIN_PUBLIC_TOKEN_CHARS} characters for a server "
                f"on a public address; got one of {len(token)}"
            )
