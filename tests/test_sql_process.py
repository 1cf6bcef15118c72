"""Server SQL in query processes capped by the OS (issue 26, item 4): DuckDB's memory_limit
does not count strings a SELECT list builds, so ``repeat()`` once grew the server past 2 GB.
These run a real ``evolog serve`` and watch its query processes through /proc. How fast
/healthz answers meanwhile is measured by bench/bench_sql_sandbox.py, not asserted here."""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from evolog.eventlog import Attempt, EventLog, Outcome, Signal

httpx = pytest.importorskip("httpx")
pytest.importorskip("starlette", reason="the server extra is not installed")

from _server_util import LiveServer  # noqa: E402

T0 = 1_767_225_600_000_000
#: 2 GB of strings, which DuckDB's memory_limit does not see.
WIDE = "SELECT repeat('x', 1000000) AS s FROM range(2048)"
CROSS = "SELECT count(*) AS n FROM range(100000000) a, range(1000000) b"
#: The server's RSS bound while those run: its own working set, far below one such result.
RSS_BOUND_MB = 600


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("sqlproc") / "store"
    with EventLog(root, create=True, durability="none", auto_seal="off") as log:
        log.append_many(
            [
                Signal(signals=["a"], ts=T0, agent="x"),
                Attempt(action_id="a1", key="k", gene="g", ts=T0 + 1),
                Outcome(action_id="a1", status="success", ts=T0 + 2),
            ]
        )
        log.seal()
    return str(root)


def _children(pid: int) -> set[int]:
    out = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.add(int(entry.name))
    return out


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _wait_children(pid: int, n: int, timeout: float = 30.0) -> set[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        kids = _children(pid)
        if len(kids) >= n:
            return kids
        time.sleep(0.05)
    raise AssertionError(f"expected {n} query processes; got {_children(pid)}")


def test_a_query_building_huge_strings_gets_a_memory_error_not_the_server(store: str) -> None:
    args = ("--sql-memory-mb", "64", "--sql-timeout", "30", "--sql-concurrency", "1", "--no-mcp")
    with LiveServer(store, *args) as server:
        pid = server.proc.pid
        _wait_children(pid, 1)
        peak = 0.0
        with ThreadPoolExecutor(1) as pool:
            answer = pool.submit(
                httpx.post, server.url + "/v1/sql", json={"query": WIDE}, timeout=60
            )
            while not answer.done():
                assert httpx.get(server.url + "/healthz", timeout=30).status_code == 200
                peak = max(peak, _rss_mb(pid))
                time.sleep(0.05)
            r = answer.result()
        assert r.status_code == 413, r.text
        assert r.json()["error"].startswith("the query needs more memory than the server gives")
        assert peak < RSS_BOUND_MB, peak
        ok = httpx.post(server.url + "/v1/sql", json={"query": "SELECT count(*) AS n FROM events"})
        assert ok.status_code == 200 and ok.json()["rows"] == [{"n": 3}]


def test_fifty_hostile_queries_leave_the_server_small_and_answering(store: str) -> None:
    args = ("--sql-memory-mb", "64", "--sql-timeout", "2", "--sql-concurrency", "2")
    with LiveServer(store, *args, "--sql-queue", "4") as server:
        pid = server.proc.pid
        url = server.url
        _wait_children(pid, 2)

        def hostile(i: int) -> int:
            query = WIDE if i % 2 else CROSS
            return httpx.post(url + "/v1/sql", json={"query": query}, timeout=120).status_code

        with ThreadPoolExecutor(50) as pool:
            answers = pool.map(hostile, range(50))
            time.sleep(1.0)
            for _ in range(10):
                assert httpx.get(url + "/healthz", timeout=30).status_code == 200
                assert _rss_mb(pid) < RSS_BOUND_MB
                time.sleep(0.2)
            got = list(answers)
        assert set(got) <= {413, 503, 504} and 503 in got, got
        assert _rss_mb(pid) < RSS_BOUND_MB
        r = httpx.post(url + "/v1/sql", json={"query": "SELECT count(*) AS n FROM events"})
        assert r.status_code == 200 and r.json()["rows"] == [{"n": 3}]


def test_a_client_that_leaves_kills_its_query_process(store: str) -> None:
    args = ("--sql-timeout", "600", "--sql-concurrency", "1", "--sql-queue", "0", "--no-mcp")
    with LiveServer(store, *args) as server:
        pid = server.proc.pid
        (first,) = _wait_children(pid, 1)
        with pytest.raises(httpx.TimeoutException):
            httpx.post(server.url + "/v1/sql", json={"query": CROSS}, timeout=1.5)
        deadline = time.monotonic() + 10
        while os.path.exists(f"/proc/{first}") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not os.path.exists(f"/proc/{first}"), "the query process still runs"
        (second,) = _wait_children(pid, 1)
        assert second != first
        r = httpx.post(server.url + "/v1/sql", json={"query": "SELECT 1 AS a"}, timeout=30)
        assert r.status_code == 200 and r.json()["rows"] == [{"a": 1}]
