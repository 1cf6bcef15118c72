"""``evolog mcp`` answering the handshake before the MCP SDK has loaded.

Importing the SDK takes 1.5-3 s (its protocol types alone are most of it), and Claude Code
waits only ``MCP_CONNECT_TIMEOUT_MS`` (5 s by default) for a server to list its tools: a
tool called before that fails with "still connecting". So a thin front owns stdin and
stdout while a worker loads the SDK. It answers ``initialize``
(for a protocol version seen before), the lists a client asks for while connecting
(``tools/list``, ``prompts/list``, ``resources/list``, ``resources/templates/list``) and
``ping`` at once from what the SDK answered last time (:func:`cache_path`), or before any
start from the answers shipped with evolog (:mod:`evolog.mcp._seed`); everything else
waits for the SDK.

The SDK still sees the whole session: every message is passed to it in order once it is up,
and its answers to the requests the front already answered are dropped (after checking
them: an answer that differs from the cached one replaces it, and a changed list is
announced, e.g. with ``notifications/tools/list_changed``). The front parses nothing but the
method and id of each message, so every other part of the protocol is the SDK's.
``EVOLOG_MCP_FAST_START=0`` serves with the SDK alone.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import sys
import threading
from typing import IO, Any, Final

__all__ = ["cache_path", "serve_stdio"]

#: The lists a client asks for while connecting (Claude Code asks for the first three and
#: counts the server as connected once all are answered).
_LISTS: Final = ("tools/list", "prompts/list", "resources/list", "resources/templates/list")


def cache_path() -> str:
    """Where the SDK's last handshake answers are kept (one small JSON file per user)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "evolog", "mcp-handshake.json")


def _cache_key() -> str:
    """What the answers depend on: the installed evolog and SDK, and the tool definitions."""
    from importlib import metadata

    parts = []
    for dist in ("evolog", "mcp", "mcp-types"):
        try:
            parts.append(f"{dist}={metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            parts.append(f"{dist}=none")
    here = os.path.dirname(os.path.abspath(__file__))
    for name in ("_tools.py", "_server.py"):
        with contextlib.suppress(OSError):
            st = os.stat(os.path.join(here, name))
            parts.append(f"{name}={st.st_size}:{st.st_mtime_ns}")
    return " ".join(parts)


class _Cache:
    def __init__(self, path: str, key: str) -> None:
        self.path, self.key = path, key
        self.initialize: dict[str, Any] = {}  # requested protocol version -> result
        self.lists: dict[str, Any] = {}  # method -> result (the first page)
        self.path_key: object = None
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
            self.path_key = data.get("key") if isinstance(data, dict) else None
            if isinstance(data, dict) and data.get("key") == key:
                self.initialize = dict(data.get("initialize") or {})
                self.lists = dict(data.get("lists") or {})
        except (OSError, ValueError):
            pass  # no cache yet, or a damaged one: the SDK answers, and refills it
        if not self.lists:
            # No start since the install or upgrade: the answers shipped with this evolog,
            # so even the first start answers at once (the SDK's own answers still check
            # them, and fill the cache).
            from ._seed import load_seed

            self.initialize, self.lists = load_seed()
        # Answers not read from this cache are written at the SDK's first answer, even when
        # it agrees, so the next start finds them under its key.
        self.unsaved = self.path_key != key

    def save(self) -> None:
        self.unsaved = False
        data = {"key": self.key, "initialize": self.initialize, "lists": self.lists}
        # evolog.eventlog.temp_beside's name, without importing the event log into the
        # fast start: a name of its own per writer, so concurrent saves never share a file.
        tmp = f"{self.path}.tmp.{os.urandom(6).hex()}.{os.getpid()}"
        with contextlib.suppress(OSError):  # a read-only home only costs the fast start
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(data, f)
            os.replace(tmp, self.path)


class _LineQueue:
    """The SDK's stdin: lines the front hands over, ``""`` at the end."""

    def __init__(self) -> None:
        self.lines: queue.Queue[str] = queue.Queue()

    def readline(self) -> str:
        return self.lines.get()

    def close(self) -> None:
        pass


class _Front:
    def __init__(self, wire_in: IO[bytes], wire_out: IO[bytes], cache: _Cache) -> None:
        self.wire_in, self.wire_out, self.cache = wire_in, wire_out, cache
        self.lock = threading.Lock()
        self.to_sdk = _LineQueue()
        self.held: list[str] = []  # lines read before the SDK was ready, in order
        self.ready = False
        self.answered: dict[Any, Any] = {}  # request id -> what the front answered
        self.watched: dict[Any, tuple[str, str]] = {}  # request id -> (method, version)
        self.sdk_out = ""

    # --- the wire ---------------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        data = (json.dumps(message, separators=(",", ":")) + "\n").encode()
        with self.lock:
            self.wire_out.write(data)
            self.wire_out.flush()

    def read_loop(self) -> None:
        """Read the client's lines until it closes stdin; answer what the cache can."""
        for raw in self.wire_in:
            line = raw.decode("utf-8", "replace")
            if not line.strip():
                continue
            reply = self._early_answer(line)
            if reply is not None:
                self.send(reply)
            with self.lock:
                if self.ready:
                    self.to_sdk.lines.put(line)
                else:
                    self.held.append(line)
        with self.lock:
            if self.ready:
                self.to_sdk.lines.put("")
            else:
                self.held.append("")

    def _early_answer(self, line: str) -> dict[str, Any] | None:
        """The answer to a request the cache can answer before the SDK is up, if any."""
        try:
            msg = json.loads(line)
        except ValueError:
            return None
        if not isinstance(msg, dict) or "id" not in msg or not isinstance(msg.get("method"), str):
            return None
        method, ident, params = msg["method"], msg["id"], msg.get("params") or {}
        version = str(params.get("protocolVersion", "")) if isinstance(params, dict) else ""
        saved = method == "initialize" or method in _LISTS
        if saved and not (isinstance(params, dict) and params.get("cursor")):
            self.watched[ident] = (method, version)
        with self.lock:
            if self.ready:
                return None
        result: Any = None
        if method == "initialize":
            result = self.cache.initialize.get(version)
        elif method in _LISTS and ident in self.watched:
            result = self.cache.lists.get(method)
        elif method == "ping":
            result = {}
        if result is None:
            return None
        self.answered[ident] = result
        return {"jsonrpc": "2.0", "id": ident, "result": result}

    # --- the SDK's side -----------------------------------------------------------------

    def hand_over(self) -> None:
        """The SDK is up: give it what was read so far; from now on every line goes to it."""
        with self.lock:
            for line in self.held:
                self.to_sdk.lines.put(line)
            self.held.clear()
            self.ready = True

    def write(self, text: str) -> int:
        """The SDK's stdout: pass its messages on, except answers the front already gave."""
        self.sdk_out += text
        *lines, self.sdk_out = self.sdk_out.split("\n")
        for line in lines:
            if line.strip():
                self._from_sdk(line)
        return len(text)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def _from_sdk(self, line: str) -> None:
        try:
            msg = json.loads(line)
        except ValueError:
            msg = None
        ident = msg.get("id") if isinstance(msg, dict) and "result" in msg else None
        watched = self.watched.pop(ident, None) if ident is not None else None
        if watched is not None:
            method, version = watched
            if method == "initialize":
                changed = self.cache.initialize.get(version) != msg["result"]
                self.cache.initialize[version] = msg["result"]
            else:
                changed = self.cache.lists.get(method) != msg["result"]
                self.cache.lists[method] = msg["result"]
            if changed or self.cache.unsaved:
                self.cache.save()
            if ident in self.answered:
                early = self.answered.pop(ident)
                if method != "initialize" and early != msg["result"]:
                    what = method.split("/")[0]  # tools, prompts or resources
                    self.send({"jsonrpc": "2.0", "method": f"notifications/{what}/list_changed"})
                return
        elif ident in self.answered:
            self.answered.pop(ident)  # a ping the front answered
            return
        with self.lock:
            self.wire_out.write((line + "\n").encode())
            self.wire_out.flush()


def _claim_stdio() -> tuple[IO[bytes], IO[bytes]]:
    """Private copies of stdin and stdout for the wire; fd 0 becomes the null device and
    fd 1 stderr, so stray output of a tool (or a library) never corrupts the protocol."""
    # Buffered: iterating an unbuffered file reads a line one byte (one syscall) at a time,
    # 13 s for a 5.7 MB request; a buffered readline still returns each line once it is in.
    wire_in = os.fdopen(os.dup(0), "rb")
    wire_out = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return wire_in, wire_out


def serve_stdio(config: Any) -> None:
    """``evolog mcp``: serve one client over stdin/stdout until it closes stdin."""
    if os.environ.get("EVOLOG_MCP_FAST_START", "1") == "0":
        from ._server import run_stdio

        run_stdio(config)
        return
    wire_in, wire_out = _claim_stdio()
    front = _Front(wire_in, wire_out, _Cache(cache_path(), _cache_key()))
    threading.Thread(target=front.read_loop, name="evolog-mcp-front", daemon=True).start()
    try:
        from ._server import run_stdio

        run_stdio(config, stdin=front.to_sdk, stdout=front, ready=front.hand_over)
    except BaseException as exc:
        # Requests the front holds would never be answered: say why, then leave.
        print(f"evolog: error: the MCP server stopped: {exc!r}", file=sys.stderr)
        raise
