"""The advice fold alone on a synthetic store: batched (as the engine folds) against row by row.

    python bench/bench_advice_fold.py --events 1e6
    python bench/bench_advice_fold.py --store DIR/store-1000000   # a store bench_scale kept

Prints the CPU seconds of reading the sealed segments alone, of the batched fold and of
the row-by-row fold (every attempt and outcome decoded as a ``Row``), each from the start
of the log, in this process, no imports or ledger included; and whether both states are
equal (they must be: ``tests/advice/test_advice_batch.py``).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from evolog.advice._engine import _fold
from evolog.advice._reader import read_rows
from evolog.advice._state import AdviceState
from evolog.eventlog import EventLog


def _state_of(state: AdviceState) -> tuple[Any, ...]:
    edges = {
        (k, g): state.edges.get(k, g)
        for k in range(len(state.catalog))
        for g in range(len(state.genes))
    }
    return (
        state.head,
        state.catalog.keys,
        state.genes,
        edges,
        [state.gene_stats.get(0, g) for g in range(len(state.genes))],
        list(state.open.items()),
        list(state.closed.items()),
        list(state.window),
        state.forgotten.to_bytes(),
    )


def measure(store: Path) -> None:
    with EventLog(str(store)) as log, log.snapshot() as snap:
        t = time.process_time()
        rows = sum(1 for _ in read_rows(snap, 0)[1])
        read_s = time.process_time() - t
        batched, by_row = AdviceState(), AdviceState()
        t = time.process_time()
        _fold(batched, snap, read_rows(snap, 0))
        batched_s = time.process_time() - t
        t = time.process_time()
        _fold(by_row, snap, read_rows(snap, 0, batches=False))
        by_row_s = time.process_time() - t
    print(f"store {store} head {snap.head_seq} items read {rows}")
    print(f"read only      {read_s:7.2f} s CPU")
    print(f"batched fold   {batched_s:7.2f} s CPU")
    print(f"row-by-row     {by_row_s:7.2f} s CPU")
    print(f"equal states   {_state_of(batched) == _state_of(by_row)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=lambda v: int(float(v)), default=1_000_000)
    ap.add_argument("--store", help="fold this store instead of building one")
    args = ap.parse_args()
    if args.store:
        measure(Path(args.store))
        return
    from bench_scale import build

    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        build(store, args.events, 2000)
        measure(store)


if __name__ == "__main__":
    main()
