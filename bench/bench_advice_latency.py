"""Advice latency: in-process warm (p50/p99), cold CLI, first fold; 1e4..1e6 events.

    python bench/bench_advice_latency.py --events 10000 100000 1000000 --keys 1000 100000

Synthetic stores hold evolver-shaped cycles (signal, hypothesis, attempt, outcome,
confidence_edge, confidence_gene_outcome: what an evolver graph holds, one sixth outcomes),
written the fast way: Arrow tables in the events SCHEMA, sealed with the log's own
``write_segment`` and committed by one manifest update. Signal keys follow a Zipf law over
``--keys`` distinct signal sets; 40 genes. Queries are drawn from the keys in use (some with
an extra signal, so the key is new and only neighbours match), 10 candidate genes each.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from evolog.advice import AdviceEngine
from evolog.eventlog import EventLog, init_store
from evolog.eventlog.sealed._arrow import SCHEMA, TS_TYPE
from evolog.eventlog.sealed._manifest import FileCommitter, Manifest
from evolog.eventlog.sealed._segments import write_segment

CYCLE = ("signal", "hypothesis", "attempt", "outcome", "confidence_edge", "confidence_gene_outcome")
SEGMENT_ROWS = 256 * 1024
GENES = 40
NOW_US = 1_772_323_200_000_000  # 2026-03-01
SPAN_US = 365 * 86_400_000_000
REPO = Path(__file__).resolve().parents[1]


def key_sets(n_keys: int, seed: int) -> list[list[str]]:
    """``n_keys`` distinct signal sets (1-4 signals from a 3000-word vocabulary)."""
    rng = np.random.default_rng(seed)
    vocab = [f"sig_{i:04d}" for i in range(3000)]
    seen: set[tuple[str, ...]] = set()
    out: list[list[str]] = []
    while len(out) < n_keys:
        size = int(rng.integers(1, 5))
        common = rng.integers(0, 150, size=max(1, size // 2))  # shared, frequent signals
        rare = rng.integers(0, 3000, size=size - len(common))
        s = tuple(sorted({vocab[i] for i in (*common, *rare)}))
        if s not in seen:
            seen.add(s)
            out.append(list(s))
    return out


def synth_table(first: int, n: int, total: int, sets: list[list[str]], seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    n_cycles = total // len(CYCLE) + 1
    key_of = (rng.zipf(1.2, size=n_cycles) - 1) % len(sets)
    gene_of = rng.integers(0, GENES, size=n_cycles)
    ok_of = rng.random(n_cycles) < ((key_of * 7 + gene_of * 13) % 10) / 10
    seq = np.arange(first, first + n, dtype=np.int64)
    cycle = (seq - 1) // len(CYCLE)
    kind = ((seq - 1) % len(CYCLE)).astype(np.int32)
    k, g, ok = key_of[cycle], gene_of[cycle], ok_of[cycle]
    ts = NOW_US - SPAN_US + (seq * (SPAN_US / total)).astype(np.int64)
    keys = pa.array(["|".join(s) for s in sets])
    lists = pa.array(sets, pa.list_(pa.string()))
    has_signal = kind != 5
    has_gene = kind != 0
    idx = pa.array(k.astype(np.int64))
    cols: dict[str, Any] = {
        "seq": pa.array(seq),
        "id": pa.array(np.char.add("mge_", seq.astype("U12"))),
        "ts": pa.array(ts).cast(TS_TYPE),
        "kind": pa.array(np.asarray(CYCLE)[kind]),
        "agent": pa.array(["evolver"] * n),
        "source": pa.array(["real"] * n),
        "v": pa.array(np.ones(n, dtype=np.int64)),
        "key": pa.array(keys.take(idx).to_pylist(), mask=~has_signal),
        "signals": lists.take(idx),
        "gene": pa.array(np.char.add("gene_", g.astype("U3")), mask=~has_gene),
        "action_id": pa.array(
            np.char.add("act_", cycle.astype("U12")), mask=~np.isin(kind, (2, 3))
        ),
        "status": pa.array(np.where(ok, "success", "failed"), mask=kind != 3),
    }
    cols["signals"] = pa.array(cols["signals"].to_pylist(), pa.list_(pa.string()), mask=~has_signal)
    arrays = [cols.get(f.name, pa.nulls(n, f.type)).cast(f.type) for f in SCHEMA]
    return pa.Table.from_arrays(arrays, schema=SCHEMA)


def make_store(path: Path, total: int, sets: list[list[str]], seed: int = 7) -> None:
    paths = init_store(path)
    infos = []
    for first in range(1, total + 1, SEGMENT_ROWS):
        n = min(SEGMENT_ROWS, total - first + 1)
        infos.append(write_segment(paths.segments, synth_table(first, n, total, sets, seed)))
    FileCommitter(paths.manifest).commit(Manifest(version=1, sealed_seq=total, segments=infos))


def queries(sets: list[list[str]], n: int, seed: int) -> list[tuple[list[str], list[Any]]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        s = list(sets[int((rng.zipf(1.2) - 1) % len(sets))])
        if rng.random() < 0.3:
            s.append(f"novel_{int(rng.integers(0, 10))}")
        genes = [{"type": "Gene", "id": f"gene_{i}"} for i in rng.choice(GENES, 10, replace=False)]
        out.append((s, genes))
    return out


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values) * 1e3, q))


def warm(store: Path, qs: list[Any], policy: str) -> dict[str, float]:
    with EventLog(store) as log:
        engine = AdviceEngine(log)
        t = time.perf_counter()
        engine.advise(*qs[0], policy=policy, now=NOW_US)
        first = time.perf_counter() - t
        times = []
        for signals, genes in qs:
            t = time.perf_counter()
            engine.advise(signals, genes, policy=policy, now=NOW_US)
            times.append(time.perf_counter() - t)
    return {"first_ms": first * 1e3, "p50_ms": pct(times, 50), "p99_ms": pct(times, 99)}


# Until ``advise`` is wired into ``evolog``'s parser, dispatch it the same way by hand.
_RUNNER = (
    "import argparse, sys\n"
    "from evolog.cli._advice import add_advice_commands\n"
    "p = argparse.ArgumentParser(prog='evolog'); p.add_argument('--store')\n"
    "add_advice_commands(p.add_subparsers(dest='command', required=True))\n"
    "a = p.parse_args(sys.argv[1:]); sys.exit(a.func(a))\n"
)


def cli_prefix() -> list[str]:
    """``python -m evolog`` if it has ``advise``, else the same dispatch by hand."""
    probe = subprocess.run(
        [sys.executable, "-m", "evolog", "advise", "--help"], cwd=REPO, capture_output=True
    )
    return (
        [sys.executable, "-m", "evolog"]
        if probe.returncode == 0
        else [sys.executable, "-c", _RUNNER]
    )


def cold_cli(store: Path, qs: list[Any], runs: int) -> dict[str, float]:
    """A fresh process per query, with bytecode cached as an installed package has it."""
    genes_file = store.parent / "genes.json"
    times = []
    prefix = cli_prefix()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(store.parent / "pycache")
    for i, (signals, genes) in enumerate([qs[0], *qs[:runs]]):
        genes_file.write_text(json.dumps(genes))
        cmd = [
            *prefix,
            "--store",
            str(store),
            "advise",
            "--signals",
            ",".join(signals),
            "--genes",
            str(genes_file),
            "--now",
            "2026-03-01T00:00:00Z",
        ]
        t = time.perf_counter()
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env=env)
        if i:  # the first run only compiles the bytecode
            times.append(time.perf_counter() - t)
        if proc.returncode != 0:
            raise SystemExit(f"evolog advise failed: {proc.stderr}")
    return {"p50_ms": pct(times, 50), "p90_ms": pct(times, 90)}


def bench(total: int, n_keys: int, n_queries: int, cli_runs: int) -> dict[str, Any]:
    sets = key_sets(n_keys, seed=n_keys)
    row: dict[str, Any] = {"events": total, "keys": n_keys}
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        t = time.perf_counter()
        make_store(store, total, sets)
        row["make_store_s"] = time.perf_counter() - t
        with EventLog(store) as log:
            engine = AdviceEngine(log)
            t = time.perf_counter()
            state = engine.state()
            row["first_fold_s"] = time.perf_counter() - t
            row["distinct_keys_with_outcomes"] = len(state.catalog)
            t = time.perf_counter()
            engine.advise(["sig_0001"], [{"type": "Gene", "id": "gene_1"}], now=NOW_US)
            engine.save()  # with the key index, if one was built
            row["index_build_s"] = time.perf_counter() - t
        qs = queries(sets, n_queries, seed=1)
        row["warm_evolog"] = warm(store, qs, "evolog")
        row["warm_evolver"] = warm(store, qs[: max(50, n_queries // 10)], "evolver")
        row["cold_cli"] = cold_cli(store, qs, cli_runs)
        row["store_mb"] = sum(f.stat().st_size for f in store.rglob("*") if f.is_file()) / 1e6
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--events", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--keys", type=int, nargs="+", default=[1_000, 100_000])
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--cli-runs", type=int, default=15)
    args = ap.parse_args()
    for total in args.events:
        for n_keys in args.keys:
            print(json.dumps(bench(total, n_keys, args.queries, args.cli_runs)), flush=True)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
