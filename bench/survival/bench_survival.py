"""The survival suites of bench/RESULTS.md: three arms x 10 seeds x 30 cycles.

    python bench/survival/bench_survival.py                    # storage, then testsuite
    python bench/survival/bench_survival.py --env storage --seeds 10 --cycles 30

Each run writes its decisions and measurements to its own store (in a temporary
directory); the ledger that decides the survival arm's evictions is read back from it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from evolog.survive._report import aggregate, run_metrics, table
from evolog.survive._suite import UNITS, run_suite

ARMS = ["survival", "random_matched", "keep_everything"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--env", choices=["storage", "testsuite"], nargs="*",
                   default=["storage", "testsuite"])  # fmt: skip
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--cycles", type=int, default=30)
    args = p.parse_args()
    for env in args.env:
        with tempfile.TemporaryDirectory(prefix="evolog-bench-") as tmp:
            t = time.perf_counter()
            runs = run_suite(env, ARMS, range(args.seeds), args.cycles, Path(tmp))
            elapsed = time.perf_counter() - t
        print(f"\n{env}: {args.seeds} seeds x {args.cycles} cycles ({elapsed:.0f} s)")
        print(table(aggregate([run_metrics(r) for r in runs]), UNITS[env]))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
