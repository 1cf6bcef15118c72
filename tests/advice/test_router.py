"""Strategy routing: the three paths, the composite, provenance, drift and traversals."""

from __future__ import annotations

from pathlib import Path

import pytest
from evolog.advice.routing._router import InvalidTaskError, Router, RouterConfig, RouterPath
from evolog.advice.routing._traversal import Traversal
from evolog.dream import dream
from evolog.eventlog import EventLog, Outcome
from evolog.projections.graph._embed import get_embedder

from tests.dream.test_dream_cycle import trace_events

STRATEGIES = {
    "k8s": ("debug a kubernetes pod stuck in CrashLoopBackOff",
            ["describe the pod", "read the container logs", "fix the env variable"]),
    "tls": ("renew the expired tls certificate on the load balancer",
            ["check expiry", "request certificate", "install certificate"]),
    "sql": ("speed up a slow sql query on the orders table",
            ["run explain analyze", "create an index", "re-run the query"]),
}  # fmt: skip


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("router") / "store"
    with EventLog(path, create=True, durability="none") as log:
        for tid, (task, steps) in STRATEGIES.items():
            log.append_many(trace_events(tid, task, steps))
        log.append_many(
            trace_events(
                "k8s-fail",
                STRATEGIES["k8s"][0],
                STRATEGIES["k8s"][1],
                status="failed",
                failing=[2],
                error="pod still crashing: OOMKilled",
            )
        )
        dream(log, embedder=get_embedder())
    return path


@pytest.fixture(scope="module")
def router(store: Path) -> Router:
    with EventLog(store) as log:
        return Router.from_log(log)


def _node_of(router: Router, trace: str) -> str:
    return next(n.id for n in router.graph.nodes() if trace in n.traces)


def test_related_tasks_traverse_memory_with_steps_and_constraints(router: Router) -> None:
    decision = router.route("the pod keeps restarting with crashloopbackoff")
    assert decision.path is RouterPath.MEMORY_TRAVERSAL
    assert decision.entry is not None and decision.entry.node == _node_of(router, "k8s")
    plan = router.plan(decision.entry.node)
    assert [s.action for s in plan.steps] == list(STRATEGIES["k8s"][1])
    (constraint,) = plan.constraints
    assert "OOMKilled" in constraint.description
    entry = decision.entry
    assert entry.composite == pytest.approx(
        0.5 * entry.similarity + 0.3 * entry.confidence + 0.2 * entry.success_rate, abs=1e-5
    )


@pytest.mark.parametrize(
    "task", ["bake a chocolate cake", "plan a trip to japan", "write a haiku about rain"]
)
def test_unrelated_tasks_go_zero_shot(router: Router, task: str) -> None:
    decision = router.route(task)
    assert decision.path is RouterPath.ZERO_SHOT and decision.entry is None
    assert "no memory node qualifies" in decision.reasoning


def test_success_rate_comes_from_its_trace_and_outcomes_naming_the_node(store: Path) -> None:
    with EventLog(store) as log:
        node = _node_of(Router.from_log(log), "tls")
        log.append_many(
            [
                Outcome(id=f"use-{i}", action_id=f"use-{i}", status=s, decided_by=[node])
                for i, s in enumerate(["success", "success", "success", "failed"])
            ]
        )
        router = Router.from_log(log)
    entry = router.route("renew the tls certificate").entry
    assert entry is not None and entry.node == node
    # The successful trace it was dreamed from, then the three successes and one failure.
    assert (entry.successes, entry.failures, entry.success_rate) == (4, 1, pytest.approx(5 / 7))


def test_configurable_threshold_and_top_k(router: Router) -> None:
    strict = Router(router.graph, router.index, RouterConfig(threshold=0.99, top_k=1))
    decision = strict.route("speed up the slow orders sql query")
    assert decision.path is RouterPath.ZERO_SHOT and len(decision.candidates) == 1


def test_drift_during_a_traversal_jumps_or_abandons(router: Router) -> None:
    traversal = Traversal.start(router, "pod in crashloopbackoff after the deploy")
    assert traversal is not None and traversal.node == _node_of(router, "k8s")
    step = traversal.next_step()
    assert step is not None and step.action == "describe the pod"
    stay = traversal.observe("the container logs show a missing environment variable")
    assert stay.path is RouterPath.MEMORY_TRAVERSAL and traversal.node == _node_of(router, "k8s")
    jump = traversal.observe("now the orders sql query is slow, speed it up")
    assert jump.path is RouterPath.CONTEXT_JUMP and jump.previous == _node_of(router, "k8s")
    assert traversal.node == _node_of(router, "sql") and traversal.position == 0
    assert traversal.remaining()[0].action == "run explain analyze"
    gone = traversal.observe("what is a good recipe for lasagna")
    assert gone.path is RouterPath.ZERO_SHOT and traversal.abandoned
    assert traversal.next_step() is None


def test_bad_input(router: Router) -> None:
    with pytest.raises(InvalidTaskError, match="non-blank text"):
        router.route("   ")
    with pytest.raises(InvalidTaskError, match="expected a node"):
        router.route("x", current="node-nope")
    with pytest.raises(InvalidTaskError, match="expected a node"):
        router.plan("node-nope")
    with pytest.raises(InvalidTaskError, match="top_k"):
        RouterConfig(top_k=0)
    assert Traversal.start(router, "bake bread") is None


def test_the_vector_cache_is_rebuilt_identically(store: Path, router: Router) -> None:
    cache = store / "cache"
    for path in cache.glob("vectors-*"):
        path.unlink()
    with EventLog(store) as log:
        rebuilt = Router.from_log(log)
    for task in ("crashloopbackoff pod", "slow orders query", "expired certificate"):
        a, b = router.route(task), rebuilt.route(task)
        assert (a.path, a.entry and a.entry.node) == (b.path, b.entry and b.entry.node)
