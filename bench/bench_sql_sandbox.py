"""What the SQL sandbox costs, and whether a server under hostile SQL still answers.

    python bench/bench_sql_sandbox.py --events 1000000            # query cost, in process
    python bench/bench_sql_sandbox.py --server --hostile 50       # /healthz under load
    python bench/bench_sql_sandbox.py --server --wide             # ... under repeat() queries

Query cost: each query runs the way ``Projections.sql`` runs it now (segments as pyarrow
datasets registered on a DuckDB with no file system) and the way it ran before (DuckDB's
``read_parquet`` of the segment files, allowed by path), both from a fresh connection with
the views created, medians of interleaved runs. Seq filters must still prune: a query of
the last 1,000 seqs should cost far less than a full scan on both paths.

Server: ``evolog serve`` in its own process, ``--hostile`` cross joins posted at once from
another process, and /healthz probed every 100 ms from this one while they run; the figures
are the probe latencies (and, for reference, the same probes with no load first).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_projections import _medians, make_store

CROSS = "SELECT count(*) AS n FROM range(100000000) a, range(1000000) b"
#: The hostile client stands for remote callers: on this machine it shares the server's two
#: cores, so ``--nice-client`` runs it at the lowest priority, out of the server's way.
NICE: list[str] = []


def _old_path(store: Path, query: str) -> Callable[[], object]:
    """The query as ``Projections.sql`` ran it before the sandbox: read_parquet by path."""
    from evolog.eventlog import Snapshot
    from evolog.eventlog._store import Paths
    from evolog.projections._api import _referenced_names
    from evolog.projections._catalog import create_views
    from evolog.projections._source import Bounds, EventScan, connect

    def run() -> object:
        con = connect(catalog=True)
        try:
            only = _referenced_names(con, query)  # as Projections.sql: only the views named
            with Snapshot.take(Paths.of(store)) as snap:
                create_views(con, EventScan(con, snap, Bounds()), only)
            return con.sql(query).to_arrow_table()
        finally:
            con.close()

    return run


def _new_path(store: Path, query: str) -> Callable[[], object]:
    from evolog.projections import Projections

    proj = Projections(store)
    return lambda: proj.sql(query)


def query_cost(events: int, runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        t = time.perf_counter()
        make_store(store, events)
        print(f"store of {events:,} events written in {time.perf_counter() - t:.1f} s")
        last = events - 1000
        queries = {
            "count(*)": "SELECT count(*) FROM events",
            "GROUP BY kind": "SELECT kind, count(*) FROM events GROUP BY kind",
            "last 1000 seqs": f"SELECT count(*), max(ts) FROM events WHERE seq > {last}",
            "outcomes by gene": "SELECT gene, count(*) FILTER (WHERE status = 'success') "
            "AS s, count(*) AS n FROM outcomes GROUP BY gene",
        }
        print(f"{'query':<18} {'read_parquet (old)':>20} {'Arrow, sealed (new)':>20} {'ratio':>7}")
        for name, q in queries.items():
            med = _medians({"old": _old_path(store, q), "new": _new_path(store, q)}, runs)
            old, new = med["old"] * 1000, med["new"] * 1000
            print(f"{name:<18} {old:17.1f} ms {new:17.1f} ms {new / old:6.2f}x")
        # The server runs user SQL in a warm query process (projections/_sqlproc.py): what
        # that costs a query beyond running it in the calling process.
        from evolog.projections import QueryLimits
        from evolog.projections._sqlproc import SqlPool

        pool = SqlPool(1, 1024, 256 << 20)
        limits = QueryLimits(timeout=30, memory_mb=1024, threads=1, max_rows=201)
        try:
            pool.run(str(store), "SELECT 1", limits=limits)  # warm
            print(f"{'query':<18} {'in process':>20} {'query process':>20} {'extra':>9}")
            for name, q in {"SELECT 1": "SELECT 1 AS a", **queries}.items():
                here = _new_path(store, q)

                def there(q: str = q) -> object:
                    return pool.run(str(store), q, limits=limits)

                med = _medians({"here": here, "there": there}, runs)
                a, b = med["here"] * 1000, med["there"] * 1000
                print(f"{name:<18} {a:17.1f} ms {b:17.1f} ms {b - a:6.1f} ms")
        finally:
            pool.close()
        cold = [
            sys.executable,
            "-m",
            "evolog",
            "--store",
            str(store),
            "sql",
            "SELECT count(*) FROM events",
        ]

        def cold_run() -> object:
            return subprocess.run(cold, capture_output=True, check=True)

        med = _medians({"cold": cold_run}, max(3, runs // 2))
        print(f"cold `evolog sql count(*)` process (new): {med['cold'] * 1000:.0f} ms")


HOSTILE_CLIENT = """
import sys, threading, httpx
url, n, query = sys.argv[1], int(sys.argv[2]), sys.argv[3]
codes = []
def post():
    r = httpx.post(url + "/v1/sql", json={"query": query}, timeout=600)
    codes.append(r.status_code)
threads = [threading.Thread(target=post) for _ in range(n)]
for t in threads: t.start()
for t in threads: t.join()
print(" ".join(str(c) for c in sorted(codes)))
"""


def _probe(
    url: str, seconds: float, series: list[tuple[float, float]] | None = None
) -> list[float]:
    import httpx

    out = []
    start = time.monotonic()
    end = start + seconds
    with httpx.Client() as client:
        while time.monotonic() < end:
            t = time.perf_counter()
            client.get(url + "/healthz", timeout=30).raise_for_status()
            out.append(time.perf_counter() - t)
            if series is not None:
                series.append((time.monotonic() - start, out[-1]))
            time.sleep(0.1)
    return out


def _summary(lat: list[float]) -> str:
    ms = sorted(x * 1000 for x in lat)
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    return (
        f"n={len(ms)} median {statistics.median(ms):.1f} ms, p99 {p99:.1f} ms, max {ms[-1]:.1f} ms"
    )


WIDE = "SELECT repeat('x', 1000000) AS s FROM range(2048)"


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def server_load(
    hostile: int, timeout: float, concurrency: int, queue: int, query: str = CROSS
) -> None:
    repo = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(repo / "tests"))
    from _server_util import LiveServer, new_store

    with tempfile.TemporaryDirectory() as tmp:
        store = new_store(Path(tmp) / "store")
        args = (
            *("--sql-timeout", str(timeout), "--sql-concurrency", str(concurrency)),
            *("--sql-queue", str(queue), "--sql-memory-mb", "64"),
        )
        with LiveServer(store, *args) as server:
            print(f"/healthz, idle:                {_summary(_probe(server.url, 3))}")
            client = subprocess.Popen(
                [*NICE, sys.executable, "-c", HOSTILE_CLIENT, server.url, str(hostile), query],
                stdout=subprocess.PIPE,
                text=True,
            )
            series: list[tuple[float, float]] = []
            peak = [_rss_mb(server.proc.pid)]
            sampling = threading.Event()

            def sample() -> None:
                while not sampling.wait(0.05):
                    peak.append(_rss_mb(server.proc.pid))

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            lat = _probe(server.url, max(5.0, timeout * 2), series)
            out, _ = client.communicate(timeout=3600)
            sampling.set()
            sampler.join()
            print(f"server RSS: peak {max(peak):.0f} MB while they ran (--sql-memory-mb 64)")
            print(f"/healthz, {hostile} hostile queries: {_summary(lat)}")
            later = [x for at, x in series if at >= 2.0]
            print(f"  the same, from 2 s after they were posted: {_summary(later)}")
            print(
                "  probes (s after posting: ms): "
                + ", ".join(f"{at:.1f}: {x * 1000:.0f}" for at, x in series)
            )
            codes = out.split()
            counts = {c: codes.count(c) for c in sorted(set(codes))}
            print(f"hostile queries answered: {counts} (504: time, 413: memory, 503: refused)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--server", action="store_true", help="the /healthz-under-load figures")
    ap.add_argument("--hostile", type=int, default=50)
    ap.add_argument("--sql-timeout", type=float, default=5.0)
    ap.add_argument("--sql-concurrency", type=int, default=2)
    ap.add_argument("--sql-queue", type=int, default=8)
    ap.add_argument("--wide", action="store_true", help="hostile repeat() queries, not joins")
    ap.add_argument("--nice-client", action="store_true", help="run the hostile client at nice 19")
    args = ap.parse_args()
    if args.nice_client:
        NICE.extend(["nice", "-n", "19"])
    if args.server:
        query = WIDE if args.wide else CROSS
        server_load(args.hostile, args.sql_timeout, args.sql_concurrency, args.sql_queue, query)
    else:
        query_cost(args.events, args.runs)


if __name__ == "__main__":
    main()
