"""Injected blocks on held-out domains: how long, and how many duplicate strategies.

Each set's traces (every domain, six tasks of one approach each, worded by different runs)
are dreamed into one store; every related task goes through the hook's ``UserPromptSubmit``
injection (bench/bench_recall_holdout.py's ``hook_block``: the hook's own code, the store's
default rule) and the block measured: its length in characters as injected, its strategy
lines and those showing their evidence, and its duplicates (items beyond the first whose
steps are the same under the near-match rule of projections.memory._steps, or whose text
repeats one shown before).

    .venv/bin/python bench/bench_block_dups.py [--set DIR ...] [--copies N] [--embedder E]

With ``--copies N`` each trace is recorded N times, the k-th copy's steps reworded the way
another run would say them (k = 1: a filler word first; k = 2: capitalised, with "again";
and so on): the issue's case of one approach succeeding in several runs.

Prints, per set: nodes after the dream, blocks injected, median and max block characters,
strategy items, strategy lines and those with evidence, duplicates per block (mean) and
blocks with a duplicate.
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

from evolog.eventlog import EventLog

from bench.bench_recall_holdout import block_figures, build_store, choose_embedder, hook_block
from bench.bench_router_holdout import load_holdout

SETS = [
    Path(__file__).parent / n for n in ("routing_holdout", "routing_holdout_b", "routing_holdout_c")
]


def measure(folder: Path, embedder: Any, copies: int = 1) -> dict[str, Any]:
    domains, _ = load_holdout(folder)
    figures = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "store")
        nodes = sum(1 for _ in build_store(path, domains, embedder, copies).nodes())
        with EventLog(path, durability="none") as log:
            for d in domains:
                for task in d["related"]:
                    text, ids = hook_block(log, task)
                    if text:
                        figures.append(block_figures(log, text, ids))
    chars = [f["chars"] for f in figures]
    dups = [f["duplicates"] for f in figures]
    return {
        "set": folder.name,
        "encoder": embedder.name,
        "nodes": nodes,
        "traces": copies * sum(len(d["traces"]) for d in domains),
        "blocks": len(figures),
        "median_chars": statistics.median(chars) if chars else 0,
        "max_chars": max(chars, default=0),
        "strategy_items": sum(f["strategy_items"] for f in figures),
        "strategy_lines": sum(f["strategy_lines"] for f in figures),
        "strategy_lines_with_evidence": sum(f["with_evidence"] for f in figures),
        "duplicates_per_block": round(statistics.fmean(dups), 3) if dups else 0,
        "blocks_with_duplicate": sum(d > 0 for d in dups),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--set", dest="sets", action="append", type=Path, default=[])
    p.add_argument("--copies", type=int, default=1)
    p.add_argument("--embedder", choices=["wordllama", "minilm"], default="wordllama")
    args = p.parse_args(argv)
    embedder = choose_embedder(args.embedder)
    for folder in args.sets or SETS:
        print(measure(folder, embedder, args.copies), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
