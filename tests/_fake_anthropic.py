"""A scripted stand-in for the Anthropic Messages API on 127.0.0.1, for driving the real
Claude Code CLI headless (``ANTHROPIC_BASE_URL``) without a network or a key.

The main loop's requests (those offering tools) are answered from a plan: the k-th
``tool_use`` the conversation lacks is sent next, streamed as server-sent events as the real
API streams them, and once every planned call has a ``tool_result`` the answer is a text
``end_turn``. Every other request the CLI makes on the side (titles, topic checks, token
counts) gets a short text answer. Every request body is kept with its arrival time, so a
test can assert what reached the model and a bench can read the gaps between requests.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "FakeAnthropic",
    "Seen",
    "ToolCall",
    "claude_cli",
    "main_requests",
    "run_claude",
    "text_of",
]


@dataclass(frozen=True)
class ToolCall:
    name: str
    input: dict[str, Any]


@dataclass
class Seen:
    """One request: its path, body, and when it arrived and was answered (monotonic s)."""

    path: str
    body: dict[str, Any]
    arrived: float
    answered: float = 0.0


@dataclass
class FakeAnthropic:
    """The server; ``plan`` is read at each request, so a test may change it between runs."""

    plan: list[ToolCall] = field(default_factory=list)
    final_text: str = "All done."
    seen: list[Seen] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeAnthropic:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass  # a quiet test log

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def do_GET(self) -> None:
                self._json(404, {"type": "error", "error": {"type": "not_found_error"}})

            def do_POST(self) -> None:
                arrived = time.monotonic()
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {}
                seen = Seen(self.path.split("?")[0], body, arrived)
                with fake._lock:
                    fake.seen.append(seen)
                if seen.path.endswith("/count_tokens"):
                    self._json(200, {"input_tokens": 100})
                elif seen.path.endswith("/v1/messages"):
                    self._message(fake.reply(body), bool(body.get("stream")))
                else:
                    self._json(404, {"type": "error", "error": {"type": "not_found_error"}})
                seen.answered = time.monotonic()

            def _json(self, status: int, doc: dict[str, Any]) -> None:
                data = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _message(self, content: list[dict[str, Any]], stream: bool) -> None:
                stop = "tool_use" if any(c["type"] == "tool_use" for c in content) else "end_turn"
                message = {
                    "id": f"msg_{time.monotonic_ns()}",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-fake",
                    "content": content,
                    "stop_reason": stop,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 10, "output_tokens": 5},
                }
                if not stream:
                    self._json(200, message)
                    return
                data = b"".join(_sse(message))
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def reply(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The content blocks answering one request (see the module docstring)."""
        if not body.get("tools"):
            return [{"type": "text", "text": "ok"}]
        done = sum(
            1
            for m in body.get("messages", [])
            if m.get("role") == "assistant" and isinstance(m.get("content"), list)
            for c in m["content"]
            if c.get("type") == "tool_use"
        )
        if done < len(self.plan):
            call = self.plan[done]
            tool_id = f"toolu_{done:02d}_{time.monotonic_ns()}"
            return [{"type": "tool_use", "id": tool_id, "name": call.name, "input": call.input}]
        return [{"type": "text", "text": self.final_text}]


def _sse(message: dict[str, Any]) -> Iterator[bytes]:
    def event(kind: str, doc: dict[str, Any]) -> bytes:
        return f"event: {kind}\ndata: {json.dumps({'type': kind, **doc})}\n\n".encode()

    head = {**message, "content": [], "stop_reason": None}
    yield event("message_start", {"message": head})
    for i, block in enumerate(message["content"]):
        if block["type"] == "tool_use":
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        yield event("content_block_start", {"index": i, "content_block": start})
        yield event("content_block_delta", {"index": i, "delta": delta})
        yield event("content_block_stop", {"index": i})
    stop = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    yield event("message_delta", {"delta": stop, "usage": {"output_tokens": 5}})
    yield event("message_stop", {})


def main_requests(seen: list[Seen]) -> list[Seen]:
    """The main loop's requests (those offering tools), in arrival order."""
    return [s for s in seen if s.path.endswith("/v1/messages") and s.body.get("tools")]


def text_of(body: dict[str, Any]) -> str:
    """Every text a request carries (system prompt, messages, tool results), joined."""
    parts: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, str):
            parts.append(node)
        elif isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            for key in ("text", "content", "system"):
                if key in node:
                    walk(node[key])

    walk(body.get("system"))
    walk(body.get("messages"))
    return "\n".join(parts)


def claude_cli() -> str | None:
    """The Claude Code CLI to drive: ``$EVOLOG_CLAUDE``, else ``claude`` on the PATH."""
    import shutil

    return os.environ.get("EVOLOG_CLAUDE") or shutil.which("claude")


def run_claude(
    claude: str,
    api: FakeAnthropic,
    prompt: str,
    *,
    cwd: str,
    home: str,
    settings: dict[str, Any],
    mcp: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 120.0,
) -> dict[str, Any]:
    """One headless turn (``claude -p``) against ``api``, in a private ``HOME``; its JSON
    result (a failed run raises with its stderr)."""
    import subprocess

    args = [claude, "-p", prompt, "--output-format", "json", "--settings", json.dumps(settings)]
    if mcp is not None:
        args += ["--mcp-config", json.dumps(mcp), "--strict-mcp-config"]
    full = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": home,
        "ANTHROPIC_BASE_URL": api.url,
        "ANTHROPIC_API_KEY": "sk-ant-fake-key-for-tests",
        # Nothing but the fake API is contacted: no telemetry, updates or error reports.
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "XDG_STATE_HOME": os.environ.get("XDG_STATE_HOME", os.path.join(home, ".state")),
        **(env or {}),
    }
    done = subprocess.run(
        args, cwd=cwd, env=full, capture_output=True, text=True, timeout=timeout, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"claude exited {done.returncode}: {done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result
