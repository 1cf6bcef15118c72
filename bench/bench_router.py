"""Router benchmarks: routing quality on bench/routing_set.json and latency at scale.

Quality: every strategy of the routing set becomes one trace (its task, its steps, a
successful outcome), dreamed by the heuristic dreamer into a store; then every paraphrase
must route MEMORY_TRAVERSAL to its strategy's node and every unrelated task ZERO_SHOT.
Latency: a synthetic graph of N nodes (no log needed: nodes are folded straight into a
memory graph), its vector index (``index_build_s``: embedding and syncing every node), the
first route (which builds the usearch index of that unsaved index) and the time of
``Router.route`` per query.

    .venv/bin/python bench/bench_router.py quality [--embedder NAME]
    .venv/bin/python bench/bench_router.py latency --sizes 1000,10000,100000
    .venv/bin/python bench/bench_router.py calibrate|crossval|reference
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evolog.advice.routing._router import Router, RouterConfig, RouterPath
from evolog.dream._cycle import dream
from evolog.eventlog import Attempt, EventLog, Node, Outcome, Step
from evolog.projections.graph._embed import Embedder, embedder_names, get_embedder
from evolog.projections.graph._memgraph import MemGraph
from evolog.projections.graph._vectors import VectorIndex, wanted_texts

ROUTING_SET = Path(__file__).with_name("routing_set.json")


def load_set(path: Path = ROUTING_SET) -> dict[str, Any]:
    """The routing set as stored."""
    with open(path, encoding="utf-8") as f:
        data: dict[str, Any] = json.load(f)
    return data


def strategy_events(strategy: dict[str, Any]) -> list[Any]:
    """One successful trace of a strategy's task."""
    sid = strategy["id"]
    events: list[Any] = [Attempt(id=sid, action_id=sid, task=strategy["task"], agent="bench")]
    for i, action in enumerate(strategy["steps"]):
        events.append(
            Step(id=f"{sid}-s{i}", action_id=sid, index=i, action=action, result="done", ok=True)
        )
    events.append(Outcome(id=f"{sid}-o", action_id=sid, status="success", score=0.9))
    return events


@dataclass
class Quality:
    """Routing quality of one embedder on the routing set."""

    embedder: str
    related: int
    right_node: int
    wrong_node: int
    related_zero_shot: int
    unrelated: int
    unrelated_to_memory: int
    nodes: int
    related_sims: list[float]
    unrelated_sims: list[float]

    def summary(self) -> dict[str, Any]:
        """Rates and counts, for printing."""
        return {
            "embedder": self.embedder,
            "nodes": self.nodes,
            "related": self.related,
            "right_node_rate": round(self.right_node / self.related, 4),
            "wrong_node": self.wrong_node,
            "related_zero_shot": self.related_zero_shot,
            "unrelated": self.unrelated,
            "unrelated_to_memory_rate": round(self.unrelated_to_memory / self.unrelated, 4),
        }


def build_store(directory: str, embedder: Embedder, data: dict[str, Any]) -> EventLog:
    """A store holding the routing set's strategies, dreamed."""
    log = EventLog(directory, create=True, durability="none")
    for strategy in data["strategies"]:
        log.append_many(strategy_events(strategy))
    dream(log, embedder=embedder)
    return log


def evaluate(
    embedder: Embedder, data: dict[str, Any] | None = None, config: RouterConfig | None = None
) -> Quality:
    """Route every task of the set through a freshly dreamed store."""
    data = data or load_set()
    with tempfile.TemporaryDirectory() as tmp:
        log = build_store(os.path.join(tmp, "store"), embedder, data)
        router = Router.from_log(log, embedder=embedder, config=config)
        log.close()
    graph = router.graph
    node_of = {
        t: router.graph.resolve(n.id) for n in graph.nodes(live_only=False) for t in n.traces
    }
    q = Quality(embedder.name, 0, 0, 0, 0, 0, 0, len(list(graph.nodes())), [], [])
    for strategy in data["strategies"]:
        want = node_of.get(strategy["id"])
        for task in strategy["paraphrases"]:
            decision = router.route(task)
            q.related += 1
            sims = [c.similarity for c in decision.candidates if c.node == want]
            q.related_sims.append(sims[0] if sims else 0.0)
            if decision.path is RouterPath.ZERO_SHOT:
                q.related_zero_shot += 1
            elif decision.entry is not None and decision.entry.node == want:
                q.right_node += 1
            else:
                q.wrong_node += 1
    for task in data["unrelated"]:
        decision = router.route(task)
        q.unrelated += 1
        q.unrelated_sims.append(max((c.similarity for c in decision.candidates), default=0.0))
        q.unrelated_to_memory += decision.path is not RouterPath.ZERO_SHOT
    return q


def calibrate(embedder: Embedder) -> dict[str, Any]:
    """Similarity distributions of right nodes and of unrelated tasks' nearest nodes."""
    q = evaluate(embedder, config=RouterConfig(min_similarity=-1.0))
    rel, unrel = np.array(q.related_sims), np.array(q.unrelated_sims)
    best = max(
        (float(t) for t in np.arange(0.2, 0.95, 0.01)),
        key=lambda t: (np.mean(rel >= t) + np.mean(unrel < t), -t),
    )
    return {
        "embedder": embedder.name,
        "related_sim_p05_p50": [round(float(np.quantile(rel, p)), 3) for p in (0.05, 0.5)],
        "unrelated_max_sim_p50_p95_max": [
            round(float(np.quantile(unrel, p)), 3) for p in (0.5, 0.95, 1.0)
        ],
        "best_floor": round(best, 2),
        "at_best": [round(float(np.mean(rel >= best)), 3), round(float(np.mean(unrel >= best)), 3)],
    }


def _subset(data: dict[str, Any], domains: set[str], half: int) -> dict[str, Any]:
    unrelated = data["unrelated"][half::2]
    strategies = [s for s in data["strategies"] if s["domain"] in domains]
    return {**data, "strategies": strategies, "unrelated": unrelated}


def crossval(embedder: Embedder) -> list[dict[str, Any]]:
    """Two folds by domain: the floor is calibrated on one half, measured on the other."""
    data = load_set()
    domains = sorted({s["domain"] for s in data["strategies"]})
    halves = [set(domains[0::2]), set(domains[1::2])]
    out = []
    for fold in (0, 1):
        train = _subset(data, halves[fold], fold)
        test = _subset(data, halves[1 - fold], 1 - fold)
        floor = _best_floor(embedder, train)
        quality = evaluate(embedder, test, RouterConfig(min_similarity=floor))
        out.append({"fold": fold, "floor": floor, **quality.summary()})
    return out


def _best_floor(embedder: Embedder, data: dict[str, Any]) -> float:
    q = evaluate(embedder, data, RouterConfig(min_similarity=-1.0))
    rel, unrel = np.array(q.related_sims), np.array(q.unrelated_sims)
    return round(
        max(
            (float(t) for t in np.arange(0.2, 0.95, 0.01)),
            key=lambda t: (np.mean(rel >= t) + np.mean(unrel < t), -t),
        ),
        2,
    )


# -- latency ---------------------------------------------------------------------------------
_VOCABULARY = """fix debug deploy migrate optimise profile index cache retry parse render test
build scale monitor backup restore encrypt rotate audit bundle lint format schedule queue server
client database table query pipeline container cluster bucket token session payment invoice
report chart model dataset feature branch commit release endpoint"""
_WORDS = _VOCABULARY.split()


def synthetic_graph(n: int, seed: int = 1) -> MemGraph:
    """``n`` live strategy nodes with random goals from a small vocabulary."""
    rng = random.Random(seed)
    graph = MemGraph()
    for i in range(n):
        goal = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(4, 9)))
        conf = round(rng.uniform(0.3, 1.0), 3)
        graph.apply(Node(cycle="bench", node=f"n{i}", goal=goal, summary=goal, confidence=conf))
    return graph


def latency(embedder: Embedder, n: int, queries: int = 2000) -> dict[str, Any]:
    """Build a graph and index of ``n`` nodes, then time ``queries`` routes."""
    graph = synthetic_graph(n)
    index = VectorIndex(embedder)
    t0 = time.perf_counter()
    index.sync(wanted_texts(graph))
    build = time.perf_counter() - t0
    router = Router(graph, index)
    rng = random.Random(2)
    tasks = [" ".join(rng.choice(_WORDS) for _ in range(6)) for _ in range(queries)]
    t0 = time.perf_counter()
    router.route(tasks[0])  # builds the usearch index (an unsaved index builds it lazily)
    first = time.perf_counter() - t0
    for task in tasks[1:50]:
        router.route(task)  # warm up caches and the model
    times = []
    for task in tasks:
        t = time.perf_counter()
        router.route(task)
        times.append((time.perf_counter() - t) * 1e3)
    times.sort()
    return {
        "embedder": embedder.name,
        "nodes": n,
        "index_build_s": round(build, 2),
        "first_route_s": round(first, 2),
        "p50_ms": round(statistics.median(times), 3),
        "p99_ms": round(times[int(len(times) * 0.99) - 1], 3),
        "max_ms": round(times[-1], 3),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("what", choices=["quality", "latency", "calibrate", "crossval", "reference"])
    p.add_argument("--embedder", action="append", help=f"one of {', '.join(embedder_names())}")
    p.add_argument("--sizes", default="1000,10000,100000")
    p.add_argument("--queries", type=int, default=2000)
    args = p.parse_args(argv)
    names = args.embedder or list(embedder_names())
    for name in names:
        embedder = get_embedder(name)
        if args.what == "quality":
            print(json.dumps(evaluate(embedder).summary()))
        elif args.what == "calibrate":
            print(json.dumps(calibrate(embedder)))
        elif args.what == "crossval":
            for row in crossval(embedder):
                print(json.dumps(row))
        elif args.what == "reference":
            # The reference's rule: composite >= 0.4 with no similarity floor.
            loose = RouterConfig(min_similarity=-1.0)
            print(json.dumps(evaluate(embedder, config=loose).summary()))
        else:
            for n in (int(s) for s in args.sizes.split(",")):
                print(json.dumps(latency(embedder, n, args.queries)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
