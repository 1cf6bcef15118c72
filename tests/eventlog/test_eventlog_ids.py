"""Generated ids: time-ordered, unique, and the same whether minted one by one or in bulk."""

from __future__ import annotations

import os

from evolog.eventlog.schema import _ids
from hypothesis import given, settings
from hypothesis import strategies as st

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
ALPHABET = set(CROCKFORD)


@given(st.integers(1, 3000), st.integers(0, (1 << 30) - 1), st.integers(1, 2**40))
@settings(max_examples=50)
def test_bulk_ids_equal_ids_minted_one_by_one(n: int, low: int, ms: int) -> None:
    start = (123 << 30) | low  # some runs cross a 30-bit boundary of the counter
    _ids._set(ms, start - 1)
    bulk = _ids.new_ids(n, ms)
    _ids._set(ms, start - 1)
    single = [_ids.new_id(ms) for _ in range(n)]
    assert bulk == single
    assert [_value(i) for i in bulk] == [(ms << 80) | (start + k) for k in range(n)]
    assert len(set(bulk)) == n and bulk == sorted(bulk)
    assert all(len(i) == 26 and set(i) <= ALPHABET for i in bulk)
    assert _ids.new_id(ms) > bulk[-1]  # the counter carries on after a bulk call


def _value(event_id: str) -> int:
    """The 130-bit number an id spells."""
    return int("".join(format(CROCKFORD.index(c), "05b") for c in event_id), 2)


@given(st.integers(0, 2**80 - 1), st.integers(1, 2**40), st.integers(1, 2100))
@settings(max_examples=50)
def test_one_by_one_ids_count_up_across_every_carry(start: int, ms: int, n: int) -> None:
    # Near the top of the 80 bits the counter wraps to 0 within the same millisecond.
    _ids._set(ms, start)
    got = [_value(_ids.new_id(ms)) for _ in range(n)]
    assert got == [(ms << 80) | ((start + k) % 2**80) for k in range(1, n + 1)]


def test_the_count_goes_on_across_milliseconds_from_a_random_start() -> None:
    _ids._state.last_ms = -1  # as in a new process
    a = _ids.new_ids(3, 1_000)
    b = [_ids.new_id(2_000), *_ids.new_ids(2, 3_000)]
    assert a < b and a[0][:10] != b[0][:10]
    counters = [_value(i) & (2**80 - 1) for i in a + b]
    assert counters == [counters[0] + k for k in range(6)]
    _ids._state.last_ms = -1
    assert _value(_ids.new_id(4_000)) & (2**80 - 1) != counters[-1] + 1  # a fresh start


def test_a_forked_child_does_not_continue_its_parents_count() -> None:
    _ids.new_id()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report its first id and leave at once
        os.write(write, _ids.new_id().encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child = os.read(read, 26).decode()
    os.close(read)
    os.close(write)
    parent = _ids.new_id()
    assert (_value(child) & (2**80 - 1)) != (_value(parent) & (2**80 - 1)) - 1
    assert abs((_value(child) & (2**80 - 1)) - (_value(parent) & (2**80 - 1))) > 2**40
