"""The C seal converter (eventlog._native via eventlog.sealed._bodies) against the Python way.

Both must give equal tables for every kind and field value; whatever the converter does not
take must reach the Python way, which accepts it or raises what any reader would.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import evolog.eventlog as eventlog
import msgspec
import pyarrow as pa
import pytest
from conftest import examples
from evolog.eventlog.schema._codec import decode_array, encode
from evolog.eventlog.sealed import _bodies
from evolog.eventlog.sealed._arrow import events_to_table
from evolog.eventlog.wal._frames import array_header
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.strategies import event_lists

_raw = msgspec.msgpack.Encoder()


def _python_way(bodies: list[bytes], skip: int, count: int, first: int) -> pa.Table:
    data = array_header(skip + count) + b"".join(bodies)
    return events_to_table(decode_array(data)[skip:], first)


def _native_way(bodies: list[bytes], skip: int, count: int, first: int) -> pa.Table:
    before = _bodies.fallbacks
    table = _bodies.bodies_to_table(bodies, skip, count, first)
    assert _bodies.fallbacks == before, "the converter refused a body the log writes"
    return table


def _split(encoded: list[bytes], cuts: list[int]) -> list[bytes]:
    bounds = sorted({min(c, len(encoded)) for c in cuts} | {0, len(encoded)})
    return [b"".join(encoded[a:b]) for a, b in itertools.pairwise(bounds)]


def test_the_converter_is_built() -> None:
    """CI builds the extension (it needs a C compiler at install): without it every seal
    would silently take the slower Python way."""
    assert _bodies.available()


@given(
    event_lists(min_size=1, max_size=30),
    st.lists(st.integers(0, 30), max_size=4),
    st.integers(0, 3),
    st.integers(1, 2**62),
)
@settings(max_examples=examples(100))
def test_equal_to_the_python_way_for_every_kind(
    events: list[eventlog.Event], cuts: list[int], skip: int, first: int
) -> None:
    """Any events (every kind, any subset of fields, free-form and nested values), cut into
    frames anywhere, with the first ``skip`` events of the first frame already sealed."""
    skip = min(skip, len(events) - 1)
    bodies = _split([encode(e) for e in events], cuts)
    count = len(events) - skip
    want = _python_way(bodies, skip, count, first)
    got = _native_way(bodies, skip, count, first)
    assert got.schema.equals(want.schema, check_metadata=True)
    assert got.equals(want)


def test_values_at_the_edges_of_their_types() -> None:
    events = [
        eventlog.Step(id="a", ts=-(2**63), index=2**63 - 1, duration_ms=-1.5e308, ok=False),
        eventlog.Step(id="b", ts=2**63 - 1, index=-(2**63), duration_ms=5e-324, ok=True),
        eventlog.Outcome(id="c", ts=1, score=2, delta=-0.0, status="é\u2028\U0010ffff"),
        eventlog.Note(id="d", ts=1, text="x" * 70_000, tags=["", "ü" * 300]),
        eventlog.Lifecycle(id="e", ts=1, op="forget", energy=math.pi, pinned=None),
        eventlog.Hypothesis(
            id="f",
            ts=1,
            mutation=eventlog.Mutation(id="m", trigger_signals=["a"]),
            personality=eventlog.Personality(key="p", rigor=0.5),
            selector={"k": [1, 2.5, None, {"x": True}]},
            observed={},
        ),
    ]
    bodies = [encode(e) for e in events]
    assert _native_way(bodies, 0, 6, 7).equals(_python_way(bodies, 0, 6, 7))


def _map(fields: dict[str, Any]) -> bytes:
    return _raw.encode(fields)


_STEP = {"kind": "step", "id": "s1", "ts": 5, "action": "run"}


def _through_the_python_way(data: bytes) -> pa.Table:
    """Seal one odd body; the converter must hand it to the Python way."""
    before = _bodies.fallbacks
    try:
        return _bodies.bodies_to_table([data], 0, 1, 1)
    finally:
        assert _bodies.fallbacks == before + 1


@pytest.mark.parametrize(
    "body",
    [
        {**_STEP, "later_field": 1},  # a field of a newer schema: msgspec ignores it
        {**_STEP, "task": "t"},  # a field of another kind: ignored too
        {**_STEP, "index": 1.0},  # msgspec rejects a float for an int field
        {**_STEP, "index": 2**64 - 1},  # outside int64
        {**_STEP, "duration_ms": math.nan},
        {**_STEP, "duration_ms": math.inf},
        {**_STEP, "source": "bogus"},  # outside the Literal
        {**_STEP, "ok": 1},
        {**_STEP, "action": None},  # nil for a field that may not be nil
        {**_STEP, "kind": "nope"},
        {"id": "s1", "ts": 5},  # no kind
        {**_STEP, "action": b"bytes"},
    ],
)
def test_what_the_converter_refuses_goes_the_python_way(body: dict[str, Any]) -> None:
    data = _map(body)
    try:
        want: pa.Table | type[Exception] = _python_way([data], 0, 1, 1)
    except msgspec.MsgspecError as exc:
        want = type(exc)
    if isinstance(want, pa.Table):
        assert _through_the_python_way(data).equals(want)
    else:
        with pytest.raises(want):
            _through_the_python_way(data)


@pytest.mark.parametrize(
    "data",
    [
        _map(_STEP)[:-2],  # truncated
        _map(_STEP).replace(b"run", b"r\xffn"),  # invalid UTF-8
        _map(_STEP).replace(b"run", b"\xed\xa0\x80"),  # a surrogate
        _map(_STEP) + b"\xc0",  # bytes after the last event
    ],
)
def test_malformed_bodies_raise_what_a_reader_raises(data: bytes) -> None:
    with pytest.raises((msgspec.MsgspecError, UnicodeDecodeError)) as want:
        _python_way([data], 0, 1, 1)
    with pytest.raises(want.type):
        _through_the_python_way(data)


def test_a_count_that_does_not_match_the_bodies_is_refused() -> None:
    from evolog.eventlog import _native

    plan = _bodies._plan()
    assert plan is not None
    body = _map(_STEP)
    for bodies, skip, count in (([body], 0, 2), ([body, body], 0, 1), ([body], 1, 1)):
        with pytest.raises(ValueError):
            _native.convert(plan.capsule, bodies, skip, count)


def test_a_seal_takes_the_converter(tmp_path: Any) -> None:
    from evolog._demo import simulate

    events = [e for batch in simulate(40, seed=3) for e in batch]
    before = _bodies.fallbacks
    with eventlog.EventLog(tmp_path / "s", create=True, auto_seal="off") as log:
        log.append_many(events[:100])
        log.append_many(events[100:])
        want = list(log.replay())
        assert log.seal().rows == len(events)
        assert list(log.replay()) == want
        assert log.verify().ok
    assert _bodies.fallbacks == before
