"""Evolution runs over a store: events appended, replayed, undone; ACE, ReasoningBank, ReMe."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from evolog.dream import StrategyError, UndoError
from evolog.dream.evolve import (
    ACE,
    EvolveContext,
    EvolveItem,
    ReasoningBank,
    ReMe,
    apply,
    pipeline,
    stage,
    undo,
)
from evolog.eventlog import Attempt, Event, Feedback, Note, Outcome, Prune, Step
from evolog.projections.graph._embed import HashingEmbedder

from evolog import Memory

EMBEDDER = HashingEmbedder()


def trace(
    tid: str, task: str, actions: Sequence[str], *, status: str = "success", bad: int = -1
) -> list[Event]:
    env: dict[str, Any] = {"agent": "agent-1"}
    events: list[Event] = [Attempt(id=tid, action_id=tid, task=task, **env)]
    for i, action in enumerate(actions):
        events.append(
            Step(id=f"{tid}.s{i}", action_id=tid, index=i, action=action, ok=i != bad,
                 error="exit 1: connection refused" if i == bad else None, **env)
        )  # fmt: skip
    events.append(Outcome(id=f"{tid}.o", action_id=tid, status=status, **env))
    return events


def view(items: Sequence[EvolveItem]) -> list[tuple[Any, ...]]:
    """What a replay must give back: everything but run bookkeeping."""
    return sorted(
        (i.id, i.kind, i.branch, i.text, tuple(sorted(i.tags)), i.title, i.description,
         i.when_to_use, i.pattern, i.helpful, i.harmful, i.neutral)
        for i in items
    )  # fmt: skip


@pytest.fixture
def mem(tmp_path: Path) -> Any:
    with Memory(tmp_path / "mem") as m:
        yield m


def seed(mem: Memory) -> dict[str, str]:
    ids = {
        "deploy": mem.remember("ops", "deploy with the blue-green script, then check /health").item,
        "vacuum": mem.remember("db", "vacuum the orders table after a bulk delete").item,
        "stale": mem.remember("ops", "restart nginx by hand on every deploy").item,
    }
    mem.append_many(
        trace("t1", "Deploy the web service", ["build image", "push image", "switch traffic"])
    )
    mem.append_many(
        trace(
            "t2",
            "Migrate the orders table",
            ["dump table", "run migration"],
            status="failed",
            bad=1,
        )
    )
    return ids


def test_a_run_appends_dreamed_events_that_replay_to_its_output(mem: Memory) -> None:
    ids = seed(mem)
    mem.feedback(ids["stale"], "harmful")
    mem.feedback(ids["stale"], "harmful")
    p = pipeline("ace >> reasoning_bank >> reme")
    items, context = stage(mem.log, embedder=EMBEDDER)
    expected = p.evolve(tuple(items), context)
    report = apply(mem.log, p, embedder=EMBEDDER)
    assert report.retired == [ids["stale"]]
    assert len(report.written) == 4  # two ReasoningBank entries, two ReMe patterns
    new = [e for e in mem.replay() if e.id.startswith("evolve:")]
    assert new and all(e.source == "dreamed" for e in new)
    assert {type(e) for e in new} == {Note, Prune}
    again, _ = stage(mem.log, embedder=EMBEDDER)
    assert view(again) == view(expected)
    # A second run has nothing left to learn: no event.
    assert apply(mem.log, p, embedder=EMBEDDER).events == []


def test_dry_run_appends_nothing_and_shows_the_same_events(mem: Memory) -> None:
    seed(mem)
    before = list(mem.replay())
    dry = apply(mem.log, pipeline("reasoning_bank >> reme"), dry_run=True, run="r1")
    assert list(mem.replay()) == before and dry.seqs == []
    real = apply(mem.log, pipeline("reasoning_bank >> reme"), run="r1")
    assert real.events == dry.events and len(real.seqs) == len(dry.events)


def test_undo_restores_the_items_of_before_the_run(mem: Memory) -> None:
    ids = seed(mem)
    mem.feedback(ids["stale"], "harmful")
    before, _ = stage(mem.log)
    report = apply(mem.log, pipeline("ace >> reme"))
    assert report.retired == [ids["stale"]]
    assert ids["stale"] not in {
        i.id for i in mem.recall("restart nginx deploy", record=False).items
    }
    undone = undo(mem.log, report.run)
    assert len(undone) == len(report.events)
    after, _ = stage(mem.log)
    assert view(after) == view(before)
    assert ids["stale"] in {i.id for i in mem.recall("restart nginx deploy", record=False).items}
    with pytest.raises(UndoError, match="already undone"):
        undo(mem.log, report.run)
    with pytest.raises(UndoError, match="expected the id of an evolve run"):
        undo(mem.log, "nope")


def test_ace_reflects_unrated_feedback_once(mem: Memory) -> None:
    ids = seed(mem)
    mem.append(Feedback(target=ids["vacuum"], text="this was wrong and outdated, it broke prod"))
    mem.append(Feedback(target=ids["deploy"], text="worked exactly, very helpful"))
    report = apply(mem.log, ACE(), run="r1")
    assert report.retired == [ids["vacuum"]]  # reflected harmful: share 1 > 0.5
    # A retired item's reflection is not recorded (its retirement is what the run says).
    assert report.reflected == 1
    items = {i.id: i for i in stage(mem.log)[0]}
    assert (items[ids["deploy"]].helpful, items[ids["deploy"]].harmful) == (1, 0)
    assert apply(mem.log, ACE(), run="r2").events == []  # already reflected


def test_ace_score_and_curation() -> None:
    item = EvolveItem(id="a", helpful=1, harmful=1, neutral=2)
    assert item.score == 0.25 and EvolveItem(id="b").score == 0.5
    low = EvolveItem(id="low", helpful=1, neutral=3)  # 0.25: below 0.3, harmful share 0
    keep = EvolveItem(id="keep", helpful=2, neutral=2)
    pinned = EvolveItem(id="pin", branch="backbone", harmful=5)
    ace = ACE()
    assert ace.curate([low, keep, pinned]) == ["low"]
    assert [i.id for i in ace.evolve([low, keep, pinned], EvolveContext())] == [
        "low",
        "keep",
        "pin",
    ]
    curating = ACE(curate_threshold=0.3)
    assert [i.id for i in curating.evolve([low, keep, pinned], EvolveContext())] == ["keep", "pin"]


def test_ace_counts_outcomes_of_the_attempts_items_were_injected_into(mem: Memory) -> None:
    ids = seed(mem)
    for n in range(3):
        mem.append(Outcome(action_id=f"x{n}", status="failed", supported_by=[ids["stale"]]))
    mem.append(Outcome(action_id="x9", status="success", supported_by=[ids["stale"]]))
    item = {i.id: i for i in stage(mem.log, traces=False)[0]}[ids["stale"]]
    assert (item.helpful, item.harmful) == (1, 3)
    assert apply(mem.log, ACE()).retired == [ids["stale"]]


def test_reasoning_bank_learns_from_successes_and_failures_and_dedups(mem: Memory) -> None:
    seed(mem)
    mem.append_many(
        trace("t3", "Deploy the web service", ["build image", "push image", "switch traffic"])
    )
    items, context = stage(mem.log)
    for embedder in (EMBEDDER, None):
        out = ReasoningBank().evolve(items, dataclasses.replace(context, embedder=embedder))
        entries = [i for i in out if "reasoning_bank" in i.tags]
        assert len(entries) == 2, embedder  # t3 repeats t1
        ok, bad = sorted(entries, key=lambda e: "failure" in e.tags)
        assert ok.title == "Deploy the web service" and "switch traffic" in ok.text
        assert "run migration" in bad.text and "connection refused" in bad.text
    found = ReasoningBank().recall(out, "deploy web service", top_k=1, embedder=EMBEDDER)
    assert [e.title for e in found] == ["Deploy the web service"]
    assert ReasoningBank().recall(out, "orders table")[0].title == "Migrate the orders table"


def test_reme_newer_pattern_supersedes_the_older(mem: Memory) -> None:
    seed(mem)
    first = apply(mem.log, ReMe())
    assert len(first.written) == 2
    mem.append_many(
        trace("t4", "Deploy the web service", ["build image", "push image", "switch traffic"])
    )
    second = apply(mem.log, ReMe())
    (note,) = [e for e in second.events if e["kind"] == "note"]
    assert note["sources"] and set(note["sources"]) <= set(first.written)
    items = {i.id for i in stage(mem.log)[0]}
    assert note["item"] in items and not set(note["sources"]) & items


def test_reme_patterns_have_when_to_use_and_kind(mem: Memory) -> None:
    seed(mem)
    items, context = stage(mem.log)
    out = [i for i in ReMe().evolve(items, context) if "reme" in i.tags]
    kinds = {i.pattern: i for i in out}
    assert set(kinds) == {"success", "failure"}
    assert kinds["success"].when_to_use.startswith("When the task is to deploy the web service")
    assert kinds["success"].text == "Do: build image -> push image -> switch traffic"
    # The error is kept as its signature, quoted: recorded tool text, not a lesson's words.
    assert kinds["failure"].text.startswith('Avoid: run migration ("exit 1: connection refused")')


def test_a_model_that_fails_fails_the_run(mem: Memory) -> None:
    seed(mem)
    before = list(mem.replay())

    def broken(prompt: str) -> str:
        raise ConnectionError("no network")

    with pytest.raises(StrategyError, match="strategy 'reme' failed: ConnectionError"):
        apply(mem.log, ReMe(model=broken))
    assert list(mem.replay()) == before


def test_dedup_keeps_lessons_for_other_tasks_apart() -> None:
    from evolog.dream.evolve._reasoning_bank import dedup as rb_dedup
    from evolog.dream.evolve._reme import dedup as reme_dedup

    steps = "Do: read the logs -> reproduce locally -> write a failing test -> patch the code"
    a, b, c = (
        EvolveItem(id=f"p{n}", when_to_use=f"When the task is to fix {what}", text=steps,
                   tags=("reme",), pattern="success", seq=n)
        for n, what in enumerate(["the login service", "the orders query", "the login service"])
    )  # fmt: skip
    assert [i.id for i in reme_dedup([a, b], 0.85)] == ["p0", "p1"]  # another task
    merged = reme_dedup([a, b, c], 0.85)
    assert [i.id for i in merged] == ["p1", "p2"] and merged[1].sources == ("p0",)  # newer wins
    x, y = (
        EvolveItem(id=f"r{n}", title=title, text="Steps: build; push", tags=("reasoning_bank",),
                   seq=n)
        for n, title in enumerate(["Deploy the web service", "Deploy the billing worker"])
    )  # fmt: skip
    assert [i.id for i in rb_dedup([x, y], 0.85, None)] == ["r0", "r1"]
    twin = EvolveItem(id="r2", title="deploy the  web service", text="Steps: build; push",
                      tags=("reasoning_bank",), seq=2)  # fmt: skip
    kept = rb_dedup([x, y, twin], 0.85, None)
    assert [i.id for i in kept] == ["r0", "r1"] and kept[0].sources == ("r2",)  # older wins


def _reme_item(n: int, text: str, when: str = "When the task is to fix the login service") -> Any:
    return EvolveItem(id=f"p{n}", when_to_use=when, text=text, tags=("reme",),
                      pattern="success", seq=n)  # fmt: skip


def _rb_item(n: int, text: str, title: str = "Fix the login service") -> Any:
    return EvolveItem(id=f"r{n}", title=title, text=text, tags=("reasoning_bank",), seq=n)


def test_dedup_never_merges_other_step_sequences_of_a_task() -> None:
    """Two step lists of one task that differ in one step score above both thresholds
    (ReMe's ratio 0.90, the hashing cosine 0.85): they are two lessons, not one."""
    from evolog.dream.evolve._reasoning_bank import dedup as rb_dedup
    from evolog.dream.evolve._reme import dedup as reme_dedup

    head = "read the service logs -> reproduce the failure locally -> write a failing test"
    a = _reme_item(0, f"Do: {head} -> patch the session handling code")
    b = _reme_item(1, f"Do: {head} -> restart the session service")
    assert [i.id for i in reme_dedup([a, b], 0.85)] == ["p0", "p1"]
    again = _reme_item(2, f"Do: {head}  -> patch the session handling code.")
    assert [i.id for i in reme_dedup([a, b, again], 0.85)] == ["p1", "p2"]  # the same steps
    x = _rb_item(0, "Steps: " + head.replace(" -> ", "; ") + "; patch the session handling code")
    y = _rb_item(1, "Steps: " + head.replace(" -> ", "; ") + "; restart the session service")
    assert [i.id for i in rb_dedup([x, y], 0.85, EMBEDDER)] == ["r0", "r1"]


def test_dedup_never_merges_opposite_advice() -> None:
    from evolog.dream.evolve._reasoning_bank import dedup as rb_dedup
    from evolog.dream.evolve._reme import dedup as reme_dedup

    do = "cache node_modules in CI keyed on the hash of the lockfile to speed up builds"
    dont = f"Do not {do}"
    assert len(reme_dedup([_reme_item(0, do), _reme_item(1, dont)], 0.85)) == 2
    assert len(rb_dedup([_rb_item(0, do), _rb_item(1, dont)], 0.85, EMBEDDER)) == 2
    # the same advice reworded in its polarity's words still merges
    assert len(reme_dedup([_reme_item(0, dont), _reme_item(1, f"Never {do}")], 0.6)) == 1


def test_the_step_guard_reads_steps_in_order_up_to_a_word() -> None:
    from evolog.dream.evolve._guard import may_merge

    first = "Do: read the logs -> patch the code"
    assert may_merge(first, "do: read logs carefully -> patch code")
    assert not may_merge(first, "Do: patch the code -> read the logs")
    assert not may_merge("Steps: restart the web service", "Steps: restart the db service")
    assert not may_merge("Steps: read the logs; run the tests", "Steps: read the logs")
    assert may_merge("Steps: build; push", "Run the build, then push.")  # one lists no steps
