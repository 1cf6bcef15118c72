"""Injected blocks on held-out domains: how long, and how many duplicate strategies.

Each set's traces (every domain, six tasks of one approach each, worded by different runs)
are dreamed into one store; every related task is recalled with the store's default rule
(``record=False``) and the block measured: its length in characters, its strategy lines, and
its duplicates (items beyond the first whose steps are the same under the near-match rule of
projections.memory._steps, or whose text repeats one shown before).

    .venv/bin/python bench/bench_block_dups.py [--set DIR ...] [--copies N]

With ``--copies N`` each trace is recorded N times, the k-th copy's steps reworded the way
another run would say them (k = 1: a filler word first; k = 2: capitalised, with "again";
and so on): the issue's case of one approach succeeding in several runs.

Prints, per set: nodes after the dream, blocks injected, median and max block characters,
mean strategy lines per block, duplicates per block (mean) and blocks with a duplicate.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evolog.dream._cycle import dream
from evolog.eventlog import EventLog
from evolog.projections.graph._cache import graph_views
from evolog.projections.graph._embed import get_embedder
from evolog.projections.memory._steps import same_steps

from bench.bench_router import strategy_events
from bench.bench_router_holdout import load_holdout
from evolog import Memory

SETS = [Path(__file__).parent / "routing_holdout", Path(__file__).parent / "routing_holdout_b"]


def duplicates(items: list[Any]) -> int:
    """Items after the first of their approach (same steps) or their text."""
    seen: list[Any] = []
    out = 0
    for item in items:
        if any((item.steps and same_steps(item.steps, s.steps)) or item.text == s.text
               for s in seen):  # fmt: skip
            out += 1
        seen.append(item)
    return out


_REWORD = (
    lambda s: s,
    lambda s: f"then {s}",
    lambda s: f"{s[:1].upper()}{s[1:]} again",
    lambda s: f"now {s.lower()}",
)


def measure(folder: Path, embedder: Any, copies: int = 1) -> dict[str, Any]:
    domains, _ = load_holdout(folder)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "store")
        with EventLog(path, create=True, durability="none") as log:
            for d in domains:
                for i, t in enumerate(d["traces"]):
                    for k in range(copies):
                        steps = [_REWORD[k % len(_REWORD)](s) for s in t["steps"]]
                        trace = {"id": f"{d['name']}/{i}.{k}", "task": t["task"], "steps": steps}
                        log.append_many(strategy_events(trace))
            dream(log, embedder=embedder)
            nodes = sum(1 for _ in graph_views(log).nodes())
        chars, lines, dups = [], [], []
        with Memory(path) as mem:
            for d in domains:
                for task in d["related"]:
                    r = mem.recall(task, record=False)
                    if not r.text:
                        continue
                    chars.append(len(r.text))
                    lines.append(sum(ln.startswith("- Strategy [") for ln in r.text.splitlines()))
                    dups.append(duplicates(list(r.items)))
    return {
        "set": folder.name,
        "nodes": nodes,
        "traces": copies * sum(len(d["traces"]) for d in domains),
        "blocks": len(chars),
        "median_chars": statistics.median(chars) if chars else 0,
        "max_chars": max(chars, default=0),
        "strategy_lines_per_block": round(statistics.fmean(lines), 2) if lines else 0,
        "duplicates_per_block": round(statistics.fmean(dups), 3) if dups else 0,
        "blocks_with_duplicate": sum(d > 0 for d in dups),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--set", dest="sets", action="append", type=Path, default=[])
    p.add_argument("--copies", type=int, default=1)
    args = p.parse_args(argv)
    embedder = get_embedder()
    for folder in args.sets or SETS:
        print(measure(folder, embedder, args.copies), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
