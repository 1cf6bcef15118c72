"""The recall block as an index against the block of whole entries, on the same items.

Each held-out set's traces become notes (one per trace: its task and its steps, in the
branch of its domain, six per domain), so a related task recalls several items, which is
where an index differs from whole entries (the dreamed sets of bench/bench_block_dups.py
inject one strategy per block). Every related task is recalled (``record=False``, the
store's default rule and budget) and the items chosen are rendered twice: as the block
recall injects (one index line per item, the top item's details when they fit, the fetch
line) and as whole entries (every item with its full text, steps and constraints, added
while the block fits the budget: the renderer before the index).

    .venv/bin/python bench/bench_block_index.py [--set DIR ...] [--budget CHARS]

Prints, per set: notes, blocks, median and max characters of each form, and the mean
items per block of each (whole entries hold fewer when the budget cuts them).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evolog.advice.recall import FOOTER, HEADER, entry_text
from evolog.projections.memory import ItemIndex

from bench.bench_router_holdout import load_holdout
from evolog import Memory

SETS = [Path(__file__).parent / "routing_holdout", Path(__file__).parent / "routing_holdout_b"]


def whole_entries(items: list[Any], counts: list[Any], budget: int) -> tuple[str, int]:
    """Every item as a whole entry, while the block fits ``budget`` (the former renderer)."""
    body, used = [], len(HEADER) + len(FOOTER)
    for item, c in zip(items, counts, strict=True):
        text = entry_text(item, counts=c)
        if used + len(text) > budget:
            break
        body.append(text)
        used += len(text)
    return (HEADER + "".join(body) + FOOTER if body else ""), len(body)


def measure(folder: Path, budget: int) -> dict[str, Any]:
    domains, _ = load_holdout(folder)
    with tempfile.TemporaryDirectory(prefix="evolog-bench-index-") as tmp:
        mem = Memory(Path(tmp) / "s")
        notes = 0
        for d in domains:
            for t in d["traces"]:
                text = t["task"] + ": " + "; then ".join(t["steps"])
                mem.remember(d["name"], text)
                notes += 1
        index_chars, whole_chars, index_items, whole_items = [], [], [], []
        with mem:
            items = ItemIndex(mem.log.paths)
            for d in domains:
                for task in d["related"]:
                    r = mem.recall(task, budget_chars=budget, record=False)
                    if not r.text:
                        continue
                    with mem.log.snapshot() as snap:
                        fold = items.refresh(snap, mem.log)
                    chosen = [fold.state.items[i.id] for i in r.items]
                    counts = [(i.helpful, i.harmful, i.neutral) for i in r.items]
                    whole, kept = whole_entries(chosen, counts, budget)
                    index_chars.append(len(r.text))
                    whole_chars.append(len(whole))
                    index_items.append(len(r.items))
                    whole_items.append(kept)
    return {
        "set": folder.name,
        "notes": notes,
        "blocks": len(index_chars),
        "index_median_chars": statistics.median(index_chars),
        "index_max_chars": max(index_chars),
        "whole_median_chars": statistics.median(whole_chars),
        "whole_max_chars": max(whole_chars),
        "index_items_per_block": round(statistics.mean(index_items), 2),
        "whole_items_per_block": round(statistics.mean(whole_items), 2),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--set", dest="sets", action="append", type=Path, default=[])
    p.add_argument("--budget", type=int, default=4000)
    args = p.parse_args(argv)
    for folder in args.sets or SETS:
        print(measure(folder, args.budget), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
