"""Projection benchmarks; every figure is a ratio to a baseline measured in the same run.

    python bench/bench_projections.py --events 1000000
    python bench/bench_projections.py --events 10000000 --runs 3

The synthetic store is written the fast way: Arrow tables built in the events SCHEMA with
numpy, sealed with the log's own ``eventlog._segments.write_segment`` (the code path a seal
uses) and committed by one manifest update. The incremental step appends real events with
``EventLog.append_many(durability='none')`` (they sit in the WAL tail), then seals them.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa

from eventlog import Attempt, Outcome, Step, init_store
from eventlog._arrow import SCHEMA, TS_TYPE
from eventlog._manifest import FileCommitter, Manifest
from eventlog._segments import write_segment

CYCLE = ("signal", "hypothesis", "attempt", "step", "step", "outcome")
SEGMENT_ROWS = 256 * 1024  # what a seal writes per segment
START_US = 1_735_689_600_000_000  # 2025-01-01T00:00:00Z
SPAN_US = 365 * 86_400_000_000
KEYS = 2_000
GENES = 40
GENES_PER_KEY = 6
ALPHABET = np.frombuffer(b"0123456789ABCDEFGHJKMNPQRSTVWXYZ", dtype=np.uint8)


def _strings(values: np.ndarray, names: list[str], mask: np.ndarray | None = None) -> pa.Array:
    """A string column from category codes (``mask`` true = null)."""
    codes = pa.array(values.astype(np.int32), mask=mask)
    return pa.DictionaryArray.from_arrays(codes, pa.array(names)).cast(pa.string())


def _random_ids(rng: np.random.Generator, n: int, width: int = 26) -> pa.Array:
    chars = ALPHABET[rng.integers(0, len(ALPHABET), size=n * width)]
    offsets = np.arange(0, (n + 1) * width, width, dtype=np.int32)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(chars)])


def synth_table(first_seq: int, n: int, total: int, seed: int) -> pa.Table:
    """Rows ``first_seq .. first_seq+n-1`` of a synthetic history of ``total`` events.

    Cycles of signal, hypothesis, attempt, two steps and an outcome share an action id, a
    signal key and a gene; 10% of outcomes carry neither key nor gene (they fall back to
    their attempt's); timestamps advance with seq with up to an hour of jitter.
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
    bare = is_outcome & (rng.random(n) < 0.1)
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


def make_store(path: Path, total: int, seed: int = 7) -> None:
    """A sealed store of ``total`` synthetic events."""
    paths = init_store(path)
    infos = []
    for first in range(1, total + 1, SEGMENT_ROWS):
        n = min(SEGMENT_ROWS, total - first + 1)
        infos.append(write_segment(paths.segments, synth_table(first, n, total, seed)))
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


def median_time(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


if __name__ == "__main__":
    print("see main() below")
