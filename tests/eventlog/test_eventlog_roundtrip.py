"""Every event kind survives every path the log offers: msgpack, JSON, WAL, Parquet, Arrow.

Also: compaction keeps rows, replays are stable, ``as_of`` replays are prefixes, and an event
the log accepts is one it can store losslessly (anything else is rejected up front).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import gc
import math
import threading
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
from _eventlog_util import (
    arrow_table,
    assert_rows_match,
    assert_same_events,
    exact,
    fresh_store,
    with_seqs,
)
from evolog.eventlog import (
    EVENT_TYPES,
    AnyEvent,
    Attempt,
    Event,
    EventLog,
    InvalidEventError,
    Node,
    Note,
    Outcome,
    Signal,
    Tick,
    from_json,
    kind_of,
    to_json,
)
from evolog.eventlog.schema._codec import decode, encode
from evolog.eventlog.sealed import _seal, _segments
from evolog.eventlog.sealed._arrow import POOL, events_to_table
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import any_event, event_batches, event_lists, events_of, texts


@given(any_event())
@settings(max_examples=300)
def test_msgpack_and_json_round_trip(event: Event) -> None:
    assert exact(decode(encode(event))) == exact(event)
    assert exact(from_json(to_json(event))) == exact(event)
    assert exact(from_json(to_json(event).decode("utf-8"))) == exact(event)


def _all_kinds() -> st.SearchStrategy[list[Event]]:
    """One event of every kind, and a few more, in a random order, ids distinct."""
    every = st.tuples(*(events_of(cls) for cls in EVENT_TYPES)).map(list)
    more = st.lists(any_event(), max_size=4)
    shuffled = st.builds(
        lambda a, b, rnd: rnd.sample(a + b, len(a) + len(b)),
        every,
        more,
        st.randoms(use_true_random=False),
    )
    return shuffled.filter(lambda evs: len({e.id for e in evs}) == len(evs))


@given(_all_kinds())
@settings(max_examples=30)
def test_every_kind_through_wal_and_parquet(events: list[Event]) -> None:
    want = with_seqs(events)
    with fresh_store() as log:
        assert log.append_many(events) == [e.seq for e in want]
        assert_same_events(list(log.replay()), want)
        assert_rows_match(arrow_table(log), want)
        log.seal()
        assert_same_events(list(log.replay()), want)
        assert_rows_match(arrow_table(log), want)
    assert {kind_of(e) for e in events} == {str(c.__struct_config__.tag) for c in EVENT_TYPES}


@given(event_batches(), st.lists(st.booleans(), max_size=8))
@settings(max_examples=30)
def test_mixed_batches_wal_then_sealed(batches: list[list[Event]], seals: list[bool]) -> None:
    flat = [e for b in batches for e in b]
    want = with_seqs(flat)
    with fresh_store() as log:
        for i, batch in enumerate(batches):
            log.append_many(batch)
            if i < len(seals) and seals[i]:
                log.seal()
        got = list(log.replay())
        assert_same_events(got, want)
        assert_rows_match(arrow_table(log), want)
        # Another reader (a second EventLog on the same store) sees the same log.
        with EventLog(log.path) as other:
            assert_same_events(list(other.replay()), want)
        log.seal()
        assert_same_events(list(log.replay()), want)
        assert log.verify().ok


@contextlib.contextmanager
def _seal_pieces(decode_events: int, group_rows: int, segment_rows: int) -> Iterator[None]:
    """Seal in tiny pieces: many decode groups, row groups and segments."""
    saved = (_seal.DECODE_EVENTS, _segments.ROW_GROUP_ROWS, _seal.SEAL_CHUNK_ROWS)
    _seal.DECODE_EVENTS, _segments.ROW_GROUP_ROWS = decode_events, group_rows
    _seal.SEAL_CHUNK_ROWS = segment_rows
    try:
        yield
    finally:
        _seal.DECODE_EVENTS, _segments.ROW_GROUP_ROWS, _seal.SEAL_CHUNK_ROWS = saved


@given(event_lists(min_size=1, max_size=40), st.integers(1, 2**62))
def test_rows_numbered_by_position_are_the_rows_of_seqd_events(
    events: list[Event], first: int
) -> None:
    """A seal numbers rows by position (``first_seq``) instead of reading each event's seq:
    with kinds interleaved in any order, that must give exactly the table of the events
    carrying those seqs."""
    unnumbered = [msgspec.structs.replace(e, seq=0) for e in events]
    numbered = events_to_table(unnumbered, first_seq=first)
    assert numbered.equals(events_to_table(with_seqs(events, first)))
    assert numbered["seq"].to_pylist() == list(range(first, first + len(events)))


@given(event_batches(), st.integers(1, 7), st.integers(1, 9), st.integers(1, 20))
@settings(max_examples=30)
def test_sealing_in_pieces_keeps_every_row(
    batches: list[list[Event]], decode_events: int, group_rows: int, segment_rows: int
) -> None:
    """Row groups written by the segment writer's thread, segments cut between decode
    groups: the same rows, in seq order, no thread left behind and no Arrow buffer kept."""
    want = with_seqs([e for b in batches for e in b])
    threads = threading.active_count()
    held = POOL.bytes_allocated()
    with _seal_pieces(decode_events, group_rows, segment_rows), fresh_store() as log:
        for batch in batches:
            log.append_many(batch)
        log.seal()
        assert_same_events(list(log.replay()), want)
        assert_rows_match(arrow_table(log), want)
        assert log.verify().ok
        with log.snapshot() as snap:
            rows = [s.rows for s in snap.segments]
        assert sum(rows) == len(want)
        assert all(r >= segment_rows for r in rows[:-1])
    assert threading.active_count() == threads
    gc.collect()
    assert POOL.bytes_allocated() == held


@given(event_batches(max_batches=8, max_batch=5), st.data())
@settings(max_examples=25)
def test_compaction_preserves_every_row(batches: list[list[Event]], data: st.DataObject) -> None:
    want = with_seqs([e for b in batches for e in b])
    with fresh_store() as log:
        for batch in batches:
            log.append_many(batch)
            if data.draw(st.booleans(), label="seal"):
                log.seal()
        before = list(log.replay())
        table_before = arrow_table(log)
        small = data.draw(st.integers(min_value=1, max_value=50), label="small_rows")
        target = data.draw(st.integers(min_value=1, max_value=80), label="target_rows")
        log.compact(small_rows=small, target_rows=target)
        assert_same_events(list(log.replay()), want)
        assert_same_events(before, want)
        assert arrow_table(log).equals(table_before)
        report = log.verify()
        assert report.ok, report.problems
        log.seal()
        log.compact(small_rows=10**9, target_rows=10**9)
        assert len(log.snapshot().segments) <= 1
        assert_same_events(list(log.replay()), want)


@given(event_batches(max_batches=5, max_batch=6), st.data())
@settings(max_examples=25)
def test_replays_are_stable_and_as_of_is_a_prefix(
    batches: list[list[Event]], data: st.DataObject
) -> None:
    with fresh_store() as log:
        for batch in batches:
            log.append_many(batch)
            if data.draw(st.booleans(), label="seal"):
                log.seal()
        full = list(log.replay())
        assert [exact(e) for e in log.replay()] == [exact(e) for e in full]
        n = len(full)
        k = data.draw(st.integers(min_value=0, max_value=n + 2), label="as_of")
        assert_same_events(list(log.replay(as_of=k)), full[:k])
        assert arrow_table(log, as_of=k).num_rows == min(k, n)
        cutoff = data.draw(st.sampled_from(sorted({e.ts for e in full})), label="as_of_ts")
        by_time = [e for e in full if e.ts <= cutoff]
        assert_same_events(list(log.replay(as_of_ts=cutoff)), by_time)
        assert_rows_match(arrow_table(log, as_of_ts=cutoff), by_time)
        kinds = data.draw(st.sets(st.sampled_from(sorted({kind_of(e) for e in full}))))
        by_kind = [e for e in full if not kinds or kind_of(e) in kinds]
        assert_same_events(list(log.replay(kinds=kinds or None)), by_kind)


@given(event_lists(min_size=1, max_size=12, complete=False))
@settings(max_examples=30)
def test_append_fills_envelope_defaults(events: list[Event]) -> None:
    with fresh_store() as log:
        before = log.append_many(events)
        stored = list(log.replay())
        log.seal()
        assert_same_events(list(log.replay()), stored)
    assert before == list(range(1, len(events) + 1))
    for given_event, got in zip(events, stored, strict=True):
        assert got.id == (given_event.id or got.id) and len(got.id) > 0
        assert got.ts == (given_event.ts or got.ts) and got.ts > 0
        if isinstance(got, Attempt):
            assert got.action_id == (given_event.action_id or got.id)  # type: ignore[attr-defined]
        assert got.agent == given_event.agent
        assert got.source == given_event.source


# -- what the log accepts, it stores losslessly ---------------------------------------------

_ODD_SCALARS: list[Any] = [
    math.nan,
    math.inf,
    -math.inf,
    2**63,
    2**64 - 1,
    2**64,
    -(2**63) - 1,
    b"bytes",
    bytearray(b"x"),
    dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    dt.date(2026, 1, 1),
    "\ud800 lone surrogate",
    (1, 2),
    {1, 2},
    object(),
]
_odd = st.sampled_from(_ODD_SCALARS)


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _odd_events() -> st.SearchStrategy[Event]:
    """Events carrying one value the log may not be able to store as given."""
    return st.one_of(
        st.builds(lambda v: Tick(id="t", ticks=v), _odd),
        st.builds(lambda v: Note(id="n", ts=v), _odd),
        st.builds(lambda v: Node(id="n", confidence=v), _odd),
        st.builds(lambda v: Outcome(id="o", score=v), _odd),
        st.builds(lambda v: Note(id="n", text=v), _odd),
        st.builds(lambda v: Note(id=v), _odd),
        st.builds(lambda k, v: Signal(id="s", observed={k: v}), texts(max_size=3), _odd),
        st.builds(lambda v: Signal(id="s", observed={"nested": [{"x": v}]}), _odd),
        st.builds(lambda v: Signal(id="s", observed={"m": {v: 1}}), _odd.filter(_hashable)),
        st.builds(lambda v: Attempt(id="a", selector=v), _odd),
        st.builds(lambda v: Attempt(id="a", selector={v: "x"}), st.integers() | st.booleans()),
    )


@given(_odd_events())
@settings(max_examples=150)
def test_accepted_means_lossless_on_every_path(event: Event) -> None:
    """Either append rejects the event cleanly, or WAL, Parquet and JSON all give it back."""
    with fresh_store() as log:
        try:
            log.append(event)
        except InvalidEventError:
            assert list(log.replay()) == []
            log.append(Note(id="after"))  # the log still works
            return
        (from_wal,) = log.replay()
        log.seal()
        (from_parquet,) = log.replay()
        assert exact(from_parquet) == exact(from_wal)
        assert exact(from_json(to_json(from_wal))) == exact(from_wal)
        assert log.verify().ok


def test_non_event_objects_are_rejected() -> None:
    with fresh_store() as log:
        for bad in [{"kind": "note"}, "note", None, msgspec.Struct]:
            with pytest.raises(InvalidEventError, match="expected an event"):
                log.append(bad)  # type: ignore[arg-type]
        assert list(log.replay()) == []


def test_replay_arrow_columns_subset() -> None:
    events: list[AnyEvent] = [
        Signal(id="s1", ts=5, signals=["a"], key="a"),
        Note(id="n1", ts=6, text="\U0001d518nicode", tags=["x"]),
    ]
    with fresh_store() as log:
        log.append_many(events)
        for sealed in (False, True):
            table = arrow_table(log, columns=["seq", "id", "text"])
            assert table.column_names == ["seq", "id", "text"]
            assert table.to_pylist() == [
                {"seq": 1, "id": "s1", "text": None},
                {"seq": 2, "id": "n1", "text": "\U0001d518nicode"},
            ]
            if not sealed:
                log.seal()
