"""The batched fold of sealed segments (``advice/_batch.py``) equals folding every event of
the log one by one, bit for bit: segment boundaries anywhere, compaction in between, folds
resumed from the cache at any point, few closed attempts held (so that late outcomes of
forgotten attempts occur) and a small window (so that most rows of a segment go through a
batch)."""

from __future__ import annotations

import tempfile
from typing import Any
from unittest import mock

import evolog.advice._batch as advice_batch
import evolog.advice._reader as advice_reader
import evolog.advice._state as advice_state
from conftest import examples
from evolog.advice import AdviceEngine
from evolog.advice._reader import AttemptFinder, row_of
from evolog.advice._state import AdviceState
from evolog.advice.evolver._export import EVOLVER_KINDS
from evolog.eventlog import Attempt, Event, EventLog, Outcome, kind_of
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import EDGE_T0, outcome_streams


def _reference(log: EventLog) -> AdviceState:
    """Every evolver-kind event of the log through :meth:`AdviceState.apply`, in seq order."""
    state = AdviceState()
    with log.snapshot() as snap:
        state.find_attempt = AttemptFinder(snap, snap.head_seq)
        for event in log.replay():
            if kind_of(event) in EVOLVER_KINDS:
                state.apply(row_of(event))
        state.find_attempt = None
        state.head = max(state.head, snap.head_seq)  # as the engine: the log's head
    return state


def _dump(state: AdviceState) -> dict[str, Any]:
    edges = {}
    for kid in range(len(state.catalog)):
        for gid in range(len(state.genes)):
            stat = state.edges.get(kid, gid)
            if stat is not None:
                edges[(kid, gid)] = stat
    genes = {gid: state.gene_stats.get(0, gid) for gid in range(len(state.genes))}
    return {
        "head": state.head,
        "window_version": state.window_version,
        "keys": list(state.catalog.keys),
        "match": dict(state.catalog.match),
        "genes": list(state.genes),
        "edges": edges,
        "gene_stats": genes,
        "open": list(state.open.items()),
        "closed": list(state.closed.items()),
        "window": list(state.window),
        "forgotten": state.forgotten.to_bytes(),
    }


@settings(max_examples=examples(20), deadline=None)
@given(
    outcome_streams(max_size=60),
    st.sets(st.integers(0, 59), max_size=3),
    st.integers(1, 4),
    st.integers(1, 3),
)
def test_batched_fold_equals_a_fold_of_every_event(
    stream: tuple[list[Event], set[int], set[int]],
    compact_after: set[int],
    window: int,
    closed: int,
) -> None:
    events, seal_after, fold_after = stream
    with (
        tempfile.TemporaryDirectory() as tmp,
        EventLog(f"{tmp}/s", create=True, durability="none", auto_seal="off") as log,
        mock.patch.multiple(advice_state, WINDOW=window, RECENT_CLOSED=closed),
        mock.patch.object(advice_reader, "WINDOW", window),
        mock.patch.object(advice_batch, "RECENT_CLOSED", closed),
    ):
        for i, event in enumerate(events):
            log.append(event)
            if i in seal_after or i in compact_after:
                log.seal()
            if i in compact_after:
                log.compact(small_rows=1000, target_rows=1000)
            if i in fold_after:  # a fold of this prefix, saved: the next engine resumes it
                engine = AdviceEngine(log)
                engine.state()
                engine.save()
        log.seal()
        resumed = AdviceEngine(log).state()
        fresh = AdviceEngine(log, use_cache=False).state()
        expected = _dump(_reference(log))
        assert _dump(fresh) == expected
        # A loaded state counts window rows from its load on (the counter is not saved).
        expected.pop("window_version")
        assert {k: v for k, v in _dump(resumed).items() if k != "window_version"} == expected


def test_a_batch_on_a_large_segment_equals_the_row_fold(tmp_path: Any) -> None:
    """At the real window and closed-attempt sizes: 3000 cycles in one sealed segment,
    outcomes that name only their action id (their key and gene come from the attempt),
    attempts closed twice, late outcomes of attempts forgotten long before."""
    with EventLog(str(tmp_path / "s"), create=True, durability="none", auto_seal="off") as log:
        events: list[Event] = []
        for n in range(6000):
            aid = f"a{n % 5000}"
            t = EDGE_T0 + (n * 7919 % 6000) * 3_600_000_000
            events.append(Attempt(ts=t, action_id=aid, key=f"k{n % 17}", gene=f"g{n % 7}"))
            bare = n % 3 == 0
            events.append(
                Outcome(
                    ts=t + 1,
                    action_id=f"a{(n * 31) % 5000}" if n % 11 == 0 else aid,
                    status="success" if n % 4 else "failed",
                    key="" if bare else f"k{n % 13}",
                    gene=None if bare else f"g{n % 5}",
                )
            )
        log.append_many(events)
        log.seal()
        with log.snapshot() as snap:
            kinds = [type(r).__name__ for r in advice_reader.read_rows(snap, 0)[1]]
        assert "Batch" in kinds  # the path under test is taken
        assert _dump(AdviceEngine(log, use_cache=False).state()) == _dump(_reference(log))
