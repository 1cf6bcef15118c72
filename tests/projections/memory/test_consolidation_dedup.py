"""Issue 28.2: consolidation merges what is the same, recall shows it once, with evidence.

Traces whose steps are the same under the near-match rule (projections.memory._steps:
reworded, reordered) are dreamed into one strategy that counts every one of them; recall
never injects two items with the same steps; a strategy's "Do not" never names one of its
own steps; every strategy line says how many of its tries worked.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path

from evolog.advice.recall import Candidate, distinct, render
from evolog.dream import dream
from evolog.eventlog import Attempt, ChildStep, Event, EventLog, Node, Outcome, Step
from evolog.projections.graph._embed import HashingEmbedder
from evolog.projections.graph._memgraph import load_memgraph
from evolog.projections.memory import STRATEGY, MemoryItem
from evolog.projections.memory._steps import names_own_step, same_step, same_steps
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evolog import Memory
from tests.strategies import STEP_BASES, reworded_plans, reworded_step

TASK = "the integration test is flaky in CI"
SIX = [
    ["run the integration tests", "add retry with backoff", "increase the timeout", "rerun tests"],
    ["Run integration tests", "Add backoff retry", "Increase timeout", "Re-run tests"],
    ["running the integration tests", "add retries with backoff", "increased timeouts",
     "rerun tests again"],
    ["run integration test", "added a backoff retry", "increase the timeout", "rerun the test"],
    ["Run the integration test suite", "Add retry + backoff", "increase timeout", "rerun tests"],
    ["run integration tests now", "add retry and backoff", "timeout: increase",
     "re-run the tests"],
]  # fmt: skip


def trace(tid: str, steps: Sequence[str], *, status: str = "success",
          failing: Sequence[int] = ()) -> list[Event]:  # fmt: skip
    out: list[Event] = [Attempt(id=tid, action_id=tid, task=TASK, agent="a", source="real")]
    for i, action in enumerate(steps):
        bad = i in failing
        out.append(Step(id=f"{tid}.s{i}", action_id=tid, index=i, action=action, ok=not bad,
                        result="failed" if bad else "done",
                        error="AssertionError: tests failed" if bad else None))  # fmt: skip
    out.append(Outcome(id=f"{tid}.o", action_id=tid, status=status))
    return out


def dreamed(path: Path, plans: Sequence[Sequence[str]], **kw: object) -> EventLog:
    log = EventLog(str(path), create=True, durability="none")
    for i, steps in enumerate(plans):
        log.append_many(trace(f"t{i}", steps, **kw))  # type: ignore[arg-type]
    dream(log, embedder=HashingEmbedder())
    return log


def test_six_reworded_traces_become_one_strategy_with_six_successes(tmp_path: Path) -> None:
    with dreamed(tmp_path / "s", SIX) as log:
        graph = load_memgraph(log)
    live = list(graph.nodes())
    assert len(live) == 1, [n.summary for n in live]
    node = live[0]
    assert graph.outcomes(node.id) == (6, 0)
    lineage = {t for member in graph.group(node.id) for t in graph.node(member).traces}  # type: ignore[union-attr]
    assert lineage == {f"t{i}" for i in range(6)}
    with Memory(tmp_path / "s") as mem:
        block = mem.recall(TASK, record=False).text
    lines = [ln for ln in block.splitlines() if ln.startswith("- Strategy [")]
    assert len(lines) == 1 and "(worked 6 of 6 tries)" in lines[0], block


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=reworded_plans(copies=4), other=st.integers(0, len(STEP_BASES) - 1))
def test_rewordings_merge_and_different_steps_do_not(
    tmp_path_factory: object, data: tuple[list[int], list[list[str]]], other: int
) -> None:
    plan, wordings = data
    # A plan sharing no step with the first stays its own strategy.
    fresh = [i for i in range(len(STEP_BASES)) if i not in plan]
    different = [" ".join(STEP_BASES[i]) for i in (fresh[other % len(fresh)],)]
    different += [" ".join(STEP_BASES[i]) for i in fresh if i != fresh[other % len(fresh)]][:1]
    path = tmp_path_factory.mktemp("s")  # type: ignore[attr-defined]
    with dreamed(path / "s", [*wordings, different]) as log:
        graph = load_memgraph(log)
    live = list(graph.nodes())
    assert len(live) == 2, [(n.summary, n.traces) for n in live]
    counts = sorted(graph.outcomes(n.id) for n in live)
    assert counts == [(1, 0), (len(wordings), 0)]


@given(data=reworded_plans(copies=2))
def test_the_near_match_rule_takes_any_rewording_and_no_other_step(
    data: tuple[list[int], list[list[str]]],
) -> None:
    plan, (a, b) = data
    assert same_steps(a, b)
    for i, j in itertools.combinations(range(len(STEP_BASES)), 2):
        assert not same_step(" ".join(STEP_BASES[i]), " ".join(STEP_BASES[j]))
    assert not same_steps(a, b[:-1]) and not same_steps(a[:-1], b)
    swapped = [*b[:-1], " ".join(STEP_BASES[next(i for i in range(12) if i not in plan)])]
    assert not same_steps(a, swapped)


def _item(n: int, steps: list[str], tries: list[int]) -> MemoryItem:
    return MemoryItem(id=f"n{n}", kind=STRATEGY, branch="strategy", steps=steps, tries=tries,
                      text=f"fix it. {' → '.join(steps)}")  # fmt: skip


@given(
    plans=st.lists(reworded_plans(copies=1), min_size=1, max_size=8),
    budget=st.integers(0, 4000),
)
def test_recall_keeps_one_of_each_approach_and_every_strategy_line_has_evidence(
    plans: list[tuple[list[int], list[list[str]]]], budget: int
) -> None:
    items = [_item(n, w[0], [n % 3, n % 2]) for n, (_, w) in enumerate(plans)]
    chosen = [Candidate(i.id, STRATEGY, "strategy", 1.0, 1.0, 1.0, 1.0, (0, 0, 0), True, "")
              for i in items]  # fmt: skip
    kept_c, kept = distinct(chosen, items)
    assert [c.id for c in kept_c] == [i.id for i in kept]
    for a, b in itertools.combinations(kept, 2):
        assert not same_steps(a.steps, b.steps)
    # Each approach drawn is kept once, in the first place it was drawn.
    firsts = {frozenset(p): n for n, (p, _) in reversed(list(enumerate(plans)))}
    assert sorted(i.id for i in kept) == sorted(f"n{n}" for n in firsts.values())
    text, shown = render(kept, budget)
    assert len(text) <= budget and (shown == 0) == (text == "")
    lines = [ln for ln in text.splitlines() if ln.startswith("- Strategy [")]
    assert len(lines) == shown
    for line, item in zip(lines, kept, strict=False):
        won, lost = item.tries
        want = f"(worked {won} of {won + lost} tries)" if won + lost else "(no recorded tries)"
        assert want in line


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plans=st.lists(reworded_plans(copies=2), min_size=1, max_size=4))
def test_recall_on_a_store_never_returns_two_items_with_the_same_steps(
    tmp_path_factory: object, plans: list[tuple[list[int], list[list[str]]]]
) -> None:
    path = tmp_path_factory.mktemp("r") / "s"  # type: ignore[attr-defined]
    with Memory(path) as mem:
        events: list[Event] = []
        for n, (_, wordings) in enumerate(plans):
            for k, steps in enumerate(wordings):
                node = f"n{n}-{k}"
                events.append(Node(cycle="c1", node=node, goal=TASK, summary=" → ".join(steps),
                                   confidence=0.6))  # fmt: skip
                events += [ChildStep(cycle="c1", node=node, index=i, action=s)
                           for i, s in enumerate(steps)]  # fmt: skip
        mem.append_many(events)
        mem.remember("ci", "The integration test in CI is flaky when the runner is busy.")
        got = mem.recall(TASK, record=False, top_n=10).items
    for a, b in itertools.combinations(got, 2):
        assert not (a.steps and same_steps(a.steps, b.steps)), (a.id, b.id)


def test_a_failed_run_of_the_strategys_own_step_is_not_its_do_not(tmp_path: Path) -> None:
    steps = ["run the integration tests", "add retry with backoff", "rerun tests"]
    # Three successes, and a failure that did the same and broke on the backoff step (a
    # flaky run): merged into one strategy, its constraint names the strategy's own step.
    plans = [steps, steps, steps]
    with dreamed(tmp_path / "s", plans) as log:
        bad = ["run integration tests", "add backoff retry", "rerun the tests"]
        log.append_many(trace("bad", bad, status="failed", failing=[1]))
        dream(log, embedder=HashingEmbedder())
        graph = load_memgraph(log)
    live = list(graph.nodes())
    assert len(live) == 1 and graph.outcomes(live[0].id) == (3, 1)
    raw = [c.description for c in graph.constraints(live[0].id)]
    assert any("backoff" in c for c in raw), raw  # the dream recorded it...
    with Memory(tmp_path / "s") as mem:
        r = mem.recall(TASK, record=False)
    (item,) = [i for i in r.items if i.kind == STRATEGY]
    for c in item.constraints:  # ...but it is never shown against the step it names
        assert not names_own_step(c, item.steps), c
    assert "Do not" not in r.text and "(worked 3 of 4 tries)" in r.text, r.text


@given(step=reworded_step(STEP_BASES[4]), other=reworded_step(STEP_BASES[5]))
def test_names_own_step_reads_the_quoted_step(step: str, other: str) -> None:
    steps = ["add backoff retry", "increase timeout"]
    q = step.replace("'", "\u2019")
    assert names_own_step(f"avoid '{q}' as done here: it failed with X", steps)
    assert names_own_step(f"the approach '{q} → {other}' did not resolve the task", steps)
    assert not names_own_step("avoid 'delete tmp files' as done here: it failed", steps)
    assert not names_own_step(f"the approach '{q} → rotate logs' did not resolve it", steps)
