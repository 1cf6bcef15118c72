"""The strategy protocol and its algebra: ``a >> b`` (sequential) and ``a | b`` (parallel).

``>>`` feeds each strategy's output to the next. ``|`` runs every branch on the same input
and merges the results by item id: the value is the last branch's (in the order written,
never in the order branches finish; a later branch that returns an item unchanged still
overrides an earlier branch's change), the position is the item's first appearance. An item
one branch drops survives if another branch keeps it (the merge is a union, as in seed 001):
``ace | reme`` cannot retire what ``reme`` returns; write ``reme >> ace`` for that.

Composing two pipelines of the same mode flattens them (``(a >> b) >> c`` is one sequence
of three), which changes nothing because both operators are associative; mixed modes nest,
because flattening ``(a | b) >> c`` into ``a | b | c`` would change its meaning.

A strategy that raises fails the whole pipeline with :class:`StrategyError`; the caller
appends only after a pipeline returned, so a failed run appends nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Literal

from .._errors import StrategyError
from ._items import EvolveContext, EvolveItem

__all__ = ["Pipeline", "Strategy", "aevolve", "evolve", "merge"]

Mode = Literal["sequential", "parallel"]
Evolve = Callable[[tuple[EvolveItem, ...], EvolveContext], list[EvolveItem]]


class Strategy:
    """An evolution step: ``evolve(items, context) -> items`` without side effects.

    Subclasses implement :meth:`evolve`; one that calls a model says so in
    :meth:`uses_model`, and :meth:`aevolve` then runs it in a worker thread, so parallel
    branches wait on their models concurrently.
    """

    name: str = "strategy"

    def evolve(self, items: Sequence[EvolveItem], context: EvolveContext) -> list[EvolveItem]:
        raise NotImplementedError

    def uses_model(self, context: EvolveContext) -> bool:
        return False

    async def aevolve(
        self, items: Sequence[EvolveItem], context: EvolveContext
    ) -> list[EvolveItem]:
        if self.uses_model(context):
            return await asyncio.to_thread(self.evolve, tuple(items), context)
        return self.evolve(items, context)

    def __rshift__(self, other: Strategy) -> Pipeline:
        return Pipeline.of("sequential", self, other)

    def __or__(self, other: Strategy) -> Pipeline:
        return Pipeline.of("parallel", self, other)

    def __repr__(self) -> str:
        return self.name


class Pipeline(Strategy):
    """Strategies run in sequence or in parallel; see the module docstring."""

    def __init__(self, mode: Mode, strategies: Sequence[Strategy]) -> None:
        if mode not in ("sequential", "parallel"):
            raise StrategyError(f"mode: expected 'sequential' or 'parallel'; got {mode!r}")
        if not strategies:
            raise StrategyError("strategies: expected at least one strategy; got none")
        self.mode: Mode = mode
        self.strategies: tuple[Strategy, ...] = tuple(strategies)
        self.name = self.expression()

    @classmethod
    def of(cls, mode: Mode, *parts: Strategy) -> Pipeline:
        """``parts`` composed in ``mode``, with same-mode pipelines flattened."""
        flat: list[Strategy] = []
        for part in parts:
            if not isinstance(part, Strategy):
                raise StrategyError(f"expected a Strategy; got {type(part).__name__}")
            if isinstance(part, Pipeline) and part.mode == mode:
                flat.extend(part.strategies)
            else:
                flat.append(part)
        return cls(mode, flat)

    def expression(self) -> str:
        op = " >> " if self.mode == "sequential" else " | "
        parts = [
            f"({s.expression()})" if isinstance(s, Pipeline) else s.name for s in self.strategies
        ]
        return op.join(parts)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Pipeline)
            and self.mode == other.mode
            and self.strategies == other.strategies
        )

    def __hash__(self) -> int:
        return hash((self.mode, self.strategies))

    def evolve(self, items: Sequence[EvolveItem], context: EvolveContext) -> list[EvolveItem]:
        if self.mode == "sequential":
            out = list(items)
            for s in self.strategies:
                out = _checked(s, s.evolve, tuple(out), context)
            return out
        frozen = tuple(items)
        return merge([_checked(s, s.evolve, frozen, context) for s in self.strategies])

    async def aevolve(
        self, items: Sequence[EvolveItem], context: EvolveContext
    ) -> list[EvolveItem]:
        if self.mode == "sequential":
            out = list(items)
            for s in self.strategies:
                out = await _achecked(s, s.aevolve(tuple(out), context))
            return out
        frozen = tuple(items)
        # gather keeps the order of its arguments, so the merge is the same whichever
        # branch finishes first.
        results = await asyncio.gather(
            *(_achecked(s, s.aevolve(frozen, context)) for s in self.strategies)
        )
        return merge(results)


def evolve(
    strategy: Strategy, items: Sequence[EvolveItem], context: EvolveContext
) -> list[EvolveItem]:
    """The sync entry point: run ``strategy``; any failure is a :class:`StrategyError`."""
    return _checked(strategy, strategy.evolve, tuple(items), context)


async def aevolve(
    strategy: Strategy, items: Sequence[EvolveItem], context: EvolveContext
) -> list[EvolveItem]:
    """The async entry point (parallel branches await their models concurrently)."""
    return await _achecked(strategy, strategy.aevolve(tuple(items), context))


def merge(results: Sequence[Sequence[EvolveItem]]) -> list[EvolveItem]:
    """Union by id: the last result's value, the first appearance's position."""
    merged: dict[str, EvolveItem] = {}
    for result in results:
        for item in result:
            merged[item.id] = item  # re-assigning a key keeps its first position
    return list(merged.values())


def _validate(strategy: Strategy, out: object) -> list[EvolveItem]:
    if not isinstance(out, list | tuple) or not all(isinstance(i, EvolveItem) for i in out):
        raise StrategyError(
            f"strategy {strategy.name!r}: expected a list of EvolveItem; got {type(out).__name__}"
        )
    return list(out)


def _checked(
    strategy: Strategy, call: Evolve, items: tuple[EvolveItem, ...], context: EvolveContext
) -> list[EvolveItem]:
    try:
        out: object = call(items, context)
    except StrategyError:
        raise
    except Exception as exc:
        raise _failed(strategy, exc) from exc
    return _validate(strategy, out)


def _failed(strategy: Strategy, exc: Exception) -> StrategyError:
    return StrategyError(f"strategy {strategy.name!r} failed: {type(exc).__name__}: {exc}")


async def _achecked(
    strategy: Strategy, call: Coroutine[Any, Any, list[EvolveItem]]
) -> list[EvolveItem]:
    try:
        out: object = await call
    except StrategyError:
        raise
    except Exception as exc:
        raise _failed(strategy, exc) from exc
    return _validate(strategy, out)
