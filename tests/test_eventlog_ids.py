"""Generated ids: time-ordered, unique, and the same whether minted one by one or in bulk."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from eventlog import _ids

ALPHABET = set("0123456789ABCDEFGHJKMNPQRSTVWXYZ")


@given(st.integers(1, 3000), st.integers(0, (1 << 30) - 1), st.integers(1, 2**40))
@settings(max_examples=50)
def test_bulk_ids_equal_ids_minted_one_by_one(n: int, low: int, ms: int) -> None:
    start = (123 << 30) | low  # some runs cross a 30-bit boundary of the counter
    _ids._state.last_ms, _ids._state.counter = ms, start - 1
    bulk = _ids.new_ids(n, ms)
    _ids._state.last_ms, _ids._state.counter = ms, start - 1
    single = [_ids.new_id(ms) for _ in range(n)]
    assert bulk == single
    assert len(set(bulk)) == n and bulk == sorted(bulk)
    assert all(len(i) == 26 and set(i) <= ALPHABET for i in bulk)
    assert _ids.new_id(ms) > bulk[-1]  # the counter carries on after a bulk call


def test_a_new_millisecond_starts_a_new_random_run() -> None:
    _ids._state.last_ms = -1
    a = _ids.new_ids(3, 1_000)
    b = _ids.new_ids(3, 2_000)
    assert a < b and a[0][:10] != b[0][:10]
