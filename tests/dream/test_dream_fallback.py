"""A requested dreamer that fails fails loudly; the heuristic stands in only when asked to."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx2
import pytest
from evolog.dream import ClaudeDreamer, CycleError, DreamConfig, dream
from evolog.eventlog import DreamEnd, EventLog
from evolog.projections.graph._embed import HashingEmbedder

from tests.dream.test_dream_claude import Server, _answer
from tests.dream.test_dream_cycle import trace_events


def _last(log: EventLog) -> int:
    return max((e.seq for e in log.replay()), default=0)


def _traces(log: EventLog) -> None:
    log.append_many(trace_events("t1", "fix the yaml import", ["pip install pyyaml"]))
    log.append_many(trace_events("t2", "renew the certificate", ["renew", "install"]))


def _unreachable() -> tuple[ClaudeDreamer, list[httpx2.Request]]:
    calls: list[httpx2.Request] = []

    def refuse(request: httpx2.Request) -> httpx2.Response:
        calls.append(request)
        raise httpx2.ConnectError("connection refused", request=request)

    client = httpx2.Client(transport=httpx2.MockTransport(refuse))
    dreamer = ClaudeDreamer(api_key="k", http_client=client, sleep=lambda _: None, max_retries=1)
    return dreamer, calls


def test_an_unreachable_api_stops_the_run_and_appends_nothing(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "s", create=True, durability="none")
    _traces(log)
    before = _last(log)
    dreamer, _ = _unreachable()
    with pytest.raises(CycleError, match=r"the claude dreamer failed.*cannot reach the API"):
        dream(log, dreamer=dreamer, embedder=HashingEmbedder())
    assert _last(log) == before  # no dream_begin/dream_end, the traces stay undreamed


def test_an_asked_for_fallback_says_so_and_stops_calling_a_dead_api(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "s", create=True, durability="none")
    _traces(log)
    dreamer, calls = _unreachable()
    report = dream(
        log, dreamer=dreamer, embedder=HashingEmbedder(), config=DreamConfig(fallback=True)
    )
    (cycle,) = report.cycles
    assert cycle.fallbacks == 2 and report.traces_dreamed == 2
    assert len(calls) == 2  # one call and its one retry, then not again for the next trace
    (end,) = log.replay(kinds=["dream_end"])
    assert isinstance(end, DreamEnd) and end.status == "fallback"
    assert sum("fallback to heuristic for trace" in line for line in end.phase_log) == 2


def test_a_rejected_program_without_fallback_stops_the_run(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "s", create=True, durability="none")
    log.append_many(trace_events("bad", "renew the certificate", ["renew", "install"]))
    before = _last(log)
    dreamer, _ = Server(_answer).dreamer()
    with pytest.raises(CycleError, match=r"trace bad.*program rejected"):
        dream(log, dreamer=dreamer, embedder=HashingEmbedder())
    assert _last(log) == before


class _Refusing(BaseHTTPRequestHandler):
    """The Messages API refusing a bad key (HTTP 401), as it answers one."""

    calls = 0

    def do_POST(self) -> None:
        type(self).calls += 1
        self.rfile.read(int(self.headers.get("content-length", 0)))
        error = {"type": "authentication_error", "message": "invalid x-api-key"}
        body = json.dumps({"type": "error", "error": error}).encode()
        self.send_response(401)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def refusing_api() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _dream_cli(store: Path, api: str, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ANTHROPIC_API_KEY": "sk-ant-bad", "ANTHROPIC_BASE_URL": api}
    return subprocess.run(
        [sys.executable, "-m", "evolog", "--store", str(store), "dream", "--dreamer", "claude",
         "--embedder", "hashing", *extra],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip


def test_cli_with_a_bad_key_fails_loudly(tmp_path: Path, refusing_api: str) -> None:
    store = tmp_path / "s"
    with EventLog(store, create=True) as log:
        _traces(log)
        before = _last(log)
    result = _dream_cli(store, refusing_api)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "HTTP 401" in result.stderr
    with EventLog(store) as log:
        assert _last(log) == before


def test_cli_fallback_only_when_asked_and_never_silent(tmp_path: Path, refusing_api: str) -> None:
    store = tmp_path / "s"
    with EventLog(store, create=True) as log:
        _traces(log)
    result = _dream_cli(store, refusing_api, "--fallback", "heuristic")
    assert result.returncode == 0, result.stderr
    assert "2 of 2 trace(s) dreamed by the heuristic fallback, not by claude" in result.stderr
    report = json.loads(result.stdout)
    assert [c["fallbacks"] for c in report["cycles"]] == [2]
    with EventLog(store) as log:
        (end,) = log.replay(kinds=["dream_end"])
    assert isinstance(end, DreamEnd) and end.status == "fallback"
