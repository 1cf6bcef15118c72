"""Iceberg publishing and querying (issue 19); every figure is a ratio to a baseline run here.

    python bench/bench_iceberg.py                      # small, a check that it all runs
    python bench/bench_iceberg.py --events 10000000 --query-events 1000000 --runs 3

1. Publish: ``evolog.iceberg.publish`` of a sealed store of ``--events`` events into a new
   table, against pyiceberg's ``Table.add_files`` alone on the same files into a new table
   of the same schema (goal: <= 5 s at 1e7 events and <= 1.2x add_files). Both run in this
   process, pyiceberg already imported, alternating, the median of ``--runs``.
2. Query: a GROUP BY through ``evolog sql --iceberg`` over a table of 3 stores of
   ``--query-events`` each, against the same query through ``evolog sql`` on one store of
   3x as many events (goal: <= 2x). Measured twice: as cold commands (fresh interpreters,
   as a user runs them; the iceberg side pays for importing pyiceberg and SQLAlchemy), and
   in one process (``iceberg_sql`` against ``Projections.sql``, imports done).

Every figure is given as wall time and as CPU time (user + system, every thread; of the
child for the cold commands), with the ratios of both: on a loaded machine the CPU ratio
is the steadier one.

3. Fleet (``--fleet``, instead of 1 and 2): 3 stores of ``--query-events`` each published
   to a table in S3 (moto's server) with its catalog in PostgreSQL (a cluster of its own),
   both on loopback, as tests/iceberg/test_iceberg_fleet.py runs them: each publish (segments
   uploaded, then one commit) against the same publish into a local warehouse, and the
   GROUP BY read back from S3 (in process, and as a cold `evolog sql --iceberg`) against
   the local table. Loopback S3 has no network latency: the figures are the client's cost.

Stores are written the fast way of bench_projections (synthetic Arrow tables sealed by the
log's own segment writer).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_projections import make_store

ROOT = Path(__file__).resolve().parents[1]
QUERY = (
    "SELECT kind, count(*) AS n, avg(score) AS avg_score FROM events GROUP BY kind ORDER BY kind"
)


def bench_publish(base: Path, events: int, runs: int) -> dict[str, float]:
    from evolog.eventlog.sealed._arrow import SCHEMA
    from evolog.eventlog.sealed._manifest import FileCommitter
    from pyiceberg.catalog.sql import SqlCatalog

    from evolog.iceberg import publish
    from evolog.iceberg._schema import load_or_create

    store = base / "pub-store"
    make_store(store, events)
    manifest = FileCommitter(str(store / "manifest.json")).load()
    files = [f"file://{store.resolve() / 'segments' / s.file}" for s in manifest.segments]

    def new_table(wh: Path) -> None:
        wh.mkdir()
        cat = SqlCatalog("evolog", uri=f"sqlite:///{wh}/catalog.db", warehouse=f"file://{wh}")
        load_or_create(cat, ("evolog", "events"), SCHEMA)

    def ours(i: int) -> tuple[float, float]:
        new_table(base / f"wh-ours-{i}")  # both start from an empty table
        start, cpu = time.perf_counter(), _cpu(resource.RUSAGE_SELF)
        result = publish(store, str(base / f"wh-ours-{i}"), store_id="bench")
        took = time.perf_counter() - start, _cpu(resource.RUSAGE_SELF) - cpu
        assert result.added_rows == events, result
        return took

    def add_files_alone(i: int) -> tuple[float, float]:
        wh = base / f"wh-base-{i}"
        new_table(wh)
        start, cpu = time.perf_counter(), _cpu(resource.RUSAGE_SELF)
        cat = SqlCatalog("evolog", uri=f"sqlite:///{wh}/catalog.db", warehouse=f"file://{wh}")
        cat.load_table("evolog.events").add_files(files)
        return time.perf_counter() - start, _cpu(resource.RUSAGE_SELF) - cpu

    ours(-1), add_files_alone(-1)  # warm the imports and the page cache for both
    pairs = [(ours(i), add_files_alone(i)) for i in range(runs)]
    return {"segments": len(files), **_ratios(pairs, "publish", "add_files")}


def _cpu(who: int) -> float:
    """User + system CPU seconds of this process (every thread) or of its children."""
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def _ratios(
    pairs: list[tuple[tuple[float, float], tuple[float, float]]], ours: str, theirs: str
) -> dict[str, float]:
    """Medians of wall and CPU seconds, and their ratios: under load (other processes on
    the cores) the wall times wander, the CPU times much less."""
    out = {}
    for kind, i in (("s", 0), ("cpu_s", 1)):
        mine = statistics.median(p[0][i] for p in pairs)
        base = statistics.median(p[1][i] for p in pairs)
        out[f"{ours}_{kind}"] = round(mine, 3)
        out[f"{theirs}_{kind}"] = round(base, 3)
        out["ratio" if kind == "s" else "cpu_ratio"] = round(mine / base, 3)
    return out


def _cold(args: list[str]) -> tuple[float, float]:
    start, cpu = time.perf_counter(), _cpu(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(
        [sys.executable, "-m", "evolog", *args], cwd=ROOT, capture_output=True, check=False
    )
    took = time.perf_counter() - start, _cpu(resource.RUSAGE_CHILDREN) - cpu
    if proc.returncode != 0:
        raise SystemExit(f"evolog {' '.join(args)} failed: {proc.stderr.decode()}")
    return took


def bench_query(base: Path, events: int, runs: int) -> dict[str, dict[str, float]]:
    from evolog.projections import Projections

    from evolog.iceberg import iceberg_sql, publish

    wh = base / "wh-query"
    for i in range(3):
        make_store(base / f"q{i}", events, seed=11 + i)
        publish(base / f"q{i}", str(wh), store_id=f"store-{i}")
    whole = base / "q-all"
    make_store(whole, 3 * events, seed=11)
    target = f"{wh}:evolog.events"
    assert iceberg_sql(target, "SELECT count(*) AS n FROM events")["n"][0].as_py() == 3 * events
    ice = ["sql", "--iceberg", target, QUERY, "--format", "csv"]
    one = ["--store", str(whole), "sql", QUERY, "--format", "csv"]
    _cold(ice), _cold(one)  # warm the page cache
    cold = [(_cold(ice), _cold(one)) for _ in range(runs)]

    def warm_ice() -> tuple[float, float]:
        start, cpu = time.perf_counter(), _cpu(resource.RUSAGE_SELF)
        iceberg_sql(target, QUERY)
        return time.perf_counter() - start, _cpu(resource.RUSAGE_SELF) - cpu

    def warm_one() -> tuple[float, float]:
        start, cpu = time.perf_counter(), _cpu(resource.RUSAGE_SELF)
        Projections(whole).sql(QUERY)
        return time.perf_counter() - start, _cpu(resource.RUSAGE_SELF) - cpu

    warm_ice(), warm_one()
    warm = [(warm_ice(), warm_one()) for _ in range(runs)]
    return {
        "cold": _ratios(cold, "iceberg", "one_store"),
        "in_process": _ratios(warm, "iceberg", "one_store"),
    }


def bench_fleet(base: Path, events: int, runs: int) -> dict[str, object]:
    """Publish and query a 3-store table in S3 + PostgreSQL against a local one."""
    import os

    sys.path.insert(0, str(ROOT / "tests"))
    from _iceberg_servers import postgres, s3_server

    from evolog.iceberg import iceberg_sql, publish

    stores = [base / f"f{i}" for i in range(3)]
    for i, store in enumerate(stores):
        make_store(store, events, seed=21 + i)
    with s3_server() as s3, postgres() as pg:
        env = s3.env()
        os.environ.update({k: v for k, v in env.items() if k.startswith("AWS_")})
        bucket = s3.new_bucket()
        catalog, warehouse = pg.new_database(), f"s3://{bucket}/fleet"
        local = base / "wh-fleet-local"
        publish(stores[0], str(base / "wh-warmup"), store_id="warm")  # imports, not timed
        remote_s, local_s, uploaded = [], [], 0
        for i, store in enumerate(stores):
            start = time.perf_counter()
            result = publish(store, catalog, store_id=f"store-{i}", warehouse=warehouse)
            remote_s.append(time.perf_counter() - start)
            uploaded += result.uploaded_files
            start = time.perf_counter()
            publish(store, str(local), store_id=f"store-{i}")
            local_s.append(time.perf_counter() - start)
        again = time.perf_counter()
        assert publish(stores[0], catalog, store_id="store-0", warehouse=warehouse).added_files == 0
        again = time.perf_counter() - again
        s3_target, local_target = f"{catalog}:evolog.events", f"{local}:evolog.events"
        same = ["kind", "n"]  # (the float average may differ in its last bits by read order)
        assert iceberg_sql(s3_target, QUERY).select(same) == iceberg_sql(
            local_target, QUERY
        ).select(same)

        def timed(target: str) -> float:
            start = time.perf_counter()
            iceberg_sql(target, QUERY)
            return time.perf_counter() - start

        read_s3 = statistics.median(timed(s3_target) for _ in range(runs))
        read_local = statistics.median(timed(local_target) for _ in range(runs))
        cold = ["sql", "--iceberg", s3_target, QUERY, "--format", "csv"]
        cold_s3 = statistics.median(_cold(cold)[0] for _ in range(runs))
    return {
        "publish_s3_pg_s": [round(x, 3) for x in remote_s],
        "publish_local_s": [round(x, 3) for x in local_s],
        "publish_total_s3_pg_s": round(sum(remote_s), 3),
        "publish_total_local_s": round(sum(local_s), 3),
        "segments_uploaded": uploaded,
        "republish_nothing_new_s": round(again, 3),
        "read_s3_in_process_s": round(read_s3, 3),
        "read_local_in_process_s": round(read_local, 3),
        "read_s3_cold_command_s": round(cold_s3, 3),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--events", type=int, default=200_000, help="events of the published store")
    p.add_argument("--query-events", type=int, default=100_000, help="events per query store")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--fleet", action="store_true", help="only the S3 + PostgreSQL fleet (3.)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-iceberg-") as tmp:
        base = Path(tmp)
        if args.fleet:
            fleet = bench_fleet(base, args.query_events, args.runs)
            print(f"fleet of 3 x {args.query_events:,} events, S3 + PostgreSQL: {fleet}")
            return
        pub = bench_publish(base, args.events, args.runs)
        print(f"publish {args.events:,} events: {pub}")
        query = bench_query(base, args.query_events, args.runs)
        print(f"GROUP BY over 3 x {args.query_events:,} events: {query}")


if __name__ == "__main__":
    main()
