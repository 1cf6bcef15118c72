"""The id index's slot insert in C against the Python loop it replaces."""

from __future__ import annotations

import mmap

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eventlog import _idindex

HEADER = _idindex.HEADER_SIZE


def _table(bits: int) -> _idindex._Table:
    table = _idindex._Table.__new__(_idindex._Table)
    table.capacity = 1 << bits
    table.mask = table.capacity - 1
    table.mm = mmap.mmap(-1, HEADER + table.capacity * _idindex.SLOT)
    return table


def test_the_c_insert_is_built() -> None:
    assert _idindex._native_insert is not None


# Few home slots and repeated keys: collisions, probing past the end, and seq updates.
_keys = st.binary(min_size=16, max_size=16).map(lambda k: bytes([k[0] % 8]) + b"\0" * 7 + k[8:])
_items = st.lists(st.tuples(_keys, st.integers(1, 2**64 - 1)), max_size=40)


@given(_items)
def test_c_and_python_inserts_write_the_same_slots(items: list[tuple[bytes, int]]) -> None:
    assert _idindex._native_insert is not None
    c, py = _table(6), _table(6)
    added = _idindex._native_insert(c.mm, HEADER, c.mask, items)
    assert added == py._insert_many(items)
    assert c.mm[:] == py.mm[:]
    for key, seq in dict(items).items():
        assert c.lookup(key) == seq


def test_bad_arguments_are_refused_without_writing() -> None:
    assert _idindex._native_insert is not None
    table = _table(4)
    before = table.mm[:]
    for mask, items in (
        (31, [(b"k" * 16, 1)]),  # a mask larger than the table
        (15, [(b"short", 1)]),
        (15, [(b"k" * 16, 0)]),  # seq 0 marks an empty slot
    ):
        with pytest.raises(ValueError):
            _idindex._native_insert(table.mm, HEADER, mask, items)
    assert table.mm[:] == before
    full = [(bytes([i]) + b"\0" * 15, i + 1) for i in range(16)]
    with pytest.raises(ValueError, match="full"):
        _idindex._native_insert(table.mm, HEADER, 15, [*full, (b"\xff" * 16, 99)])
