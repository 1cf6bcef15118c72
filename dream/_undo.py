"""Undoing dream cycles: append retractions, never delete.

A retracted cycle's effects leave the memory graph and its traces become undreamed, so the
next dream re-dreams them (under a new cycle id). A later cycle may build on an earlier one
(merge into its node, add a step to it, link to it, restate it); undoing only the earlier
cycle would strand those effects, so it is refused unless ``cascade`` is set, in which case
every dependent cycle is retracted with it, in one atomic append.
"""

from __future__ import annotations

from collections.abc import Iterable

from evolog.eventlog import (
    AnyEvent,
    ChildStep,
    Constraint,
    EventLog,
    Link,
    Merge,
    Node,
    Prune,
    Retraction,
)
from evolog.projections import cached_memgraph

from ._cycle import dream_lock
from ._errors import UndoError

__all__ = ["dependent_cycles", "undo_cycle"]

_KINDS = ("node", "child_step", "link", "merge", "prune", "constraint")


def _references(event: AnyEvent) -> Iterable[str]:
    if isinstance(event, Node | ChildStep | Prune):
        yield event.node
    elif isinstance(event, Merge):
        yield from (event.node, event.merged)
    elif isinstance(event, Link):
        yield from (event.src.partition("#")[0], event.dst.partition("#")[0])
    elif isinstance(event, Constraint) and event.node is not None:
        yield event.node


def dependent_cycles(log: EventLog, cycle: str, live: set[str]) -> list[str]:
    """Live cycles that (transitively) build on ``cycle``'s nodes, in log order."""
    creator: dict[str, str] = {}
    uses: dict[str, set[str]] = {}
    order: list[str] = []
    for event in log.replay(kinds=_KINDS):
        owner = getattr(event, "cycle", "")
        if owner not in live:
            continue
        if owner not in uses:
            uses[owner] = set()
            order.append(owner)
        if isinstance(event, Node):
            creator.setdefault(event.node, owner)
        uses[owner].update(creator.get(ref, owner) for ref in _references(event))
    doomed = {cycle}
    for later in order:  # log order: a cycle can only build on earlier ones
        if later not in doomed and uses[later] & doomed:
            doomed.add(later)
    return [c for c in order if c in doomed and c != cycle]


def undo_cycle(
    log: EventLog, cycle: str, *, cascade: bool = False, reason: str | None = None
) -> list[Retraction]:
    """Retract ``cycle`` (and, with ``cascade``, the cycles built on it); returns the events.

    Raises UndoError if the cycle is unknown or already undone, or if later cycles depend
    on it and ``cascade`` is false.
    """
    with dream_lock(log):
        graph = cached_memgraph(log)
        if cycle in graph.retracted_cycles:
            raise UndoError(f"dream cycle {cycle!r} was already undone")
        live = [c.cycle for c in graph.cycles()]
        if cycle not in live:
            recent = ", ".join(live[-5:]) or "none"
            raise UndoError(f"expected the id of a dream cycle; got {cycle!r} (recent: {recent})")
        dependents = dependent_cycles(log, cycle, set(live))
        if dependents and not cascade:
            shown = ", ".join(dependents[:5]) + (" ..." if len(dependents) > 5 else "")
            raise UndoError(
                f"dream cycle {cycle!r} has {len(dependents)} later cycle(s) built on it"
                f" ({shown}); undo those first or undo with cascade"
            )
        events = [
            Retraction(id=f"undo.{c}", target_cycle=c, reason=reason, agent="evolog")
            for c in [cycle, *dependents]
        ]
        log.append_many(events)
        return events
