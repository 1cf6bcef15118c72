"""Cold `evolog advise` on a store with many distinct signal keys (one process per query).

    python bench/bench_advice_cold.py

Builds a store of 1e5 attempts+outcomes over about 50,000 distinct signal keys and 20 genes,
lets one CLI call build the caches, then prints the median of 7 cold CLI calls.
"""

from __future__ import annotations

import compileall
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evolog.eventlog import Attempt, EventLog, Outcome

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    for pkg in ("eventlog", "evolog", "advice", "projections", "dream"):
        compileall.compile_dir(str(ROOT / pkg), quiet=1)
    d = Path(tempfile.mkdtemp())
    store = d / "s"
    with EventLog(store, create=True, durability="none", auto_seal="off") as log:
        for c in range(10):
            evs: list[Attempt | Outcome] = []
            for i in range(c * 10_000, (c + 1) * 10_000):
                evs.append(
                    Attempt(id=f"a{i}", signals=[f"s{i % 50_000}", f"t{i % 7}"], gene=f"g{i % 20}")
                )
                evs.append(Outcome(action_id=f"a{i}", status="success" if i % 3 else "failed"))
            log.append_many(evs)
        log.seal()
    genes = d / "genes.json"
    genes.write_text(json.dumps([{"type": "Gene", "id": f"g{i}"} for i in range(20)]))
    cmd = [
        str(Path(sys.executable).parent / "evolog"),
        "--store",
        str(store),
        "advise",
        "--signals",
        "s1,t1",
        "--genes",
        str(genes),
    ]
    subprocess.run(cmd, check=True, capture_output=True)  # the first call builds the caches
    times = []
    for _ in range(7):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        times.append(time.perf_counter() - t)
    print(
        f"cold evolog advise, 2e5 events, ~50,000 distinct keys: "
        f"median {statistics.median(times) * 1000:.0f} ms (goal <= 300 ms)"
    )


if __name__ == "__main__":
    main()
