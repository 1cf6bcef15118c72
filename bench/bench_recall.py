"""Recall latency: in-process, a cold `evolog recall`, and a cold hook that injects.

    python bench/bench_recall.py --items 100000 --events 100000 --runs 30

Builds a store of ``--items`` notes (in 40 branches, texts drawn from a 2,000-word
vocabulary) plus filler attempts and outcomes up to ``--events`` events, sealed, with the
item index warmed once (as `Stop` leaves it). Then measures, for queries drawn from the same
vocabulary: in-process ``Memory.recall(record=False)`` (p50, p99), a cold ``evolog recall
--no-record`` process, and a cold ``evolog hook claude-code`` answering ``UserPromptSubmit``
(each p50, p95; the hook's attempt and recall event are appended, as in use), with the
CPU time (user + sys) of the cold processes, the load average and each goal's verdict.

Goals (issue 14): hook p50 <= 150 ms and p95 <= 250 ms at 1e4 items and 1e5 events; cold
recall <= 200 ms at 1e5 items; in-process p99 <= 5 ms at 1e5 items.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evolog import Attempt, Memory, Note, Outcome

BATCH = 10_000


def vocabulary(rng: random.Random, n: int = 2000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    out: set[str] = set()
    while len(out) < n:
        out.add("".join(rng.choice(letters) for _ in range(rng.randint(4, 9))))
    return sorted(out)


def build(root: Path, items: int, events: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    vocab = vocabulary(rng)
    with Memory(root, durability="none") as mem:
        batch: list[object] = []
        for i in range(items):
            words = " ".join(rng.choice(vocab) for _ in range(rng.randint(6, 14)))
            batch.append(Note(id=f"n{i}", text=words, branch=f"b{i % 40}"))
            if len(batch) == BATCH:
                mem.append_many(batch)  # type: ignore[arg-type]
                batch = []
        for j in range(max(events - items, 0) // 2):
            batch += [
                Attempt(id=f"a{j}", action_id=f"a{j}", task=rng.choice(vocab)),
                Outcome(action_id=f"a{j}", status=rng.choice(["success", "failed"])),
            ]
            if len(batch) >= BATCH:
                mem.append_many(batch)  # type: ignore[arg-type]
                batch = []
        if batch:
            mem.append_many(batch)  # type: ignore[arg-type]
        mem.seal()
        mem.recall(vocab[0], record=False)  # builds and keeps the item index (as Stop does)
        mem._items().save(mem.log.snapshot())
    return [" ".join(rng.choice(vocab) for _ in range(4)) for _ in range(200)]


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(q * len(xs)))] * 1000, 2)


def timed_process(cmd: list[str], stdin: bytes | None = None) -> tuple[float, float]:
    """Wall time and CPU time (user + sys) of one run of ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, input=stdin, capture_output=True, check=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def goals(r: dict[str, object]) -> dict[str, str]:
    """Each issue-14 goal that applies at this size: the figure against its bound."""
    out: dict[str, str] = {}

    def check(name: str, value: float, bound: float) -> None:
        out[name] = f"{value} ms {'<=' if value <= bound else '>'} {bound} ms"

    hook, cold, inproc = r["cold_hook_ms"], r["cold_recall_ms"], r["in_process_ms"]
    assert isinstance(hook, dict) and isinstance(cold, dict) and isinstance(inproc, dict)
    check("hook p50", hook["p50"], 150)
    check("hook p95", hook["p95"], 250)
    if int(str(r["items"])) >= 100_000:
        check("cold recall p50", cold["p50"], 200)
        check("in-process recall p99", inproc["p99"], 5)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--items", type=int, default=10_000)
    p.add_argument("--events", type=int, default=100_000)
    p.add_argument("--runs", type=int, default=30)
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="evolog-recall-") as tmp:
        root = Path(tmp) / "store"
        queries = build(root, args.items, args.events, args.seed)
        with Memory(root) as mem:
            mem.recall(queries[0], record=False)
            inproc = []
            for q in queries:
                t = time.perf_counter()
                mem.recall(q, record=False)
                inproc.append(time.perf_counter() - t)
        evolog = [sys.executable, "-m", "evolog", "--store", str(root)]
        cold = [timed_process([*evolog, "recall", q, "--no-record"]) for q in queries[: args.runs]]
        hook = []
        for i, q in enumerate(queries[: args.runs]):
            payload = {"hook_event_name": "UserPromptSubmit", "session_id": f"s{i}", "prompt": q}
            hook.append(
                timed_process([*evolog, "hook", "claude-code"], json.dumps(payload).encode())
            )
        checkpoint = sum(f.stat().st_size for f in (root / "cache" / "memory").iterdir())
        result = {
            "items": args.items,
            "events": args.events,
            "checkpoint_bytes": checkpoint,
            "load_average": [round(x, 2) for x in os.getloadavg()],
            "in_process_ms": {"p50": pct(inproc, 0.5), "p99": pct(inproc, 0.99)},
            "cold_recall_ms": {"p50": pct([w for w, _ in cold], 0.5),
                               "p95": pct([w for w, _ in cold], 0.95)},
            "cold_hook_ms": {"p50": pct([w for w, _ in hook], 0.5),
                             "p95": pct([w for w, _ in hook], 0.95)},
            # CPU time (user + sys) of the same processes: what load does not inflate.
            "cold_recall_cpu_ms": {"p50": pct([c for _, c in cold], 0.5)},
            "cold_hook_cpu_ms": {"p50": pct([c for _, c in hook], 0.5)},
            "mean_in_process_ms": round(statistics.mean(inproc) * 1000, 2),
        }  # fmt: skip
        result["goals"] = goals(result)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
