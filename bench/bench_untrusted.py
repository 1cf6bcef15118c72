"""What showing memory text as display-safe data costs the recall block.

    python bench/bench_untrusted.py --runs 200

Times, per call (p50 and p95 over ``--runs``): ``safe_text`` on a 2,000-character text
(ordinary tool output: a long shell command line; hostile: prompt-injection pieces, their
encodings and look-alikes, mixed), ``error_signature`` on a traceback, and ``render`` of a
full block (10 strategies of 12 steps and 3 constraints, 200-character texts) with
ordinary and with hostile texts, beside the whitespace collapse the block did before
(``" ".join(text.split())`` on every text of the same block).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from evolog.advice.recall import render
from evolog.projections.memory import STRATEGY, MemoryItem
from evolog.projections.memory._untrusted import error_signature, safe_text

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from strategies import HOSTILE  # the test suite's hostile pieces

_PLAIN = "pytest -x tests/test_foo.py --maxfail=1 && ruff check . && mypy --strict src "
_TRACE = (
    'Traceback (most recent call last):\n  File "app.py", line 12, in <module>\n'
    "    main()\nModuleNotFoundError: No module named 'requests'\n"
)


def timed(fn: Callable[[], object], runs: int) -> tuple[float, float]:
    """p50 and p95 of one call, in microseconds."""
    samples = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1e6)
    samples.sort()
    return statistics.median(samples), samples[int(0.95 * (len(samples) - 1))]


def hostile(rng: random.Random, n: int) -> str:
    out = ""
    while len(out) < n:
        out += rng.choice(HOSTILE)
    return out[:n]


def block_items(make: Callable[[int], str]) -> list[MemoryItem]:
    return [
        MemoryItem(
            id=f"node-{i}",
            kind=STRATEGY,
            text=make(200),
            steps=[make(200) for _ in range(12)],
            constraints=[make(200) for _ in range(3)],
        )
        for i in range(10)
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200)
    args = ap.parse_args()
    rng = random.Random(7)
    plain_text = (_PLAIN * 30)[:2000]
    hostile_text = hostile(rng, 2000)
    plain_items = block_items(lambda n: (_PLAIN * 4)[:n])
    hostile_items = block_items(lambda n: hostile(rng, n))

    def collapse_all() -> None:
        for item in plain_items:
            for t in (item.text, *item.steps, *item.constraints):
                " ".join(t.split())

    rows = [
        ("safe_text, 2000 chars, ordinary", lambda: safe_text(plain_text, 2000)),
        ("safe_text, 2000 chars, hostile", lambda: safe_text(hostile_text, 2000)),
        ("error_signature, traceback", lambda: error_signature(_TRACE)),
        ("render 10x(12 steps, 3 constraints), ordinary", lambda: render(plain_items, 100_000)),
        ("render 10x(12 steps, 3 constraints), hostile", lambda: render(hostile_items, 100_000)),
        ("before: whitespace collapse of the same block", collapse_all),
    ]
    print(f"{'what':48} {'p50 us':>9} {'p95 us':>9}")
    for name, fn in rows:
        fn()  # warm caches (the look-alike table, compiled patterns)
        p50, p95 = timed(fn, args.runs)
        print(f"{name:48} {p50:9.0f} {p95:9.0f}")


if __name__ == "__main__":
    main()
