"""Survival-ledger replay benchmarks (results: bench/RESULTS.md).

    python bench/bench_ledger.py                      # the population sweep and 1e6 outcomes
    python bench/bench_ledger.py --entries 100000 --outcomes 1000000 --runs 3

Synthetic stores are written the fast way (Arrow tables in the events SCHEMA, sealed with
``eventlog.sealed._segments.write_segment`` and committed by one manifest update), then replayed by
``projections.energy._ledger.replay_ledger`` exactly as ``evolog ledger`` does. Each tick holds
``outcomes / ticks`` outcomes; one in ten is settled through an attempt (the outcome names
no entries, its attempt does) and one attempt in a hundred is never settled (escrow). The
decider of an outcome is drawn from a skewed distribution, its two supporters uniformly;
entries have a hidden quality, so some climb to the cap, some are executed, most starve.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
from evolog.eventlog import init_store
from evolog.eventlog.sealed._arrow import SCHEMA, TS_TYPE
from evolog.eventlog.sealed._manifest import FileCommitter, Manifest
from evolog.eventlog.sealed._segments import write_segment
from evolog.projections.energy._ledger import replay_ledger

SEGMENT_ROWS = 256 * 1024
START_US = 1_767_225_600_000_000
KIND_CODES = ("attempt", "outcome", "tick")


def _strings(codes: np.ndarray, names: pa.Array) -> pa.Array:
    return pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32)), names).cast(pa.string())


def _lists(codes: np.ndarray, lengths: np.ndarray, names: pa.Array) -> pa.Array:
    offsets = np.zeros(len(lengths) + 1, np.int32)
    np.cumsum(lengths, out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets), _strings(codes, names))


def synth(entries: int, outcomes: int, ticks: int, seed: int) -> pa.Table:
    """The whole synthetic history as one table (rows in seq order)."""
    rng = np.random.default_rng(seed)
    per_tick = max(1, outcomes // ticks)
    quality = rng.normal(0.0, 1.0, entries)
    n_out = per_tick * ticks
    # The first outcomes name every entry once, so the whole population is born at tick 0.
    decider = np.minimum(rng.zipf(1.3, n_out) - 1, entries - 1)
    decider = rng.permutation(entries)[decider]
    cover = np.arange(min(n_out, entries // 3 + 1))
    decider[cover] = (3 * cover) % entries
    sup = rng.integers(0, entries, (n_out, 2))
    sup[cover, 0], sup[cover, 1] = (3 * cover + 1) % entries, (3 * cover + 2) % entries
    delta = rng.normal(quality[decider] * 0.8, 1.0)
    via_attempt = rng.random(n_out) < 0.1
    orphan = rng.random(n_out) < 0.01  # an attempt whose outcome never comes
    # Rows: per outcome, its attempt (if any) then itself (unless orphaned); per tick, a tick.
    n_att = int(via_attempt.sum())
    kind, owner = [], []
    tick_of = np.repeat(np.arange(ticks), per_tick)
    for t in range(ticks):
        lo, hi = t * per_tick, (t + 1) * per_tick
        idx = np.arange(lo, hi)
        att = idx[via_attempt[lo:hi]]
        k = np.concatenate([np.zeros(len(att), np.int8), np.ones(hi - lo, np.int8)])
        o = np.concatenate([att, idx])
        pos = np.concatenate([2 * att, 2 * idx + 1])
        order = np.argsort(pos, kind="stable")
        keep = ~((k[order] == 1) & via_attempt[o[order]] & orphan[o[order]])
        kind.append(k[order][keep])
        owner.append(o[order][keep])
        kind.append(np.array([2], np.int8))
        owner.append(np.array([-1]))
    kinds = np.concatenate(kind)
    owners = np.concatenate(owner)
    del tick_of, n_att
    return _table(kinds, owners, decider, sup, delta, via_attempt, entries)


def _table(
    kinds: np.ndarray,
    owners: np.ndarray,
    decider: np.ndarray,
    sup: np.ndarray,
    delta: np.ndarray,
    via_attempt: np.ndarray,
    entries: int,
) -> pa.Table:
    n = len(kinds)
    names = pa.array([f"mem-{i:07d}" for i in range(entries)])
    o = np.maximum(owners, 0)
    is_att, is_out, is_tick = kinds == 0, kinds == 1, kinds == 2
    named = is_att | (is_out & ~via_attempt[o])
    lengths_dec = named.astype(np.int32)
    lengths_sup = 2 * named.astype(np.int32)
    seq = np.arange(1, n + 1, dtype=np.int64)
    columns = {
        "seq": pa.array(seq),
        "id": pa.array([f"ev-{i:09d}" for i in range(1, n + 1)]),
        "ts": pa.array(START_US + seq * 1000).cast(TS_TYPE),
        "kind": _strings(kinds, pa.array(KIND_CODES)),
        "action_id": pa.array(
            np.char.add("act-", o.astype(str)).astype(object), pa.string(), mask=is_tick
        ),
        "decided_by": _lists(decider[o][named], lengths_dec, names),
        "supported_by": _lists(sup[o][named].ravel(), lengths_sup, names),
        "delta": pa.array(delta[o], pa.float64(), mask=~is_out),
        "ticks": pa.array(np.ones(n, np.int64), mask=~is_tick),
    }
    arrays = [
        columns[f.name].cast(f.type) if f.name in columns else pa.nulls(n, f.type) for f in SCHEMA
    ]
    return pa.Table.from_arrays(arrays, schema=SCHEMA)


def make_store(path: Path, entries: int, outcomes: int, ticks: int, seed: int = 7) -> int:
    """Write the synthetic store; return its number of events."""
    paths = init_store(path)
    table = synth(entries, outcomes, ticks, seed)
    infos = [
        write_segment(paths.segments, table.slice(i, SEGMENT_ROWS))
        for i in range(0, table.num_rows, SEGMENT_ROWS)
    ]
    FileCommitter(paths.manifest).commit(
        Manifest(version=1, sealed_seq=table.num_rows, segments=infos)
    )
    return int(table.num_rows)


def median_time(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def run_case(entries: int, outcomes: int, ticks: int, runs: int, per_event: bool) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        events = make_store(store, entries, outcomes, ticks)
        rules, _ = replay_ledger(store)
        summary = rules.state.counters
        alive = int((rules.state.view("status") == 1).sum())
        batched = median_time(lambda: replay_ledger(store), runs)
        slow = median_time(lambda: replay_ledger(store, batch=False), 1) if per_event else None
    line = (
        f"| {entries:.0e} | {outcomes:.0e} | {ticks} | {events:,} | {batched:.2f} s | "
        f"{1e3 * batched / ticks:.1f} ms | {outcomes / batched / 1e6:.2f} M/s | "
        + (f"{slow:.2f} s" if slow is not None else "-")
        + f" | {alive:,} | {summary.settled:,} |"
    )
    return line


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--entries", type=int, nargs="*", default=[1000, 10_000, 100_000])
    p.add_argument("--outcomes", type=int, default=None, help="default: entries / 10 per tick")
    p.add_argument("--ticks", type=int, default=100)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--million", action="store_true", help="also 1e6 outcomes over 1e4 entries")
    args = p.parse_args()
    print("| entries | outcomes | ticks | events | replay | per tick | outcomes/s "
          "| per-event rules | alive at end | settled |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    for entries in args.entries:
        outcomes = args.outcomes or max(entries // 10, 1) * args.ticks
        print(run_case(entries, outcomes, args.ticks, args.runs, outcomes <= 100_000), flush=True)
    if args.million:
        print(run_case(10_000, 1_000_000, args.ticks, args.runs, True), flush=True)


if __name__ == "__main__":
    main()
