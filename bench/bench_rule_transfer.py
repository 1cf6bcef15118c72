"""Does a routing rule fitted on one half of one held-out set hold on text it never saw?

Every half of every set (bench/bench_router_holdout.py's splits) is routed once with the
encoder and its evidence kept; then, for each training half of each set, the rule is fitted
there alone (``fit`` of bench_router_holdout, at each ``--cost``) and measured on the other
half of the same split (same set, other domains) and on every half of the other sets (other
writers, other domains). The shipped rule (``DEFAULT_RULES``) is measured on the same
halves, for comparison. Related = right node, unrelated = the issue's mix.

    .venv/bin/python bench/bench_rule_transfer.py [--embedder minilm] [--splits 1]
        [--cost 2 --cost 4] [--rule lexical|similarity] [--set DIR ...]

Prints one JSON line per (cost, training set) with the mean figures over its training
halves, and one for the shipped rule.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evolog.advice.routing._applicability import ApplicabilityRule, rule_for
from evolog.projections.graph._embed import get_embedder

from bench.bench_router_holdout import KINDS_OF_RULE, Query, collect, fit, halves, load_holdout

BENCH = Path(__file__).parent
SETS = [BENCH / "routing_holdout", BENCH / "routing_holdout_b", BENCH / "routing_holdout_c"]
Part = tuple[str, int, int]
"""(set name, split seed, half)."""


def routed(sets: list[Path], splits: int, embedder: Any) -> dict[Part, list[Query]]:
    out: dict[Part, list[Query]] = {}
    for folder in sets:
        domains, unrelated = load_holdout(folder)
        for seed in range(splits):
            for half, (d, u) in enumerate(halves(domains, unrelated, seed)):
                out[(folder.name, seed, half)] = collect(d, u, embedder)
                print(f"routed {folder.name} split {seed} half {half}", file=sys.stderr)
    return out


def figures(parts: list[list[Query]], rule: ApplicabilityRule) -> dict[str, float]:
    """Mean related-right and unrelated-at-mix rates (%) over ``parts``."""
    from bench.bench_router_holdout import rates

    got = [rates(p, rule) for p in parts]
    return {
        "related_right": round(100 * statistics.fmean(g["related_right"] for g in got), 1),
        "unrelated_mix": round(100 * statistics.fmean(g["unrelated_at_issue_mix"] for g in got), 1),
        "near": round(100 * statistics.fmean(g["near_to_memory"] for g in got), 1),
    }


def rule_list(rule: ApplicabilityRule) -> list[float]:
    return [rule.min_similarity, rule.min_margin, rule.topic_radius, rule.lexical_weight]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--embedder", default="wordllama")
    p.add_argument("--splits", type=int, default=1)
    p.add_argument("--cost", type=float, action="append", default=[])
    p.add_argument("--rule", choices=KINDS_OF_RULE, default="lexical")
    p.add_argument("--set", dest="sets", action="append", type=Path, default=[])
    args = p.parse_args(argv)
    embedder = get_embedder(args.embedder)
    data = routed(args.sets or SETS, args.splits, embedder)
    names = sorted({s for s, _, _ in data})
    shipped = rule_for(embedder.name)
    print(json.dumps({
        "encoder": embedder.name, "rule": "shipped", "fitted": rule_list(shipped),
        **{n: figures([q for k, q in data.items() if k[0] == n], shipped) for n in names},
    }), flush=True)  # fmt: skip
    for cost in args.cost or [2.0]:
        for name in names:
            rows: dict[str, list[dict[str, float]]] = {"in_sample": [], "other_half": []}
            rules = []
            for (s, seed, half), train in data.items():
                if s != name:
                    continue
                rule = fit(train, cost, args.rule)
                rules.append(rule_list(rule))
                rows["in_sample"].append(figures([train], rule))
                rows["other_half"].append(figures([data[(s, seed, 1 - half)]], rule))
                for other in names:
                    if other != name:
                        parts = [q for k, q in data.items() if k[0] == other]
                        rows.setdefault(other, []).append(figures(parts, rule))
            summary = {
                k: {f: round(statistics.fmean(r[f] for r in v), 1) for f in v[0]}
                for k, v in rows.items()
            }
            print(json.dumps({"encoder": embedder.name, "cost": cost, "trained_on": name,
                              "rules": rules, **summary}), flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
