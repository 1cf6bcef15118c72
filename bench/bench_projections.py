"""Projection benchmarks; every figure is a ratio to a baseline measured in the same run.

    python bench/bench_projections.py --events 1000000
    python bench/bench_projections.py --events 10000000 --runs 3

The synthetic store is written the fast way: Arrow tables built in the events SCHEMA with
numpy, sealed with the log's own ``eventlog.sealed._segments.write_segment`` (the code path a seal
uses) and committed by one manifest update. The incremental step appends real events with
``EventLog.append_many(durability='none')`` (they sit in the WAL tail), then seals them.
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from evolog.eventlog import Attempt, EventLog, Outcome, Step, init_store
from evolog.eventlog.sealed._arrow import SCHEMA, TS_TYPE
from evolog.eventlog.sealed._manifest import FileCommitter, Manifest
from evolog.eventlog.sealed._segments import write_segment

CYCLE = ("signal", "hypothesis", "attempt", "step", "step", "outcome")
SEGMENT_ROWS = 256 * 1024  # what a seal writes per segment
START_US = 1_735_689_600_000_000  # 2025-01-01T00:00:00Z
SPAN_US = 365 * 86_400_000_000
KEYS = 2_000
GENES = 40
GENES_PER_KEY = 6
ROOT = Path(__file__).resolve().parents[1]
ALPHABET = np.frombuffer(b"0123456789ABCDEFGHJKMNPQRSTVWXYZ", dtype=np.uint8)


def _strings(values: np.ndarray, names: list[str], mask: np.ndarray | None = None) -> pa.Array:
    """A string column from category codes (``mask`` true = null)."""
    codes = pa.array(values.astype(np.int32), mask=mask)
    return pa.DictionaryArray.from_arrays(codes, pa.array(names)).cast(pa.string())


def _random_ids(rng: np.random.Generator, n: int, width: int = 26) -> pa.Array:
    chars = ALPHABET[rng.integers(0, len(ALPHABET), size=n * width)]
    offsets = np.arange(0, (n + 1) * width, width, dtype=np.int32)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(chars)])


def synth_table(
    first_seq: int, n: int, total: int, seed: int, bare_fraction: float = 0.0
) -> pa.Table:
    """Rows ``first_seq .. first_seq+n-1`` of a synthetic history of ``total`` events.

    Cycles of signal, hypothesis, attempt, two steps and an outcome share an action id, a
    signal key and a gene; a ``bare_fraction`` of outcomes carries neither key nor gene (they
    fall back to their attempt's); timestamps advance with seq with up to an hour of jitter.
    """
    rng = np.random.default_rng(seed + first_seq)
    seq = np.arange(first_seq, first_seq + n, dtype=np.int64)
    cycle = (seq - 1) // len(CYCLE)
    pos = ((seq - 1) % len(CYCLE)).astype(np.int32)
    crng = np.random.default_rng(seed)  # per-cycle values must not depend on the chunking
    n_cycles = int((total + len(CYCLE) - 1) // len(CYCLE)) + 1
    key_of = (crng.zipf(1.3, size=n_cycles) - 1) % KEYS
    gene_of = (key_of * 7 + crng.integers(0, GENES_PER_KEY, size=n_cycles)) % GENES
    good = ((key_of * 31 + gene_of * 17) % 10) / 10.0
    ok_of = crng.random(n_cycles) < good
    k, g, ok = key_of[cycle], gene_of[cycle], ok_of[cycle]
    kind = np.asarray(pos)
    is_outcome = kind == 5
    bare = is_outcome & (rng.random(n) < bare_fraction)
    ts = START_US + (seq * (SPAN_US / max(total, 1))).astype(np.int64)
    ts += rng.integers(0, 3_600_000_000, size=n)
    has_key = np.isin(kind, (0, 1, 2, 5)) & ~bare
    has_gene = np.isin(kind, (1, 2, 5)) & ~bare
    has_action = np.isin(kind, (2, 3, 4, 5))
    cols: dict[str, pa.Array] = {
        "seq": pa.array(seq),
        "id": _random_ids(rng, n),
        "ts": pa.array(ts).cast(TS_TYPE),
        "kind": _strings(kind, list(CYCLE)),
        "agent": _strings(cycle % 4, [f"agent-{i}" for i in range(4)]),
        "source": _strings(np.zeros(n), ["real"]),
        "v": pa.array(np.ones(n, dtype=np.int64)),
        "key": _strings(
            np.where(bare, KEYS, k),
            [f"errsig:E{i:04d}" for i in range(KEYS)] + [""],
            mask=~(has_key | bare),
        ),
        "gene": _strings(g, [f"gene_{i:02d}" for i in range(GENES)], mask=~has_gene),
        "action_id": pa.array(np.char.add("act-", cycle.astype("U12")), mask=~has_action),
        "index": pa.array(np.where(kind == 4, 1, 0), mask=~np.isin(kind, (3, 4))),
        "status": _strings(ok.astype(np.int32), ["failed", "success"], mask=~is_outcome),
        "score": pa.array(ok.astype(np.float64), mask=~is_outcome),
    }
    arrays = [cols.get(f.name, pa.nulls(n, f.type)).cast(f.type) for f in SCHEMA]
    return pa.Table.from_arrays(arrays, schema=SCHEMA)


def make_store(path: Path, total: int, seed: int = 7, bare: float = 0.0) -> None:
    """A sealed store of ``total`` synthetic events."""
    paths = init_store(path)
    infos = []
    for first in range(1, total + 1, SEGMENT_ROWS):
        n = min(SEGMENT_ROWS, total - first + 1)
        infos.append(write_segment(paths.segments, synth_table(first, n, total, seed, bare)))
    FileCommitter(paths.manifest).commit(Manifest(version=1, sealed_seq=total, segments=infos))


def new_events(n: int, start_ts: int, tag: str) -> list[Attempt | Step | Outcome]:
    """``n`` real events (attempt, step, outcome cycles) for the incremental step."""
    out: list[Attempt | Step | Outcome] = []
    for i in range(n // 3):
        act = f"{tag}-{i}"
        ts = start_ts + i * 1_000_000
        key, gene = f"errsig:E{i % 50:04d}", f"gene_{i % GENES:02d}"
        out.append(Attempt(action_id=act, key=key, gene=gene, ts=ts, agent="bench"))
        out.append(Step(action_id=act, index=0, action="run", ts=ts + 1, agent="bench"))
        status = "success" if i % 3 else "failed"
        out.append(
            Outcome(action_id=act, key=key, gene=gene, status=status, ts=ts + 2, agent="bench")
        )
    return out


def _medians(fns: dict[str, Callable[[], object]], runs: int) -> dict[str, float]:
    """Median seconds of each function, the runs interleaved so noise hits all alike."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(runs):
        for name, fn in fns.items():
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    return {k: statistics.median(v) for k, v in times.items()}


def _raw_group_by(store: Path) -> Callable[[], object]:
    import duckdb

    files = sorted(str(p) for p in (store / "segments").glob("*.parquet"))
    con = duckdb.connect(config={"autoinstall_known_extensions": False})
    sql = (
        "SELECT key, gene, count(*) FILTER (WHERE status = 'success') AS s, "
        "count(*) FILTER (WHERE status = 'failed') AS f, count(*) AS n, min(ts), max(ts) "
        f"FROM read_parquet({files!r}) WHERE kind = 'outcome' GROUP BY key, gene"
    )
    return lambda: con.sql(sql).to_arrow_table()


def _rebuild(proj: Any) -> None:
    proj.clear_cache()
    proj.refresh()


def full_rebuild(store: Path, runs: int) -> None:
    """Edge stats from scratch vs DuckDB's raw GROUP BY over the same segments."""
    from evolog.projections._api import Projections

    now = START_US + SPAN_US
    cached = Projections(store)
    fns: dict[str, Callable[[], object]] = {
        "raw GROUP BY": _raw_group_by(store),
        "full rebuild, newest": lambda: Projections(store, cache=False).edges(now=now),
        "full rebuild, per_event": lambda: Projections(store, cache=False).edges(
            now=now, mode="per_event"
        ),
        "checkpoint rebuild (to file)": lambda: _rebuild(cached),
    }
    med = _medians(fns, runs)
    base = med["raw GROUP BY"]
    for name, sec in med.items():
        print(f"  {name:<30} {sec * 1000:8.1f} ms   ratio {sec / base:5.2f}")


def incremental(store: Path, runs: int, batch: int = 10_000) -> None:
    """Refresh after ``batch`` new events: in the WAL tail, and sealed into a segment."""
    from evolog.projections._api import Projections

    proj = Projections(store)
    proj.refresh()
    wal, sealed, query = [], [], []
    with EventLog(store, durability="none", auto_seal="off") as log:
        for r in range(runs):
            log.append_many(new_events(batch, START_US + SPAN_US + r * 10**10, f"w{r}"))
            t = time.perf_counter()
            proj.refresh()
            wal.append(time.perf_counter() - t)
            log.seal()
            log.append_many(new_events(batch, START_US + SPAN_US + r * 10**10 + 5, f"s{r}"))
            log.seal()
            t = time.perf_counter()
            proj.refresh()
            sealed.append(time.perf_counter() - t)
            t = time.perf_counter()
            proj.edges(now=START_US + SPAN_US)
            query.append(time.perf_counter() - t)
    print(f"  refresh, {batch} events in the WAL tail   {statistics.median(wal) * 1000:8.1f} ms")
    print(f"  refresh, {batch} events sealed           {statistics.median(sealed) * 1000:8.1f} ms")
    print(f"  edges() from the refreshed checkpoint   {statistics.median(query) * 1000:8.1f} ms")


def cold_sql(store: Path, runs: int) -> None:
    """A cold ``evolog sql "SELECT count(*) FROM events"`` vs a bare DuckDB process.

    Our packages are byte-compiled first, as an installed package is (PYTHONDONTWRITEBYTECODE
    would otherwise make every run compile them from source).
    """
    for pkg in ("eventlog", "evolog", "projections"):
        compileall.compile_dir(str(ROOT / pkg), quiet=1)
    files = sorted(str(p) for p in (store / "segments").glob("*.parquet"))
    query = f"SELECT count(*) FROM read_parquet({files!r})"
    base = [
        sys.executable,
        "-c",
        f"import duckdb, pyarrow; duckdb.connect().sql({query!r}).to_arrow_table()",
    ]
    args = ["--store", str(store), "sql", "SELECT count(*) FROM events", "--format", "csv"]
    ours = [sys.executable, "-m", "evolog", *args]

    def run(cmd: list[str]) -> Callable[[], object]:
        return lambda: subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)

    med = _medians(
        {"python + duckdb + pyarrow count(*)": run(base), "evolog sql count(*)": run(ours)}, runs
    )
    b, o = med["python + duckdb + pyarrow count(*)"], med["evolog sql count(*)"]
    print(
        f"  cold evolog sql count(*)   {o * 1000:7.1f} ms (goal <= 300)  vs bare process "
        f"{b * 1000:6.1f} ms -> ratio {o / b:.2f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument(
        "--bare",
        type=float,
        default=0.0,
        help="fraction of outcomes without key and gene (resolved via attempts)",
    )
    ap.add_argument(
        "--dir", help="an existing directory to hold the temporary store (default: $TMPDIR)"
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        store = Path(tmp) / f"store-{args.events}"
        t = time.perf_counter()
        make_store(store, args.events, bare=args.bare)
        print(
            f"{args.events} events ({args.bare:.0%} bare outcomes), store written in "
            f"{time.perf_counter() - t:.1f} s; medians of {args.runs} runs"
        )
        full_rebuild(store, args.runs)
        cold_sql(store, args.runs)
        incremental(store, args.runs)
        os.sync()


if __name__ == "__main__":
    main()
