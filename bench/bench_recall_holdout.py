"""Recall on held-out domains: does it inject memories a task is not about, and does it find
the ones it is about?

The same sets and halves as bench/bench_router_holdout.py: each half's traces are dreamed
into a store, whose strategy nodes become recall items; every related, near and unrelated
task of the half is recalled (``record=False``, so nothing is appended) with applicability
off, and the store's rule (similarity floor, margin over the nearest generic task, score
threshold) is replayed on what came back. A related task counts when the first injected item
is a strategy of its domain; an unrelated one when anything is injected.

    .venv/bin/python bench/bench_recall_holdout.py [--splits 5] [--set DIR ...]

Prints, per set, the default rule's rates (mean over the held-out halves), the rule fitted on
one half and measured on the other, and each set's fitted rule on the other set.
"""

from __future__ import annotations

import argparse
import itertools
import json
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
from evolog.projections.memory import MemoryConfig

from bench.bench_router import strategy_events
from bench.bench_router_holdout import HOLDOUT, MIX, domains_of, half_tasks, halves, load_holdout
from evolog import Memory

LOOSE = MemoryConfig(min_similarity=0.0, min_margin=-9.0, retrieval_threshold=0.0, top_n=5)
Rule = tuple[float, float, float]
"""(min_similarity, min_margin, retrieval_threshold)."""


def collect(folder: Path, splits: int, embedder: Any) -> list[dict[str, Any]]:
    """Every task of every half, with the null and the (domain, similarity, score) of the
    items recall returns when nothing is filtered."""
    domains, unrelated = load_holdout(folder)
    out = []
    for seed in range(splits):
        for half, (d, u) in enumerate(halves(domains, unrelated, seed)):
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "store")
                with EventLog(path, create=True, durability="none") as log:
                    for x in d:
                        for i, t in enumerate(x["traces"]):
                            trace = {"id": f"{x['name']}/{i}", **t}
                            log.append_many(strategy_events(trace))
                    dream(log, embedder=embedder)
                    graph = graph_views(log)
                domain_of = domains_of(graph)
                with Memory(path) as mem:
                    for kind, task, want in half_tasks(d, u):
                        r = mem.recall(task, record=False, config=LOOSE)
                        items = [(domain_of.get(i.id), i.similarity, i.score) for i in r.items]
                        out.append(
                            {"seed": seed, "half": half, "kind": kind, "want": want,
                             "null": r.null_similarity, "items": items}
                        )  # fmt: skip
    return out


def decide(row: dict[str, Any], rule: Rule) -> str | None:
    """The domain of the first item ``rule`` injects (None: nothing), as recall decides."""
    floor, margin, threshold = rule
    for domain, similarity, score in row["items"]:
        if similarity >= floor and similarity - row["null"] >= margin and score >= threshold:
            return domain or "?"
    return None


def rates(rows: list[dict[str, Any]], rule: Rule) -> dict[str, float]:
    related = [r for r in rows if r["kind"] == "related"]
    out = {"related_right": sum(decide(r, rule) == r["want"] for r in related) / len(related)}
    for kind in MIX:
        got = [r for r in rows if r["kind"] == kind]
        out[f"{kind}_to_memory"] = sum(decide(r, rule) is not None for r in got) / len(got)
    out["unrelated_at_issue_mix"] = sum(w * out[f"{k}_to_memory"] for k, w in MIX.items())
    return out


def fit(rows: list[dict[str, Any]], cost: float = 2.0) -> Rule:
    """The rule maximising ``related_right - cost * unrelated_at_issue_mix`` (as the router's)."""
    grid = itertools.product(
        [x / 100 for x in range(0, 41, 2)],
        [x / 100 for x in range(-20, 21, 2)],
        (0.0, 0.05, 0.1, 0.15, 0.2, 0.25),
    )
    best: tuple[tuple[float, ...], Rule] | None = None
    for floor, margin, threshold in grid:
        r = rates(rows, (floor, margin, threshold))
        key = (round(r["related_right"] - cost * r["unrelated_at_issue_mix"], 6), margin, floor)
        if best is None or key > best[0]:
            best = (key, (floor, margin, threshold))
    assert best is not None
    return best[1]


def mean_over_halves(rows: list[dict[str, Any]], rule: Rule) -> dict[str, float]:
    parts = sorted({(r["seed"], r["half"]) for r in rows})
    per = [rates([r for r in rows if (r["seed"], r["half"]) == p], rule) for p in parts]
    return {k: round(100 * statistics.fmean(p[k] for p in per), 1) for k in per[0]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--splits", type=int, default=5)
    p.add_argument("--set", dest="sets", action="append", type=Path, default=[])
    args = p.parse_args(argv)
    embedder = get_embedder("wordllama")  # dreams only; recall ranks by its own index
    defaults = MemoryConfig()
    default: Rule = (defaults.min_similarity, defaults.min_margin, defaults.retrieval_threshold)
    data = {str(f): collect(f, args.splits, embedder) for f in args.sets or [HOLDOUT]}
    fitted: dict[str, Rule] = {}
    for name, rows in data.items():
        held: list[dict[str, float]] = []
        for seed in range(args.splits):
            for train, test in ((0, 1), (1, 0)):
                rule = fit([r for r in rows if r["seed"] == seed and r["half"] == train])
                part = [r for r in rows if r["seed"] == seed and r["half"] == test]
                held.append(rates(part, rule))
        fitted[name] = fit(rows)
        print(json.dumps({
            "set": name, "default_rule": default, "default": mean_over_halves(rows, default),
            "fitted_held_out": {k: round(100 * statistics.fmean(h[k] for h in held), 1)
                                for k in held[0]},
        }))  # fmt: skip
    for (a, rule), b in itertools.product(fitted.items(), data):
        if a != b:
            print(json.dumps({"fitted_on": a, "rule": rule, "measured_on": b,
                              "rates": mean_over_halves(data[b], rule)}))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
