"""The pipeline algebra of memory evolution: composition, flattening, merge, failure."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from evolog.dream import ExpressionError, StrategyError
from evolog.dream.evolve import (
    EvolveContext,
    EvolveItem,
    Pipeline,
    Strategy,
    aevolve,
    apply,
    evolve,
    merge,
    pipeline,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import ToyStep, evolve_items, evolve_pipelines, evolve_steps

from evolog import Memory

CTX = EvolveContext()


def run(p: Strategy, items: list[EvolveItem]) -> list[EvolveItem]:
    return evolve(p, items, CTX)


@given(evolve_pipelines(3), evolve_pipelines(3), evolve_pipelines(3), evolve_items())
def test_sequential_is_associative_and_flattens(a: Any, b: Any, c: Any, items: Any) -> None:
    left, right = (a >> b) >> c, a >> (b >> c)
    assert left == right  # both flatten to the same sequence
    assert run(left, items) == run(right, items) == run(c, run(b, run(a, items)))


@given(evolve_pipelines(3), evolve_pipelines(3), evolve_pipelines(3), evolve_items())
def test_parallel_is_associative_and_flattens(a: Any, b: Any, c: Any, items: Any) -> None:
    left, right = (a | b) | c, a | (b | c)
    assert left == right
    assert run(left, items) == run(right, items) == merge([run(s, items) for s in (a, b, c)])


def test_flattening_only_within_a_mode() -> None:
    a, b, c = ToyStep("tag", "", "x"), ToyStep("drop", "m0"), ToyStep("reverse")
    seq = (a >> b) >> c
    assert seq.mode == "sequential" and seq.strategies == (a, b, c)
    assert (a | b | c).strategies == (a, b, c)
    mixed = (a | b) >> c
    assert mixed.mode == "sequential" and len(mixed.strategies) == 2
    assert mixed.strategies[0] == Pipeline("parallel", [a, b])
    assert mixed.expression() == "(tag__x | drop_m0) >> reverse"
    # Flattening (a | b) >> c into a | b | c would change what it computes:
    items = [EvolveItem(id="m0", text="one"), EvolveItem(id="m1", text="two")]
    assert [i.id for i in run(mixed, items)] == ["m1", "m0"]
    assert [i.id for i in run(a | b | c, items)] == ["m0", "m1"]


def test_merge_last_value_first_position() -> None:
    one = [EvolveItem(id="a", text="1"), EvolveItem(id="b", text="1")]
    two = [EvolveItem(id="c", text="2"), EvolveItem(id="a", text="2")]
    assert [(i.id, i.text) for i in merge([one, two])] == [("a", "2"), ("b", "1"), ("c", "2")]


class Slow(Strategy):
    """Wraps a strategy and yields to the event loop ``delay`` times before answering."""

    def __init__(self, inner: Strategy, delay: int) -> None:
        self.inner, self.delay, self.name = inner, delay, inner.name

    def evolve(self, items: Any, context: EvolveContext) -> list[EvolveItem]:
        return self.inner.evolve(items, context)

    async def aevolve(self, items: Any, context: EvolveContext) -> list[EvolveItem]:
        for _ in range(self.delay):
            await asyncio.sleep(0)
        return self.inner.evolve(items, context)


@given(
    st.lists(st.tuples(evolve_steps(), st.integers(0, 5)), min_size=2, max_size=4), evolve_items()
)
def test_parallel_is_independent_of_scheduling(branches: Any, items: Any) -> None:
    par = Pipeline("parallel", [Slow(s, d) for s, d in branches])
    together = asyncio.run(aevolve(par, items, CTX))
    assert together == run(Pipeline("parallel", [s for s, _ in branches]), items)


@given(evolve_pipelines(5), evolve_items())
def test_async_entry_point_agrees_with_sync(p: Any, items: Any) -> None:
    assert asyncio.run(aevolve(p, items, CTX)) == run(p, items)


@given(evolve_pipelines(5, failing=True), evolve_items())
def test_a_failing_strategy_fails_the_pipeline(p: Any, items: Any) -> None:
    fails = "fail" in p.name
    try:
        run(p, items)
    except StrategyError as exc:
        assert fails and "toy failure" in str(exc)
    else:
        assert not fails


@settings(max_examples=15, deadline=None)
@given(evolve_pipelines(4, failing=True))
def test_failed_run_appends_nothing(tmp_path_factory: Any, p: Any) -> None:
    path = tmp_path_factory.mktemp("evolve") / "mem"
    with Memory(path) as mem:
        mem.remember("ops", "restart the worker when the queue stalls")
        mem.remember("db", "vacuum the table after a bulk delete")
        before = list(mem.replay())
        failing = p >> ToyStep("fail") if "fail" not in p.name else p
        with pytest.raises(StrategyError):
            apply(mem.log, failing)
        assert list(mem.replay()) == before


def test_bad_results_and_parts_are_one_line_errors() -> None:
    class Bad(Strategy):
        name = "bad"

        def evolve(self, items: Any, context: EvolveContext) -> list[EvolveItem]:
            return "nope"  # type: ignore[return-value]

    with pytest.raises(
        StrategyError, match="strategy 'bad': expected a list of EvolveItem; got str"
    ):
        run(Bad() >> ToyStep("reverse"), [])
    with pytest.raises(StrategyError, match="expected a Strategy; got int"):
        Pipeline.of("sequential", ToyStep("reverse"), 3)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "position"),
    [("ace >>", 7), ("ace >> foo", 8), ("(ace", 5), ("ace reme", 5), ("", 1), ("ace & reme", 5)],
)
def test_bad_expressions_name_the_position(text: str, position: int) -> None:
    with pytest.raises(ExpressionError, match=f"at position {position}; got") as info:
        pipeline(text)
    assert info.value.position == position
    assert "\n" not in str(info.value)


def test_expressions_follow_python_precedence() -> None:
    assert pipeline("ace >> reasoning_bank >> reme").name == "ace >> reasoning_bank >> reme"
    assert pipeline("(ace | reme) >> reasoning_bank").name == "(ace | reme) >> reasoning_bank"
    assert pipeline("ace | reme >> reasoning_bank").name == "ace | (reme >> reasoning_bank)"
    assert pipeline("ace") == pipeline("(ace)")
