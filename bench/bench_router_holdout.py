"""Routing on held-out domains, cross-validated: does the router claim memories it lacks?

The set (bench/routing_holdout/) has 24 narrow software domains, each with 6 stored traces
(task and steps), 4 related tasks phrased differently (they must reach a node of their
domain) and 2 "near" tasks that share the domain's vocabulary but are another job; plus 60
unrelated software tasks and 36 everyday ones. None of it is in bench/routing_set.json.

A split draws 12 domains (a store of 72 traces, dreamed) and half of the unrelated tasks;
the other 12 domains and the other half form the second store. The rule's floor and margin
are fitted on one half and measured on the other (both directions), over several random
splits: the figures are the mean and spread over those held-out halves. Fitting maximises
related-right minus ``--cost`` times the unrelated-to-memory rate (see :func:`fit`).

    .venv/bin/python bench/bench_router_holdout.py crossval [--splits 5] [--embedder NAME]
    .venv/bin/python bench/bench_router_holdout.py fit      # the rule to ship: all halves pooled
    .venv/bin/python bench/bench_router_holdout.py misses   # where related tasks are lost
    .venv/bin/python bench/bench_router_holdout.py judge --model oracle|claude [--splits 1]

``judge`` routes every held-out half through :class:`JudgedRouter` (nothing is fitted): with
``--model claude`` the Claude model decides applicability (needs ANTHROPIC_API_KEY; about
110 calls per half); ``--model oracle`` picks the first consulted candidate of the right
domain, the upper bound of any judge over the same candidates. ``--set DIR`` (repeatable)
evaluates other set folders, e.g. bench/routing_holdout_b.

``--rule lexical`` (the default) fits floor, margin and lexical weight with the margin from
the goal-with-summary similarity; ``--rule similarity`` the earlier floor, margin and radius.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evolog.advice.routing._applicability import ApplicabilityRule, null_sample, rule_for
from evolog.advice.routing._judge import JudgedRouter, ModelJudge
from evolog.advice.routing._lexical import lexical_evidence
from evolog.advice.routing._router import Router, RouterConfig
from evolog.dream._cycle import dream
from evolog.eventlog import EventLog
from evolog.projections.graph._embed import Embedder, get_embedder
from evolog.projections.graph._vectors import node_texts

from bench.bench_router import strategy_events

HOLDOUT = Path(__file__).with_name("routing_holdout")
KINDS = ("related", "near", "software", "everyday")
RADII = (0.4, 0.5, 2.0)
"""Topic radii tried when fitting (2.0: no background task is ever left out)."""


def load_holdout(
    *folders: Path,
) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    """(domains, unrelated) as stored; several folders are pooled (default: HOLDOUT)."""
    domains: list[dict[str, Any]] = []
    unrelated: dict[str, list[str]] = {"software": [], "everyday": []}
    for folder in folders or (HOLDOUT,):
        with open(folder / "domains.json", encoding="utf-8") as f:
            domains += json.load(f)["domains"]
        with open(folder / "unrelated.json", encoding="utf-8") as f:
            for kind, tasks in json.load(f).items():
                unrelated[kind] = unrelated.get(kind, []) + tasks
    return domains, unrelated


@dataclass(frozen=True)
class Query:
    """One routed task with what any rule needs to decide it again."""

    kind: str
    task: str
    want: str | None
    # (domain of the node, similarity, composite, {radius: null similarity}, similarity to
    # the goal-with-summary text, lexical margin) per candidate, in the router's order
    candidates: tuple[tuple[str | None, float, float, dict[float, float], float, float], ...]


LOOSE = RouterConfig(min_similarity=-1.0, min_margin=-9.0)
"""No floor and no margin: every candidate is kept, so any rule can be replayed offline."""


def build_router(
    domains: list[dict[str, Any]],
    embedder: Embedder,
    directory: str,
    config: RouterConfig | None = LOOSE,
) -> Router:
    """A store holding every trace of ``domains``, dreamed, and its router (``config`` None:
    the router's defaults)."""
    log = EventLog(directory, create=True, durability="none")
    for d in domains:
        for i, trace in enumerate(d["traces"]):
            strategy = {"id": f"{d['name']}/{i}", "task": trace["task"], "steps": trace["steps"]}
            log.append_many(strategy_events(strategy))
    dream(log, embedder=embedder)
    router = Router.from_log(log, embedder=embedder, config=config)
    log.close()
    return router


def domains_of(graph: Any) -> dict[str, str]:
    """Each node (merged ones resolved) -> the domain of the traces it was dreamed from."""
    return {
        graph.resolve(n.id): t.split("/")[0] for n in graph.nodes(live_only=False) for t in n.traces
    }


def half_tasks(
    domains: list[dict[str, Any]], unrelated: dict[str, list[str]]
) -> list[tuple[str, str, str | None]]:
    """(kind, task, the domain it must reach or None) for every task of a half."""
    tasks: list[tuple[str, str, str | None]] = []
    tasks += [("related", t, d["name"]) for d in domains for t in d["related"]]
    tasks += [("near", t, None) for d in domains for t in d["near"]]
    tasks += [(kind, t, None) for kind in ("software", "everyday") for t in unrelated[kind]]
    return tasks


def collect(
    domains: list[dict[str, Any]], unrelated: dict[str, list[str]], embedder: Embedder
) -> list[Query]:
    """Route every task of a half through its store; keep the evidence."""
    with tempfile.TemporaryDirectory() as tmp:
        router = build_router(domains, embedder, os.path.join(tmp, "store"))
    graph = router.graph
    domain_of = domains_of(graph)
    sample = null_sample(embedder)
    lexical = lexical_evidence()
    texts = {n.id: node_texts(n) for n in graph.nodes()}
    vectors = {n: embedder.embed(list(t)) for n, t in texts.items()}
    out = []
    for kind, task, want in half_tasks(domains, unrelated):
        decision = router.route(task)
        vector = router.index.vector_of(task)
        generic = lexical.generic_coverage(task)
        cands = tuple(
            (
                domain_of.get(c.node), c.similarity, c.composite,
                {r: sample.nearest(vector, vectors[c.node], r)[0] for r in RADII},
                _summary(graph, c.node, vectors[c.node], vector, c.similarity),
                lexical.coverage(task, texts[c.node]) - generic,
            )
            for c in decision.candidates
        )  # fmt: skip
        out.append(Query(kind, task, want, cands))
    return out


def _summary(graph: Any, node: str, rows: Any, vector: Any, similarity: float) -> float:
    """The similarity to the node's goal-with-summary text (node_texts puts it last)."""
    found = graph.node(node)
    return float(rows[-1] @ vector) if found is not None and found.summary.strip() else similarity


def decide(query: Query, rule: ApplicabilityRule, threshold: float = 0.4) -> str | None:
    """The domain the router would route ``query`` to under ``rule`` (None: zero shot).

    The same test as :func:`advice.routing._applicability.judge`, without building its verdict
    (fitting calls this millions of times); tests check that both agree with the router.
    """
    for domain, similarity, composite, nulls, summary, lexical in query.candidates:
        start = summary if rule.summary_margin else similarity
        margin = start - nulls[rule.topic_radius] + rule.lexical_weight * lexical
        floor = similarity >= rule.min_similarity
        if composite >= threshold and floor and margin >= rule.min_margin:
            return domain or "?"
    return None


def rates(queries: list[Query], rule: ApplicabilityRule) -> dict[str, float]:
    """Related-right rate and the memory rate of each unrelated kind."""
    got = {k: [q for q in queries if q.kind == k] for k in KINDS}
    related = got["related"]
    out = {"related_right": sum(decide(q, rule) == q.want for q in related) / len(related)}
    for kind in KINDS[1:]:
        out[f"{kind}_to_memory"] = sum(decide(q, rule) is not None for q in got[kind]) / max(
            1, len(got[kind])
        )
    unrel = [q for q in queries if q.kind != "related"]
    out["unrelated_to_memory"] = sum(decide(q, rule) is not None for q in unrel) / len(unrel)
    out["unrelated_at_issue_mix"] = false_rate(out)
    return {k: round(v, 4) for k, v in out.items()}


MIX = {"near": 10 / 60, "software": 30 / 60, "everyday": 20 / 60}
"""How unrelated tasks are mixed when fitting: the mix of the issue's held-out set."""


def false_rate(r: dict[str, float]) -> float:
    """The unrelated-to-memory rate at the :data:`MIX` of unrelated kinds."""
    return sum(w * r[f"{kind}_to_memory"] for kind, w in MIX.items())


KINDS_OF_RULE = ("similarity", "lexical")
"""``similarity``: floor, margin and topic radius over the best similarity (the previous
rule); ``lexical``: floor, margin and lexical weight, the margin from the goal-with-summary
similarity, radius 0.4."""


def fit(queries: list[Query], cost: float = 2.0, kind: str = "similarity") -> ApplicabilityRule:
    """The rule of ``kind`` maximising ``related_right - cost * false_rate``.

    ``cost`` 2 is the goals' own exchange rate (10 % of related tasks may miss, 5 % of
    unrelated ones may be misrouted). A hard cap on the training false rate was tried first:
    with ~70 unrelated tasks per half it turns on one or two tasks and overfits.
    """
    if kind == "similarity":
        floors, margins = [x / 100 for x in range(15, 61)], [x / 100 for x in range(-15, 26)]
        extra = [(r, 0.0, False) for r in RADII]
    else:
        floors, margins = [x / 100 for x in range(15, 46)], [x / 100 for x in range(-10, 21)]
        extra = [(0.4, w, True) for w in (0.05, 0.1, 0.2, 0.3, 0.5)]
    best: tuple[tuple[float, ...], ApplicabilityRule] | None = None
    for radius, weight, summary in extra:
        for floor in floors:
            for margin in margins:
                rule = ApplicabilityRule(floor, margin, radius, weight, summary)
                r = rates(queries, rule)
                # Ties go to the stricter rule (higher margin, then floor, then radius).
                key = (round(r["related_right"] - cost * false_rate(r), 6), margin, floor, -radius)
                if best is None or key > best[0]:
                    best = (key, rule)
    assert best is not None
    return best[1]


def misses(queries: list[Query], rule: ApplicabilityRule) -> dict[str, float]:
    """Where related tasks go under ``rule``, by the top-ranked candidate: of the right
    domain or not, and whether some candidate is accepted (rates over related tasks)."""
    related = [q for q in queries if q.kind == "related"]
    out = {"top1_right_domain": 0.0, "top1_right_rejected": 0.0, "top1_wrong_rejected": 0.0}
    out["top1_wrong_to_wrong_node"] = out["top1_wrong_rescued"] = 0.0
    for q in related:
        top1 = bool(q.candidates) and q.candidates[0][0] == q.want
        got = decide(q, rule)
        if top1:
            out["top1_right_domain"] += 1
            out["top1_right_rejected"] += got is None
        elif got is None:
            out["top1_wrong_rejected"] += 1
        else:
            out["top1_wrong_rescued" if got == q.want else "top1_wrong_to_wrong_node"] += 1
    return {k: round(v / max(1, len(related)), 4) for k, v in out.items()}


def halves(
    domains: list[dict[str, Any]], unrelated: dict[str, list[str]], seed: int
) -> list[tuple[list[dict[str, Any]], dict[str, list[str]]]]:
    """Two disjoint halves of the domains and of each unrelated list."""
    rng = random.Random(seed)
    order = list(range(len(domains)))
    rng.shuffle(order)
    mid = len(order) // 2
    parts = []
    for h, picked in enumerate((order[:mid], order[mid:])):
        un = {}
        for kind, tasks in unrelated.items():
            shuffled = tasks[:]
            random.Random(seed * 31 + len(kind)).shuffle(shuffled)
            un[kind] = shuffled[h::2]
        parts.append(([domains[i] for i in sorted(picked)], un))
    return parts


def crossval(
    embedder: Embedder,
    splits: int,
    cost: float,
    kind: str = "similarity",
    folders: tuple[Path, ...] = (),
) -> list[dict[str, Any]]:
    """Per held-out half: the fitted rule, its rates, and the old floor-only rule's."""
    domains, unrelated = load_holdout(*folders)
    old = ApplicabilityRule(0.30 if embedder.name.startswith("wordllama") else 0.21, -9.0, 2.0)
    rows = []
    for seed in range(splits):
        data = [collect(d, u, embedder) for d, u in halves(domains, unrelated, seed)]
        for train, test in ((0, 1), (1, 0)):
            rule = fit(data[train], cost, kind)
            rows.append(
                {
                    "split": seed, "held_out_half": test,
                    "rule": [rule.min_similarity, rule.min_margin, rule.topic_radius,
                             rule.lexical_weight],
                    "fitted": rates(data[test], rule),
                    "old_floor_only": rates(data[test], old),
                    "shipped": rates(data[test], rule_for(embedder.name)),
                }
            )  # fmt: skip
    return rows


class OracleJudge(ModelJudge):
    """Picks the first consulted candidate of the task's domain: the bound of any judge."""

    def __init__(self, want: dict[str, str | None], domain_of: dict[str, str]) -> None:
        super().__init__(lambda prompt: "0", name="oracle")
        self.want, self.domain_of = want, domain_of

    def pick(self, task: str, entries: Any, graph: Any) -> tuple[int | None, str]:
        shown = list(entries[: self.candidates])
        right = [i for i, e in enumerate(shown) if self.domain_of.get(e.node) == self.want[task]]
        return (right[0] if right else None), "oracle"


def judged(
    embedder: Embedder, splits: int, model: str, folders: tuple[Path, ...] = ()
) -> list[dict[str, Any]]:
    """Per half: rates with the judge and with the shipped offline rule, same routers."""
    domains, unrelated = load_holdout(*folders)
    claude = None
    if model == "claude":
        from evolog.dream.evolve._claude import ClaudeModel

        claude = ClaudeModel()
    rows = []
    for seed in range(splits):
        for h, (d, u) in enumerate(halves(domains, unrelated, seed)):
            with tempfile.TemporaryDirectory() as tmp:
                router = build_router(d, embedder, os.path.join(tmp, "store"), config=None)
            domain_of = domains_of(router.graph)
            tasks = half_tasks(d, u)
            want = {t: w for _, t, w in tasks}
            judge = ModelJudge(claude, name="claude") if claude else OracleJudge(want, domain_of)
            judging = JudgedRouter.around(router, judge)
            got: dict[str, dict[str, list[bool]]] = {"judged": {}, "offline": {}}
            for kind, task, w in tasks:
                for which, r in (("judged", judging), ("offline", router)):
                    e = r.route(task).entry
                    hit = e is not None and (kind != "related" or domain_of.get(e.node) == w)
                    got[which].setdefault(kind, []).append(hit)
            row: dict[str, Any] = {"split": seed, "half": h}
            for which, kinds in got.items():
                r = {"related_right": sum(kinds["related"]) / len(kinds["related"])}
                for kind in KINDS[1:]:
                    r[f"{kind}_to_memory"] = sum(kinds[kind]) / max(1, len(kinds[kind]))
                r["unrelated_at_issue_mix"] = false_rate(r)
                row[which] = {k: round(v, 4) for k, v in r.items()}
            rows.append(row)
    return rows


def summarise(rows: list[dict[str, Any]], which_of: tuple[str, ...] = ()) -> dict[str, Any]:
    """Mean and spread (population sd, min, max) of each rate over the held-out halves."""
    out: dict[str, Any] = {}
    for which in which_of or ("fitted", "old_floor_only", "shipped"):
        out[which] = {}
        for key in rows[0][which]:
            vals = [r[which][key] for r in rows]
            out[which][key] = {
                "mean": round(statistics.fmean(vals), 3),
                "sd": round(statistics.pstdev(vals), 3),
                "min": min(vals),
                "max": max(vals),
            }
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("what", choices=["crossval", "fit", "misses", "judge"])
    p.add_argument("--embedder", default="wordllama")
    p.add_argument("--splits", type=int, default=5)
    p.add_argument("--cost", type=float, default=2.0, help="weight of a false memory")
    p.add_argument("--model", choices=["oracle", "claude"], default="oracle", help="judge")
    p.add_argument("--rule", choices=KINDS_OF_RULE, default="lexical", help="the rule to fit")
    p.add_argument(
        "--set",
        dest="sets",
        action="append",
        type=Path,
        default=[],
        help="a set folder (repeat to pool sets; default bench/routing_holdout)",
    )
    args = p.parse_args(argv)
    folders = tuple(args.sets)
    embedder = get_embedder(args.embedder)
    if args.what == "crossval":
        rows = crossval(embedder, args.splits, args.cost, args.rule, folders)
        for row in rows:
            print(json.dumps(row))
        print(json.dumps({"summary": summarise(rows)}))
    elif args.what == "judge":
        rows = judged(embedder, args.splits, args.model, folders)
        for row in rows:
            print(json.dumps(row))
        print(json.dumps({"summary": summarise(rows, ("judged", "offline"))}))
    else:
        # Pooled over every half of every split: stores of 12 domains, as the held-out set's.
        domains, unrelated = load_holdout(*folders)
        queries = [
            q
            for seed in range(args.splits)
            for d, u in halves(domains, unrelated, seed)
            for q in collect(d, u, embedder)
        ]
        if args.what == "misses":
            shipped = rule_for(embedder.name)
            print(json.dumps({"rule": str(shipped), **misses(queries, shipped)}))
            return 0
        rule = fit(queries, args.cost, args.rule)
        fitted = [rule.min_similarity, rule.min_margin, rule.topic_radius, rule.lexical_weight]
        print(json.dumps({"rule": fitted, **rates(queries, rule)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
