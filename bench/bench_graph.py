"""Cold ``evolog route`` and ``evolog graph`` on large memory graphs: checkpoint vs full refold.

Builds a store per size by appending dream events directly (per node: a ``node``, three
``child_step``s and a ``constraint``; a ``link`` to the previous node; one cycle per 100
nodes; an outcome naming every tenth node), sealed. Then, in fresh processes:

* ``route (checkpoint)`` / ``graph (checkpoint)``: the CLI as shipped, on a warm checkpoint
  (the first call, which writes it and embeds every node, is timed separately as ``first``);
* ``route (refold)`` / ``graph (refold)``: what the CLI did before the checkpoint, in the same
  run: fold every dream event (``load_memgraph``), sync the vector index against every live
  node, then route, or render every node and print.

With ``--attempts N``, N attempts and their outcomes (every other one naming a node) are
appended to each store after it is built, and other figures are taken instead: a cold route
with nothing new, and a cold route right after ONE more attempt, or one more outcome of an attempt
that no node counts (appended before each timed run, outside the timing): those are what the
graph checkpoint's journal is for (:mod:`evolog.projections.graph._delta`); and one after an
outcome naming a node, which changes its view (the state and that view are written again).

Prints the median of ``--repeat`` runs of each: wall time, and the CPU time (user + system)
the child process used, which a loaded machine distorts less. The default size is small; the
figures in bench/RESULTS.md come from ``--sizes 10000,100000`` and
``--sizes 10000 --attempts 100000``.

    .venv/bin/python bench/bench_graph.py [--sizes 2000] [--attempts 0] [--repeat 5] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evolog.eventlog import (
    Attempt,
    ChildStep,
    Constraint,
    DreamBegin,
    DreamEnd,
    Event,
    EventLog,
    Link,
    Node,
    Outcome,
)

TASK = "the test suite fails with an import error after upgrading a dependency"
_VERBS = ("fix", "debug", "speed up", "migrate", "refactor", "document", "deploy", "test")
_THINGS = (
    "import error", "flaky test", "slow query", "memory leak", "race condition", "timeout",
    "broken build", "login page", "payment webhook", "cache eviction", "docker image",
    "cron job", "csv export", "search index", "rate limiter", "config loader", "unit tests",
)  # fmt: skip
_WHERE = (
    "in the api", "in the worker", "on ci", "in production", "in the cli", "in the ios app",
    "in the data pipeline", "in the admin panel", "after an upgrade", "under load",
)  # fmt: skip
_ACTIONS = (
    "read the traceback", "pin the dependency", "add a retry", "write a failing test",
    "bisect the commits", "add an index", "raise the timeout", "clear the cache",
    "rerun the job", "check the logs",
)  # fmt: skip


def build(path: str, nodes: int, seed: int = 7) -> None:
    """A store of ``nodes`` strategy nodes, appended as dream events and sealed."""
    rng = random.Random(seed)
    with EventLog(path, create=True, durability="none", auto_seal="off") as log:
        batch: list[Event] = []
        cycle = ""
        for i in range(nodes):
            if i % 100 == 0:
                if cycle:
                    batch.append(
                        DreamEnd(cycle=cycle, consumed=[f"t{j}" for j in range(i - 100, i)])
                    )
                cycle = f"dream-{i // 100:08d}"
                batch.append(DreamBegin(cycle=cycle, dreamer="bench"))
            node = f"node-{i:08d}"
            goal = f"{rng.choice(_VERBS)} the {rng.choice(_THINGS)} {rng.choice(_WHERE)}"
            steps = rng.sample(_ACTIONS, 3)
            confidence = round(rng.uniform(0.3, 0.9), 2)
            summary = " → ".join(steps)
            batch.append(
                Node(cycle=cycle, node=node, goal=goal, summary=summary, confidence=confidence,
                     traces=[f"t{i}"])
            )  # fmt: skip
            for k, action in enumerate(steps):
                batch.append(ChildStep(cycle=cycle, node=node, index=k, action=action))
            avoid = f"avoid '{rng.choice(_ACTIONS)}' here"
            batch.append(Constraint(cycle=cycle, node=node, trace=f"t{i}", description=avoid))
            if i:
                prev = f"node-{i - 1:08d}"
                batch.append(Link(cycle=cycle, src=node, dst=prev, edge_type="SIMILAR"))
            if i % 10 == 0:
                batch.append(Outcome(action_id=f"a{i}", status="success", decided_by=[node]))
            if len(batch) >= 20_000:
                log.append_many(batch)
                batch = []
        batch.append(DreamEnd(cycle=cycle, consumed=[]))
        log.append_many(batch)
        log.seal()


def add_attempts(path: str, count: int, nodes: int, seed: int = 11) -> None:
    """Append ``count`` attempts, each with an outcome (every other one naming a node)."""
    rng = random.Random(seed)
    with EventLog(path, durability="none", auto_seal="off") as log:
        batch: list[Event] = []
        for j in range(count):
            action = f"bench-act-{j:08d}"
            batch.append(Attempt(action_id=action, task=f"{rng.choice(_VERBS)} {j}"))
            named = [f"node-{rng.randrange(nodes):08d}"] if j % 2 == 0 else []
            status = rng.choice(("success", "failed"))
            batch.append(Outcome(action_id=action, status=status, decided_by=named))
            if len(batch) >= 20_000:
                log.append_many(batch)
                batch = []
        log.append_many(batch)
        log.seal()


_OLD_ROUTE = """
import sys
from evolog.advice.routing._router import Router
from evolog.eventlog import EventLog
from evolog.projections import deaths
from evolog.projections.graph._embed import get_embedder
from evolog.projections.graph._memgraph import load_memgraph
from evolog.projections.graph._vectors import VectorIndex, wanted_texts
with EventLog(sys.argv[1]) as log:
    dead = deaths(log)
    graph = load_memgraph(log)
    index = VectorIndex.open(get_embedder(), log.paths.cache)
    index.sync(wanted_texts(graph))
router = Router(graph, index, None, dead)
decision = router.route(sys.argv[2])
if decision.entry is not None:
    router.plan(decision.entry.node)
"""
_OLD_GRAPH = """
import sys
import msgspec
from evolog.eventlog import EventLog
from evolog.projections.graph._memgraph import load_memgraph
from evolog.projections.graph._views import node_view
with EventLog(sys.argv[1]) as log:
    graph = load_memgraph(log)
doc = {"nodes": [node_view(graph, n.id) for n in graph.nodes()],
       "live": sum(1 for _ in graph.nodes()), "cycles": len(graph.cycles())}
sys.stdout.buffer.write(msgspec.json.format(msgspec.json.encode(doc), indent=2) + b"\\n")
"""


# As an installed package runs: with its bytecode cached (an environment that forbids
# writing it would time the compiler on every cold start, in both arms alike).
_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(cmd: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``cmd``."""
    cpu, start = _cpu(), time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_ENV)
    return time.perf_counter() - start, _cpu() - cpu


def _median(cmd: list[str], repeat: int) -> tuple[float, float]:
    _run(cmd)  # warm: bytecode written, files in the page cache
    runs = [_run(cmd) for _ in range(repeat)]
    return statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)


def _median_after(
    cmd: list[str], repeat: int, before: Callable[[int], None]
) -> tuple[float, float]:
    """Like :func:`_median`, with ``before(i)`` run ahead of each run, outside the timing."""
    before(-1)
    _run(cmd)
    runs = []
    for i in range(repeat):
        before(i)
        runs.append(_run(cmd))
    return statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)


def measure_tries(store: str, repeat: int) -> dict[str, tuple[float, float]]:
    """Cold routes with nothing new, after one more attempt, after one more outcome."""
    cli = [sys.executable, "-m", "evolog", "--store", store, "route", TASK]
    _run(cli)  # brings every checkpoint to the head
    pending: list[str] = []

    def attempt(i: int) -> None:
        with EventLog(store, durability="none", auto_seal="off") as log:
            action = f"bench-more-{os.getpid()}-{time.monotonic_ns()}"
            log.append(Attempt(action_id=action, task="one more"))
            pending.append(action)

    def outcome(i: int) -> None:
        with EventLog(store, durability="none", auto_seal="off") as log:
            log.append(Outcome(action_id=pending.pop(), status="success"))

    def named(i: int) -> None:
        with EventLog(store, durability="none", auto_seal="off") as log:
            node = f"node-{(i + 1) * 37:08d}"
            log.append(Outcome(action_id=f"bench-named-{i}", status="success", decided_by=[node]))

    out = {"route, nothing new": _median(cli, repeat)}
    out["route after one more attempt"] = _median_after(cli, repeat, attempt)
    out["route after one more outcome (of an attempt no node counts)"] = _median_after(
        cli, repeat, outcome
    )
    out["route after one more outcome naming a node"] = _median_after(cli, repeat, named)
    return out


def measure(store: str, repeat: int) -> dict[str, tuple[float, float]]:
    cli = [sys.executable, "-m", "evolog", "--store", store]
    out = {"first route (writes the checkpoint, embeds every node)": _run([*cli, "route", TASK])}
    out["route (checkpoint)"] = _median([*cli, "route", TASK], repeat)
    out["route (refold)"] = _median([sys.executable, "-c", _OLD_ROUTE, store, TASK], repeat)
    out["graph (checkpoint)"] = _median([*cli, "graph"], repeat)
    out["graph (refold)"] = _median([sys.executable, "-c", _OLD_GRAPH, store], repeat)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="2000", help="comma-separated node counts")
    p.add_argument("--attempts", type=int, default=0, help="attempts appended after build")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--keep", help="build the stores under this directory and keep them")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-graph-") as tmp:
        root = args.keep or tmp
        for size in (int(s) for s in args.sizes.split(",")):
            tail = f"-{args.attempts}" if args.attempts else ""
            store = os.path.join(root, f"graph-{size}{tail}")
            if not os.path.exists(store):
                start = time.perf_counter()
                build(store, size)
                if args.attempts:
                    add_attempts(store, args.attempts, size)
                print(f"{size} nodes: built in {time.perf_counter() - start:.1f} s", flush=True)
            figures = measure_tries if args.attempts else measure
            for name, (wall, cpu) in figures(store, args.repeat).items():
                figures = f"{wall * 1000:8.0f} ms  (cpu {cpu * 1000:.0f} ms)"
                print(f"{size:>7} nodes  {name:<55} {figures}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
