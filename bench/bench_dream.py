"""Heuristic dream throughput: N synthetic traces in a store, then one ``dream()`` call.

Traces are tasks drawn from 200 templates (so similar tasks merge, as in real use), 3-6
steps each, one in four failed with an error on its last step. The time covers the whole
call as the CLI runs it: reading the traces projection, folding the graph, dreaming every
trace, consolidating against the vector index, and appending each cycle (fsync per cycle).

    .venv/bin/python bench/bench_dream.py --sizes 100,1000,10000 [--embedder hashing]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evolog.dream import DreamConfig, dream
from evolog.eventlog import Attempt, Event, EventLog, Outcome, Step
from evolog.projections.graph._embed import get_embedder
from evolog.projections.graph._memgraph import load_memgraph

_VERB_TEXT = """fix debug migrate secure document
test deploy monitor refactor profile"""
_VERBS = _VERB_TEXT.split()
_OBJECTS = """the login service, the orders query, the payment api, the nightly backup, the
docker image, the ci pipeline, the react dashboard, the search index, the billing report,
the user table, the tls certificate, the message queue, the cache layer, the auth token,
the csv importer, the email sender, the metrics exporter, the mobile layout, the pdf export,
the rate limiter""".replace("\n", " ").split(", ")
_ACTIONS = """read the logs|reproduce locally|write a failing test|inspect the config|patch the
code|run the tests|deploy to staging|check the metrics|roll back|add an index|bump the
version|clear the cache|restart the service|update the docs""".replace("\n", " ").split("|")


def synthetic_traces(n: int, seed: int = 3) -> list[list[Event]]:
    """``n`` traces as event batches."""
    rng = random.Random(seed)
    templates = [(v, o) for v in _VERBS for o in _OBJECTS]
    out = []
    for i in range(n):
        verb, obj = rng.choice(templates)
        tid = f"bench-{i}"
        steps = rng.sample(_ACTIONS, rng.randint(3, 6))
        failed = rng.random() < 0.25
        events: list[Event] = [Attempt(id=tid, action_id=tid, task=f"{verb} {obj}", agent="b")]
        for k, action in enumerate(steps):
            bad = failed and k == len(steps) - 1
            events.append(
                Step(id=f"{tid}.{k}", action_id=tid, index=k, action=action.strip(),
                     ok=not bad, error="TimeoutError: gave up after 30s" if bad else None,
                     result="failed" if bad else "ok")
            )  # fmt: skip
        status = "failed" if failed else "success"
        events.append(Outcome(id=f"{tid}.o", action_id=tid, status=status, agent="b"))
        out.append(events)
    return out


def run(n: int, embedder_name: str | None) -> dict[str, Any]:
    """Dream ``n`` fresh traces; returns timings."""
    embedder = get_embedder(embedder_name)
    embedder.embed(["warm up"])  # model loading is not dream throughput
    with tempfile.TemporaryDirectory() as tmp:
        log = EventLog(Path(tmp) / "store", create=True, durability="batch")
        for batch in synthetic_traces(n):
            log.append_many(batch)
        log.flush()
        log.close()
        log = EventLog(Path(tmp) / "store")  # durability "always", as the CLI
        t0 = time.perf_counter()
        report = dream(log, embedder=embedder, config=DreamConfig())
        elapsed = time.perf_counter() - t0
        graph = load_memgraph(log)
        disk = sum(p.stat().st_size for p in (Path(tmp) / "store").rglob("*") if p.is_file())
        log.close()
    return {
        "traces": n,
        "embedder": embedder.name,
        "seconds": round(elapsed, 3),
        "ms_per_trace": round(elapsed * 1e3 / n, 3),
        "cycles": len(report.cycles),
        "events": sum(c.events for c in report.cycles),
        "live_nodes": sum(1 for _ in graph.nodes()),
        "merged": sum(c.nodes_merged for c in report.cycles),
        "store_bytes": disk,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="100,1000,10000")
    p.add_argument("--embedder", default=None)
    args = p.parse_args(argv)
    for n in (int(s) for s in args.sizes.split(",")):
        print(json.dumps(run(n, args.embedder)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
