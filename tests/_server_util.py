"""Helpers for the server tests: an app on a fresh store, and a real server process."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason="the server extra (evolog[server]) is not installed")
pytest.importorskip("httpx", reason="the dev extra (httpx) is not installed")

import httpx
from starlette.testclient import TestClient

from evolog import Memory
from evolog.server import ServerConfig, Tokens, create_app

BASE = "http://127.0.0.1:8420"
JSON = {"content-type": "application/json"}
NDJSON = {"content-type": "application/x-ndjson"}
READ_TOKEN = "read-token-0123456789abcdef"
WRITE_TOKEN = "write-token-0123456789abcdef"


def new_store(path: Path) -> str:
    Memory(path).close()
    return str(path)


@contextlib.contextmanager
def client(store: str, **config: Any) -> Iterator[TestClient]:
    """A Starlette test client on an app serving ``store`` (lifespan run)."""
    mcp = config.pop("mcp", False)
    app = create_app(ServerConfig(store=store, **config), mcp=mcp)
    with TestClient(app, base_url=BASE) as c:
        yield c


def tokens() -> Tokens:
    return Tokens(read=frozenset({READ_TOKEN}), write=frozenset({WRITE_TOKEN}))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class LiveServer:
    """``evolog serve`` in a real process on a free port (stopped on exit)."""

    def __init__(self, store: str, *args: str, env: dict[str, str] | None = None) -> None:
        self.store = store
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        cmd = [
            sys.executable,
            "-m",
            "evolog",
            "--store",
            store,
            "serve",
            "--port",
            str(self.port),
            *args,
        ]
        self.proc = subprocess.Popen(
            cmd, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )

    def wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                _, err = self.proc.communicate()
                raise AssertionError(f"server exited {self.proc.returncode}: {err.decode()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + "/healthz", timeout=1.0).status_code == 200:
                    return
            time.sleep(0.05)
        raise AssertionError("server did not become ready")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()
        if self.proc.stderr:
            self.stderr = self.proc.stderr.read().decode()
            self.proc.stderr.close()
        return self.proc.returncode

    def __enter__(self) -> LiveServer:
        self.wait_ready()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop(signal.SIGKILL if exc[0] is not None else signal.SIGTERM)
