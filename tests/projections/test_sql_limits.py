"""Bounded SQL (issue 26, item 4): time, memory, threads, rows and bytes of one query, and
a server that stays responsive while hostile queries run, stopping them when their client
leaves. The server tests run ``evolog serve`` / ``evolog mcp`` in real processes."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from evolog.eventlog import Attempt, EventLog, Outcome, Signal
from evolog.projections import Cancel, Projections, QueryLimitError, QueryLimits
from evolog.projections._errors import InvalidParameterError, QueryError, RefusedQueryError
from evolog.projections._sqlproc import SqlPool

from evolog.cli._main import main

T0 = 1_767_225_600_000_000
#: A query that would run for hours: the product of 1e8 and 1e6 rows.
CROSS = "SELECT count(*) AS n FROM range(100000000) a, range(1000000) b"
CROSS_ROWS = "SELECT a.range AS x FROM range(100000000) a, range(1000000) b"
#: 2 GB of strings in a SELECT list, which DuckDB's memory_limit does not count: the server
#: runs it in a query process the OS caps, so it is a memory error, not a bigger server.
WIDE = "SELECT repeat('x', 1000000) AS s FROM range(2048)"
#: The server's RSS bound while those run: its own working set, far below one such result.
RSS_BOUND_MB = 600


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("limits") / "store"
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


# -- one query, from Python --------------------------------------------------------------------
def test_a_query_past_its_time_limit_is_stopped(store: str) -> None:
    with pytest.raises(QueryLimitError, match=r"time limit of 0\.5 s") as caught:
        Projections(store).sql(CROSS, limits=QueryLimits(timeout=0.5))
    assert caught.value.kind == "time"


def test_a_query_past_its_memory_limit_fails(store: str) -> None:
    query = "SELECT string_agg(x::VARCHAR, ',') AS s FROM range(100000000) t(x)"
    with pytest.raises(QueryLimitError, match="memory than its limit of 64 MiB") as caught:
        Projections(store).sql(query, limits=QueryLimits(memory_mb=64))
    assert caught.value.kind == "memory"


def test_max_rows_stops_the_query_instead_of_cutting_its_result(store: str) -> None:
    # The whole result has 1e14 rows: only a streamed fetch can return the first three.
    got = Projections(store).sql(CROSS_ROWS, limits=QueryLimits(max_rows=3))
    assert got.num_rows == 3 and got.column_names == ["x"]


def test_a_result_past_its_byte_limit_fails(store: str) -> None:
    query = "SELECT repeat('x', 1000) AS s FROM range(100000)"
    with pytest.raises(QueryLimitError, match="larger than its limit of 1000000 bytes") as caught:
        Projections(store).sql(query, limits=QueryLimits(max_bytes=1_000_000))
    assert caught.value.kind == "size"
    small = Projections(store).sql(query, limits=QueryLimits(max_bytes=1_000_000, max_rows=10))
    assert small.num_rows == 10


def test_a_query_cancelled_from_another_thread_stops(store: str) -> None:
    cancel = Cancel()
    threading.Timer(0.3, cancel.cancel, ["stopped by the test"]).start()
    with pytest.raises(QueryLimitError, match="stopped by the test") as caught:
        Projections(store).sql(CROSS, cancel=cancel)
    assert caught.value.kind == "cancel"
    early = Cancel()
    early.cancel()  # before the query starts: it never runs to the end either
    with pytest.raises(QueryLimitError, match="cancelled"):
        Projections(store).sql(CROSS, cancel=early)


def test_memory_and_threads_are_set_on_the_query_connection(store: str) -> None:
    query = "SELECT current_setting('threads') AS t, current_setting('memory_limit') AS m"
    got = Projections(store).sql(query, limits=QueryLimits(threads=1, memory_mb=256))
    assert got.to_pylist() == [{"t": 1, "m": "256.0 MiB"}]
    # and no progress bar drawn on the server's terminal by a long query
    bar = Projections(store).sql("SELECT current_setting('enable_progress_bar') AS b")
    assert bar.to_pylist() == [{"b": False}]


@pytest.mark.parametrize(
    ("field", "value"),
    [("timeout", 0), ("timeout", float("inf")), ("threads", True), ("max_rows", 0)],
)
def test_bad_limits_are_refused(field: str, value: object) -> None:
    with pytest.raises(InvalidParameterError, match=f"^{field}: expected"):
        QueryLimits(**{field: value})  # type: ignore[arg-type]


# -- the server's query processes, from Python -------------------------------------------------
def _run_in_thread(pool: SqlPool, store: str, query: str, cancel: Cancel | None = None) -> Any:
    box: list[Any] = []

    def target() -> None:
        try:
            box.append(pool.run(store, query, limits=QueryLimits(timeout=600), cancel=cancel))
        except Exception as exc:
            box.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    return thread, box


def test_a_query_process_that_dies_is_a_memory_error_and_is_replaced(store: str) -> None:
    pool = SqlPool(1, 64, 1 << 20)
    try:
        assert pool.run(store, "SELECT 1 AS a", limits=QueryLimits()).to_pylist() == [{"a": 1}]
        (pid,) = pool.pids()
        thread, box = _run_in_thread(pool, store, CROSS)
        time.sleep(1.0)
        os.kill(pid, signal.SIGKILL)  # as the kernel does to a process past its memory
        thread.join(30)
        (err,) = box
        assert isinstance(err, QueryLimitError) and err.kind == "memory", err
        assert str(err).startswith("the query's process ended (signal SIGKILL): it needed more")
        (new,) = pool.pids()
        assert new != pid
        got = pool.run(store, "SELECT count(*) AS n FROM events", limits=QueryLimits())
        assert got.to_pylist() == [{"n": 3}]
    finally:
        pool.close()


def test_a_cancelled_query_kills_its_process(store: str) -> None:
    pool = SqlPool(1, 64, 1 << 20)
    try:
        pool.run(store, "SELECT 1 AS a", limits=QueryLimits())
        (pid,) = pool.pids()
        cancel = Cancel()
        thread, box = _run_in_thread(pool, store, CROSS, cancel)
        time.sleep(1.0)
        cancel.cancel("the client went away; the query was stopped")
        thread.join(30)
        (err,) = box
        assert isinstance(err, QueryLimitError) and err.kind == "cancel", err
        assert not Path(f"/proc/{pid}").exists()
        (new,) = pool.pids()
        assert new != pid
        # The errors of the process come back as the projections' own.
        with pytest.raises(RefusedQueryError, match="got a COPY statement"):
            pool.run(store, "COPY (SELECT 1) TO '/tmp/x.csv'", limits=QueryLimits())
        with pytest.raises(QueryError, match="nosuch"):
            pool.run(store, "SELECT * FROM nosuch", limits=QueryLimits())
    finally:
        pool.close()


# -- the server --------------------------------------------------------------------------------
httpx = pytest.importorskip("httpx", reason="the dev extra (httpx) is not installed")
pytest.importorskip("starlette", reason="the server extra is not installed")

from _server_util import LiveServer  # noqa: E402


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for {pid}")


def _query_processes(pid: int, n: int = 1, timeout: float = 30.0) -> set[int]:
    """The server's child processes, once there are at least ``n``."""
    deadline = time.monotonic() + timeout
    while True:
        kids = set()
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    stat = (entry / "stat").read_text()
                except OSError:  # it ended meanwhile
                    continue
                if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                    kids.add(int(entry.name))
        if len(kids) >= n or time.monotonic() > deadline:
            return kids
        time.sleep(0.05)


def test_hostile_queries_time_out_and_the_server_keeps_answering(store: str) -> None:
    # Half cross joins (time), half repeat() (memory that DuckDB's limit does not see).
    args = ("--sql-timeout", "2", "--sql-concurrency", "2", "--sql-queue", "4")
    with LiveServer(store, *args, "--sql-memory-mb", "64") as server:
        url, pid = server.url, server.proc.pid
        assert len(_query_processes(pid, 2)) == 2  # started with the server

        def hostile(i: int) -> tuple[int, str]:
            query = WIDE if i % 2 else CROSS
            r = httpx.post(url + "/v1/sql", json={"query": query}, timeout=120)
            return r.status_code, r.json()["error"]

        with ThreadPoolExecutor(50) as pool:
            answers = [pool.submit(hostile, i) for i in range(50)]
            time.sleep(1.0)
            health, rss = [], []
            while not all(a.done() for a in answers) or not health:
                health.append(httpx.get(url + "/healthz", timeout=30).status_code)
                rss.append(_rss_mb(pid))
                time.sleep(0.1)
            edges = httpx.post(url + "/v1/edges", json={}, timeout=30).status_code
            got = [a.result() for a in answers]
        assert set(health) == {200} and edges == 200
        assert max(rss) < RSS_BOUND_MB, max(rss)
        kinds = Counter(status for status, _ in got)
        assert set(kinds) <= {413, 503, 504} and kinds[504] >= 1, got
        for status, error in got:
            if status == 504:
                assert error == "the query ran longer than its time limit of 2 s and was stopped"
            elif status == 413:
                assert error.startswith("the query needs more memory than the server gives a")
            else:
                assert "retry later" in error and "--sql-concurrency" in error
        # One alone: a clear memory error, and the server is as small as before.
        r = httpx.post(url + "/v1/sql", json={"query": WIDE}, timeout=60)
        assert r.status_code == 413, r.text
        assert "more memory than the server gives a query (DuckDB 64 MiB" in r.json()["error"]
        assert _rss_mb(pid) < RSS_BOUND_MB
        r = httpx.post(url + "/v1/sql", json={"query": "SELECT count(*) AS n FROM events"})
        assert r.status_code == 200 and r.json()["rows"] == [{"n": 3}]


def test_a_query_stops_when_its_client_goes_away(store: str) -> None:
    # One query at a time and none waiting: while the hostile query runs, any other query
    # is refused, so a query answered after the client left shows the first one returned.
    args = ("--sql-timeout", "600", "--sql-concurrency", "1", "--sql-queue", "0", "--no-mcp")
    with LiveServer(store, *args) as server:
        (first,) = _query_processes(server.proc.pid)
        with pytest.raises(httpx.TimeoutException):
            httpx.post(server.url + "/v1/sql", json={"query": CROSS}, timeout=1.5)
        codes = []
        for _ in range(50):
            r = httpx.post(server.url + "/v1/sql", json={"query": "SELECT 1 AS a"}, timeout=30)
            codes.append(r.status_code)
            if r.status_code == 200:
                break
            time.sleep(0.1)
        assert codes[-1] == 200 and set(codes[:-1]) <= {503}, codes
        # The query ran in a query process: killed when its client left, and replaced.
        assert not Path(f"/proc/{first}").exists(), "the query process still runs"
        (second,) = _query_processes(server.proc.pid)
        assert second != first
        before = _cpu_seconds(server.proc.pid) + _cpu_seconds(second)
        time.sleep(2.0)
        used = _cpu_seconds(server.proc.pid) + _cpu_seconds(second) - before
        # A query still running would use up to 2 s of CPU here; an idle server about 0.
        assert used < 0.5, used


def test_max_rows_is_applied_while_the_result_streams(store: str) -> None:
    with LiveServer(store, "--sql-timeout", "30") as server:
        body = {"query": CROSS_ROWS, "max_rows": 2}
        r = httpx.post(server.url + "/v1/sql", json=body, timeout=60)
        assert r.status_code == 200, r.text
        out = r.json()
        assert len(out["rows"]) == 2 and out["row_count"] == 2 and out["truncated"] is True


def test_mcp_sql_has_the_same_limits(store: str) -> None:
    pytest.importorskip("mcp", reason="the server extra is not installed")
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    argv = ["-m", "evolog", "--store", store, "mcp", "--sql-timeout", "1"]
    params = StdioServerParameters(command=sys.executable, args=argv, env=dict(os.environ))

    async def run() -> tuple[bool, str]:
        async with Client(params) as c:
            r = await c.call_tool("sql", {"query": CROSS})
            return r.is_error, r.content[0].text  # type: ignore[union-attr]

    is_error, text = asyncio.run(run())
    assert is_error and "time limit of 1 s" in text


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--sql-timeout", "0", "--sql-timeout: expected a positive number; got 0.0"),
        ("--sql-concurrency", "0", "--sql-concurrency: expected a positive integer; got 0"),
        ("--sql-queue", "-1", "--sql-queue: expected 0 or more; got -1"),
    ],
)
def test_bad_sql_limits_refuse_to_start(
    store: str, flag: str, value: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--store", store, "serve", flag, value]) == 2
    assert capsys.readouterr().err == f"evolog: error: {message}\n"
