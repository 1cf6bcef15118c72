"""First and warm answers on large stores never seen before (issue 29, items 3 and 5).

    python bench/bench_scale.py                       # 1e5 and 1e6 events
    python bench/bench_scale.py --events 1e7 --ops advise ledger edges duckdb
    python bench/bench_scale.py --events 1e6 --profile advise   # cProfile of a first answer

Stores are synthetic and built here (never stored in the repo): evolver-shaped cycles
written as Parquet segments the fast way (``bench_advice_latency.make_store``), then
``--notes`` memory notes appended through ``EventLog`` and sealed, so that recall and route
have items and the ledger has entries. Each operation runs in a fresh process on a store
whose ``cache/`` was emptied first (the first answer), then once more in that process (the
warm answer); the child reports both, in wall and in CPU time (the latter means more on a
shared machine; DuckDB's threads make it exceed the wall time), and its peak RSS (VmHWM). ``sql`` is
``evolog sql``'s GROUP BY over the edges' key columns of the events view; ``duckdb`` is
DuckDB's own GROUP BY over the same segment files in the same run, the floor the folds are
measured against. ``edges`` is the edge projection's first fold alone.

``--plot`` writes bench/scale_first_answer.png from the JSON lines of earlier runs
(``--json`` appends each row to a file).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_advice_latency import NOW_US, key_sets, make_store
from evolog.eventlog import EventLog, Note

TOPICS = ["deploy", "database", "testing", "frontend", "security", "docs", "cloud", "git"]
OPS = ("advise", "recall", "route", "ledger", "edges", "sql", "duckdb")
GROUP_BY = (
    "SELECT key, gene, count(*) AS n FROM events "
    "WHERE kind = 'outcome' OR kind = 'attempt' GROUP BY key, gene"
)

# What each child does, twice: the first call on an empty cache, then the warm one.
_CHILD = r"""
import json, sys, time
op, store, now = sys.argv[1], sys.argv[2], int(sys.argv[3])
t0 = time.perf_counter()
def run(mem):
    if op == "advise":
        genes = [{"type": "Gene", "id": f"gene_{i}"} for i in range(10)]
        return mem.advise(["sig_0001", "sig_0002"], genes, now=now)
    if op == "recall":
        return mem.recall("deploy lesson about deploy work", record=False)
    if op == "route":
        return mem.route("deploy lesson about deploy work")
    if op == "ledger":
        return len(mem.ledger().ids)
    if op == "edges":
        return mem.projections().edges().num_rows
    if op == "sql":
        return mem.sql(sys.argv[4]).num_rows
    if op == "duckdb":
        import duckdb, glob
        files = sorted(glob.glob(store + "/segments/*.parquet"))
        q = sys.argv[4].replace("FROM events", f"FROM read_parquet({files!r})")
        return len(duckdb.sql(q).fetchall())
    raise SystemExit(op)
import evolog
times, cpu = [], []
for _ in range(2):
    with evolog.Memory(store) as mem:
        t, c = time.perf_counter(), time.process_time()
        run(mem)
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
hwm = 0.0
for line in open("/proc/self/status"):
    if line.startswith("VmHWM:"):
        hwm = int(line.split()[1]) / 1024
print(json.dumps({"first_s": times[0], "warm_s": times[1], "first_cpu_s": cpu[0],
                  "warm_cpu_s": cpu[1], "process_s": time.perf_counter() - t0,
                  "peak_rss_mib": hwm}))
"""

_PROFILE = r"""
import cProfile, pstats, sys
sys.argv = [sys.argv[0], *sys.argv[1:]]
src = open(sys.argv[-1]).read()
sys.argv = sys.argv[:-1]
cProfile.run(compile(src, "child", "exec"), sys.argv[0] + ".prof")
"""


def build(path: Path, events: int, notes: int) -> float:
    t = time.perf_counter()
    make_store(path, events, key_sets(1000, seed=1000))
    with EventLog(str(path), durability="none", auto_seal="off") as log:
        log.append_many(
            Note(text=f"{TOPICS[i % len(TOPICS)]}: lesson {i} about {TOPICS[i % len(TOPICS)]} "
                 f"work, step {i % 13} before step {i % 7}", branch=TOPICS[i % len(TOPICS)])
            for i in range(notes)
        )  # fmt: skip
        log.seal()
    return time.perf_counter() - t


def child(op: str, store: Path, profile: bool) -> dict[str, Any]:
    shutil.rmtree(store / "cache", ignore_errors=True)
    (store / "cache").mkdir()
    args = [op, str(store), str(NOW_US), GROUP_BY]
    if profile:
        script = store.parent / "child.py"
        script.write_text(_CHILD)
        prof = store.parent / f"{op}"
        cmd = [sys.executable, "-c", _PROFILE.replace("sys.argv[0] + ", repr(str(prof)) + " + ")]
        proc = subprocess.run([*cmd, *args, str(script)], capture_output=True, text=True)
    else:
        proc = subprocess.run([sys.executable, "-c", _CHILD, *args], capture_output=True, text=True)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1:]}
    row: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    if profile:
        import pstats

        stats = pstats.Stats(str(prof) + ".prof")
        stats.sort_stats("cumulative").print_stats(35)
    return row


def plot(rows: list[dict[str, Any]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for op in OPS:
        pts = sorted((r["events"], r[op]["first_s"]) for r in rows if "first_s" in r.get(op, {}))
        if pts:
            ax.loglog(*zip(*pts, strict=True), marker="o", label=op)
    ax.set_xlabel("events in the store")
    ax.set_ylabel("first answer (s), fresh process, empty cache")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--events", type=lambda v: int(float(v)), nargs="+", default=[100_000, 1_000_000]
    )
    ap.add_argument("--notes", type=int, default=2000)
    ap.add_argument("--ops", nargs="+", choices=OPS, default=list(OPS))
    ap.add_argument("--profile", nargs="*", choices=OPS, default=[], help="cProfile these ops")
    ap.add_argument("--json", help="append each row to this file (JSON lines)")
    ap.add_argument("--plot", help="plot the rows of this JSON-lines file and stop")
    ap.add_argument("--dir", help="build the stores here (default: a temporary directory)")
    ap.add_argument(
        "--keep",
        action="store_true",
        help="keep each store in --dir as store-<events> and use it again if it is there "
        "(a 1e7 store takes minutes to build)",
    )
    args = ap.parse_args()
    if args.keep and not args.dir:
        ap.error("--keep needs --dir")
    if args.plot:
        rows = [json.loads(line) for line in Path(args.plot).read_text().splitlines() if line]
        plot(rows, Path(__file__).resolve().parent / "scale_first_answer.png")
        return
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for n in args.events:
            store = Path(args.dir if args.keep else tmp) / f"store-{n}"
            reused = args.keep and (store / "segments").is_dir()
            row: dict[str, Any] = {"events": n}
            row["build_s"] = None if reused else build(store, n, args.notes)
            row["store_mb"] = sum(f.stat().st_size for f in store.rglob("*") if f.is_file()) / 1e6
            for op in args.ops:
                row[op] = child(op, store, op in args.profile)
                print(op, json.dumps(row[op]), file=sys.stderr, flush=True)
            print(json.dumps(row), flush=True)
            if args.json:
                with open(args.json, "a") as f:
                    f.write(json.dumps(row) + "\n")
            if not args.keep:
                shutil.rmtree(store)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
