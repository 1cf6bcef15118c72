"""The id index's keys and slot insert in C against the Python code they replace."""

from __future__ import annotations

import mmap
from _blake2 import blake2b
from pathlib import Path

import pytest
from evolog.eventlog import EventLog, Signal
from evolog.eventlog.index import _idtable
from hypothesis import given
from hypothesis import strategies as st

HEADER = _idtable.HEADER_SIZE


def _table(bits: int) -> _idtable._Table:
    table = _idtable._Table.__new__(_idtable._Table)
    table.capacity = 1 << bits
    table.mask = table.capacity - 1
    table.mm = mmap.mmap(-1, HEADER + table.capacity * _idtable.SLOT)
    return table


def test_the_c_insert_is_built() -> None:
    from evolog.eventlog import _native

    # A build whose slot format differs is left unused (an older extension would write
    # slots without check bits, which every lookup would then read as damage).
    assert _native.INDEX_SLOT_FORMAT == _idtable.SLOT_FORMAT
    assert _idtable._native_insert is not None
    assert _idtable._native_key is not None


# Any text, lone surrogates included; long enough to span several 128-byte blocks.
_ids = st.text(st.characters(blacklist_categories=()), max_size=300)


@given(_ids)
def test_c_keys_are_blake2b_of_the_utf8(event_id: str) -> None:
    expected = blake2b(event_id.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    assert _idtable.key_of(event_id) == expected


@pytest.mark.parametrize("size", [0, 1, 127, 128, 129, 255, 256, 257, 1000])
def test_c_keys_at_block_boundaries(size: int) -> None:
    event_id = "é" * (size // 2) + "x" * (size % 2)  # exactly ``size`` UTF-8 bytes
    assert len(event_id.encode()) == size
    assert _idtable.key_of(event_id) == blake2b(event_id.encode(), digest_size=16).digest()


@given(st.lists(st.tuples(_ids, st.integers(1, 2**48 - 1)), max_size=40))
def test_c_insert_of_ids_hashes_them_as_key_of(items: list[tuple[str, int]]) -> None:
    assert _idtable._native_insert is not None
    by_id, by_key = _table(6), _table(6)
    added = _idtable._native_insert(by_id.mm, HEADER, by_id.mask, items)
    keyed = [(_idtable.key_of(e), s) for e, s in items]
    assert added == by_key._insert_many(keyed)
    assert by_id.mm[:] == by_key.mm[:]


# Few home slots and repeated keys: collisions, probing past the end, and seq updates.
_keys = st.binary(min_size=16, max_size=16).map(lambda k: bytes([k[0] % 8]) + b"\0" * 7 + k[8:])
_items = st.lists(st.tuples(_keys, st.integers(1, 2**48 - 1)), max_size=40)


@given(_items)
def test_c_and_python_inserts_write_the_same_slots(items: list[tuple[bytes, int]]) -> None:
    assert _idtable._native_insert is not None
    c, py = _table(6), _table(6)
    added = _idtable._native_insert(c.mm, HEADER, c.mask, items)
    assert added == py._insert_many(items)
    assert c.mm[:] == py.mm[:]
    for key, seq in dict(items).items():
        assert c.lookup(key) == seq


def test_bad_arguments_are_refused_without_writing() -> None:
    assert _idtable._native_insert is not None
    table = _table(4)
    before = table.mm[:]
    for mask, items in (
        (31, [(b"k" * 16, 1)]),  # a mask larger than the table
        (15, [(b"short", 1)]),
        (15, [(b"k" * 16, 0)]),  # seq 0 marks an empty slot
        (15, [("an id", 0)]),
        (15, [(b"k" * 16, 2**48)]),  # the top 16 bits of a slot's seq are its check
        (15, [(16, 1)]),  # neither a key nor an id
    ):
        with pytest.raises(ValueError):
            _idtable._native_insert(table.mm, HEADER, mask, items)
    assert table.mm[:] == before
    full = [(bytes([i]) + b"\0" * 15, i + 1) for i in range(16)]
    with pytest.raises(ValueError, match="full"):
        _idtable._native_insert(table.mm, HEADER, 15, [*full, (b"\xff" * 16, 99)])


def test_an_index_written_without_the_c_code_serves_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A store written by an install without a compiler, then appended to by one with it
    # (and back): both hash ids to the same keys, so duplicates are still recognised.
    events = [Signal(id=f"client-{i}", signals=["x"]) for i in range(300)]
    with monkeypatch.context() as m:
        m.setattr(_idtable, "_native_insert", None)
        m.setattr(_idtable, "_native_key", None)
        with EventLog(tmp_path / "s", create=True) as log:
            assert log.append_many(events[:200]) == list(range(1, 201))
    with EventLog(tmp_path / "s") as log:
        assert log.append_many(events) == list(range(1, 301))
    with monkeypatch.context() as m:
        m.setattr(_idtable, "_native_insert", None)
        m.setattr(_idtable, "_native_key", None)
        with EventLog(tmp_path / "s") as log:
            assert log.append_many(events[::-1]) == list(range(300, 0, -1))
