"""A run over a store: stage the items, run a pipeline, append what changed, undo a run.

:func:`stage` builds the staging view from the item fold (active items, their ACE counters
and structured fields) and the context from the log (complete traces, unreflected
feedback). :func:`plan` turns the difference between the staged items and the pipeline's
output into events, reusing the memory-item events (nothing new in the schema):

* a new item, or a changed note: a ``note`` naming the item (a superseding write keeps its
  history); the items it absorbed are its ``sources`` (archived into it, never deleted);
* an item the output no longer holds: a ``prune`` naming it (the graph's own retirement
  for a strategy; the item fold retires a note the same way);
* a reflected verdict on an item the output keeps: a ``feedback`` with its rating, naming
  the feedback it read (an item the run retires keeps its feedback unreflected: if the
  run is undone, the next run reflects it again).

Every event carries ``source="dreamed"`` and the id ``evolve:RUN:N``, and the batch is
appended atomically, so a replay gives the same items without calling a model again and
:func:`undo` retracts a run by its ids. Strategy items (the dreams' nodes) are only ever
retired here: their content belongs to the memory graph.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, Final

import msgspec
from evolog.eventlog import Event, EventLog, Feedback, Note, Prune, Retraction, new_id
from evolog.projections.memory import NOTE, ItemIndex, MemoryItem

from .._errors import UndoError
from .._traces import Trace
from ._ace import ACE
from ._items import EvolveContext, EvolveItem, Model, parse, render
from ._pipeline import Strategy, aevolve, evolve

__all__ = ["EvolveReport", "apply", "curate", "evolve_log", "plan", "stage", "undo"]

PREFIX: Final = "evolve:"
_RATING: Final = {"helpful": 1.0, "harmful": -1.0, "neutral": 0.0}
_REFLECTED: Final = "reflected "
Progress = Callable[[str], None]


class EvolveReport(msgspec.Struct, frozen=True, kw_only=True):
    """What a run proposed (``dry_run``) or appended."""

    run: str
    pipeline: str
    dry_run: bool
    items_before: int
    items_after: int
    written: list[str] = []
    retired: list[str] = []
    reflected: int = 0
    events: list[dict[str, Any]] = []
    seqs: list[int] = []


def to_item(item: MemoryItem, evidence: tuple[int, int, int]) -> EvolveItem:
    fields = parse(item.text) if item.kind == NOTE else {"text": item.text}
    return EvolveItem(
        text=fields["text"],
        title=fields.get("title", ""),
        description=fields.get("description", ""),
        when_to_use=fields.get("when_to_use", ""),
        pattern=fields.get("pattern", ""),
        id=item.id,
        kind=item.kind,
        branch=item.branch,
        tags=tuple(item.tags),
        helpful=evidence[0],
        harmful=evidence[1],
        neutral=evidence[2],
        seq=item.written_seq,
    )


def stage(
    log: EventLog,
    index: ItemIndex | None = None,
    *,
    embedder: Any = None,
    model: Model | None = None,
    traces: bool = True,
) -> tuple[list[EvolveItem], EvolveContext]:
    """The active items (oldest write first) and the context a pipeline reads."""
    index = index if index is not None else ItemIndex(log.paths)
    with log.snapshot() as snap:
        fold = index.refresh(snap, log)
        head = snap.head_seq
    active = sorted((i for i in fold.state.items.values() if i.active), key=lambda i: i.written_seq)
    items = [to_item(i, fold.evidence(i)) for i in active]
    found: tuple[Trace, ...] = ()
    if traces and head:
        from .._traces import load_traces

        found = tuple(sorted(load_traces(log, as_of=head).values(), key=lambda t: t.seq))
    read: set[str] = set()
    unrated: dict[str, list[tuple[str, str]]] = {}
    for e in log.replay(head, kinds=["feedback"]):
        if not isinstance(e, Feedback):
            continue
        if e.id.startswith(PREFIX) and e.text.startswith(_REFLECTED):
            read.add(e.text[len(_REFLECTED) :].partition(":")[0])
        elif e.rating is None and e.text.strip() and e.target:
            unrated.setdefault(e.target, []).append((e.id, e.text))
    feedback = {t: tuple(f for f in fs if f[0] not in read) for t, fs in unrated.items()}
    context = EvolveContext(
        traces=found,
        feedback={t: fs for t, fs in feedback.items() if fs},
        known=frozenset(fold.state.items),
        embedder=embedder,
        model=model,
    )
    return items, context


def _value(item: EvolveItem) -> tuple[object, ...]:
    return (render(item), item.branch, frozenset(item.tags))


def plan(before: Sequence[EvolveItem], after: Sequence[EvolveItem], run: str) -> list[Event]:
    """The events that turn ``before`` into ``after`` (see the module docstring)."""
    old = {i.id: i for i in before}
    events: list[Event] = []
    env: dict[str, Any] = {"source": "dreamed", "agent": "evolve"}

    def eid() -> str:
        return f"{PREFIX}{run}:{len(events):06d}"

    absorbed: set[str] = set()
    for item in after:
        prev = old.get(item.id)
        if prev is not None and prev.kind != NOTE:
            continue  # strategies are the graph's; a run may only retire them
        fresh = [s for s in item.sources if s in old and (prev is None or s not in prev.sources)]
        absorbed.update(fresh)
        if prev is None or fresh or _value(prev) != _value(item):
            sources = [s for s in fresh if old[s].kind == NOTE]
            events.append(
                Note(
                    id=eid(),
                    item=item.id,
                    branch=item.branch,
                    text=render(item),
                    tags=list(item.tags),
                    sources=sources,
                    reason=f"evolve:{item.origin or 'update'}",
                    **env,
                )
            )
        done = set(prev.reflected) if prev is not None else set()
        for fid, verdict in item.reflected:
            if (fid, verdict) not in done:
                events.append(
                    Feedback(
                        id=eid(),
                        target=item.id,
                        rating=_RATING[verdict],
                        text=f"{_REFLECTED}{fid}: {verdict}",
                        **env,
                    )
                )
    kept = {i.id for i in after}
    for item in before:
        if item.id in kept:
            continue
        if item.id in absorbed and item.kind == NOTE:
            continue  # archived by the note that absorbed it
        why = "absorbed" if item.id in absorbed else "retired"
        events.append(Prune(id=eid(), node=item.id, reason=f"evolve {run}: {why}", **env))
    return events


def apply(
    log: EventLog,
    pipeline: Strategy,
    *,
    dry_run: bool = False,
    embedder: Any = None,
    model: Model | None = None,
    index: ItemIndex | None = None,
    progress: Progress | None = None,
    run: str | None = None,
    use_async: bool = False,
) -> EvolveReport:
    """Run ``pipeline`` over the store and append its changes as one batch (unless
    ``dry_run``). A failing strategy raises :class:`StrategyError` before anything is
    appended."""
    say = progress or (lambda _msg: None)
    say("staging items and traces")
    items, context = stage(log, index, embedder=embedder, model=model)
    say(f"running {pipeline.name} over {len(items)} items, {len(context.traces)} traces")
    if use_async:
        after = asyncio.run(aevolve(pipeline, items, context))
    else:
        after = evolve(pipeline, items, context)
    run = run or new_id()
    events = plan(items, after, run)
    say(f"{len(events)} events proposed")
    seqs = [] if dry_run or not events else log.append_many(events)
    return EvolveReport(
        run=run,
        pipeline=pipeline.name,
        dry_run=dry_run,
        items_before=len(items),
        items_after=len(after),
        written=[e.item for e in events if isinstance(e, Note)],
        retired=[e.node for e in events if isinstance(e, Prune)],
        reflected=sum(isinstance(e, Feedback) for e in events),
        events=[msgspec.to_builtins(e) for e in events],
        seqs=seqs,
    )


evolve_log = apply


def curate(log: EventLog, threshold: float = 0.3, **kwargs: Any) -> list[str]:
    """Retire every item whose ACE score is below ``threshold``: one run of ACE that drops
    nothing else (after reflecting pending feedback, so the scores are current) appends a
    ``prune`` for each; returns their ids. ``kwargs`` as for :func:`apply`."""
    return apply(log, ACE(harmful_share=1.0, curate_threshold=threshold), **kwargs).retired


def undo(log: EventLog, run: str) -> list[str]:
    """Retract every event of ``run``; return their ids."""
    if not run or ":" in run:
        raise UndoError(f"run: expected the id of an evolve run; got {run!r}")
    prefix = f"{PREFIX}{run}:"
    ids = [e.id for e in log.replay(kinds=["note", "prune", "feedback"]) if e.id.startswith(prefix)]
    if not ids:
        raise UndoError(f"run: expected the id of an evolve run in this store; got {run!r}")
    gone: set[str] = set()
    for e in log.replay(kinds=["retraction"]):
        if isinstance(e, Retraction):
            gone.update(e.targets)
    if all(i in gone for i in ids):
        raise UndoError(f"run: evolve run {run!r} is already undone")
    log.append(Retraction(targets=ids, reason=f"undo evolve {run}", source="dreamed"))
    return ids
