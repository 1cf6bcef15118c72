"""The id index is a cache that is checked, not believed: bits flipped in a real index file,
and index slots that outlive their events (a power cut under ``batch``/``none``), never make
an append answer "duplicate" for an event the log does not hold at that seq, nor write a
second copy of one it does. A damaged index is rebuilt from the log, and that is logged.
"""

from __future__ import annotations

import json
import os
from _blake2 import blake2b
from pathlib import Path

import pytest
from evolog.eventlog import EventLog, Note, Receipt
from evolog.eventlog.index import _idindex
from evolog.eventlog.index._idindex import IdIndex

HEADER, SLOT = _idindex.HEADER_SIZE, _idindex.SLOT


def _notes(prefix: str, n: int) -> list[Note]:
    return [Note(id=f"{prefix}{i}", text=f"{prefix} {i}") for i in range(n)]


def _slot(table: Path, event_id: str) -> int:
    """The byte offset of ``event_id``'s slot in an index table file."""
    data = table.read_bytes()
    key = blake2b(event_id.encode(), digest_size=16).digest()
    capacity = (len(data) - HEADER) // SLOT
    i = int.from_bytes(key[:8], "little") & (capacity - 1)
    for _ in range(capacity):
        off = HEADER + i * SLOT
        if data[off : off + 16] == key:
            return off
        i = (i + 1) & (capacity - 1)
    raise AssertionError(f"{event_id} is not in {table}")


def _flip(path: Path, byte: int, bit: int) -> None:
    with open(path, "r+b") as f:
        f.seek(byte)
        old = f.read(1)[0]
        f.seek(byte)
        f.write(bytes([old ^ (1 << bit)]))


def _ids(store: Path) -> list[tuple[int, str]]:
    with EventLog(store) as log:
        return [(e.seq, e.id) for e in log.replay()]


def _rebuilds(store: Path) -> list[str]:
    path = store / "recovery.log"
    lines = path.read_text().splitlines() if path.exists() else []
    return [json.loads(x)["index_rebuilt"] for x in lines if "index_rebuilt" in x]


@pytest.fixture
def filled(store: Path) -> Path:
    with EventLog(store, create=True, auto_seal="off") as log:
        log.append_many(_notes("a", 100))
        log.seal()
        log.append_many(_notes("b", 100))  # seqs 101-200 in the WAL
    return store


@pytest.mark.parametrize("event_id", ["a7", "b42"])  # sealed, in the WAL
@pytest.mark.parametrize(
    "where", [("seq", 0), ("seq", 5), ("seq", 30), ("seq", 47), ("key", 3), ("key", 100)]
)
def test_a_flipped_bit_in_a_slot_never_duplicates_nor_lies(
    filled: Path, event_id: str, where: tuple[str, int]
) -> None:
    field, bit = where
    table = filled / "index" / "000.idx"
    off = _slot(table, event_id) + (16 if field == "seq" else 0)
    _flip(table, off + bit // 8, bit % 8)
    before = _ids(filled)
    seq = dict((e, s) for s, e in before)[event_id]
    again = Note(id=event_id, text="a retry")
    with EventLog(filled, auto_seal="off") as log:
        assert log.append_receipts([again]) == [Receipt(seq, event_id, True)]
        assert log.append(Note(id="new")) == 201
    assert _ids(filled) == [*before, (201, "new")]
    assert len(_rebuilds(filled)) == 1


# The table count (kept to a flip that would cost 47 MB, not hundreds of GB, should this
# check ever be lost), covered_seq (raised past the log's end, it would read as a deleted WAL
# file), the fill count, synced_seq, the suspect mark.
@pytest.mark.parametrize(
    ("byte", "bit"), [(8, 2), (17, 3), (16, 0), (48, 2), (50, 0), (55, 7), (27, 1), (64, 0)]
)
def test_a_flipped_bit_in_the_header_is_caught_and_the_index_rebuilt(
    filled: Path, byte: int, bit: int
) -> None:
    _flip(filled / "index" / "000.idx", byte, bit)
    with EventLog(filled, auto_seal="off") as log:
        receipts = log.append_receipts([Note(id="a3"), Note(id="b99"), Note(id="c")])
    assert receipts == [Receipt(4, "a3", True), Receipt(200, "b99", True), Receipt(201, "c", False)]
    index_bytes = sum(p.stat().st_size for p in (filled / "index").iterdir())
    assert index_bytes < 8 << 20  # no tables made (and zero-filled) on a bad header's word
    assert len(_rebuilds(filled)) == 1
    assert _ids(filled)[-1] == (201, "c")


def test_an_index_of_an_older_format_is_rebuilt(filled: Path) -> None:
    table = filled / "index" / "000.idx"
    with open(table, "r+b") as f:
        f.write(b"EVLIDX01")
    with EventLog(filled, auto_seal="off") as log:
        assert log.append_receipts([Note(id="a0")]) == [Receipt(1, "a0", True)]
    assert len(_rebuilds(filled)) == 1


def _reboot(store: Path) -> None:
    """What the index looks like to the first writer after a reboot: another boot id."""
    index = IdIndex(str(store / "index"))
    table = index._tables[0]
    table.mm[32:48] = b"\x01" * 16
    if hasattr(table, "seal"):
        table.seal()
    index.close()


@pytest.mark.parametrize("durability", ["batch", "none"])
@pytest.mark.parametrize("seal_after", [False, True])
def test_index_slots_of_events_a_power_cut_lost_are_not_trusted(
    store: Path, durability: str, seal_after: bool
) -> None:
    with EventLog(store, create=True, durability=durability, auto_seal="off") as log:  # type: ignore[arg-type]
        log.append_many(_notes("kept", 10))
        log.flush()
        wal = next((store / "wal").iterdir())
        durable = wal.stat().st_size
        for note in _notes("lost", 10):  # seqs 11-20: acknowledged, never fsynced
            log.append(note)
    # The power cut: the WAL lost what was not fsynced; the index's pages reached the disk.
    os.truncate(wal, durable)
    _reboot(store)
    with EventLog(store, durability=durability, auto_seal="off") as log:  # type: ignore[arg-type]
        assert log.append_many(_notes("other", 5)) == [11, 12, 13, 14, 15]
        if seal_after:
            log.seal()
        # The agent retries what it never saw committed: it must be appended, not answered
        # "duplicate" with the seq of another event.
        receipts = log.append_receipts(_notes("lost", 10))
    assert receipts == [Receipt(16 + i, f"lost{i}", False) for i in range(10)]
    ids = _ids(store)
    assert [s for s, _ in ids] == list(range(1, 26))
    assert [e for _, e in ids[10:15]] == [f"other{i}" for i in range(5)]
    assert [e for _, e in ids[15:]] == [f"lost{i}" for i in range(10)]
    with EventLog(store, auto_seal="off") as log:  # and the rebuilt index is right
        again = log.append_receipts([Note(id="lost3"), Note(id="other2"), Note(id="kept9")])
    assert again == [
        Receipt(19, "lost3", True),
        Receipt(13, "other2", True),
        Receipt(10, "kept9", True),
    ]


def test_a_table_counted_short_is_rebuilt_not_overfilled(store: Path) -> None:
    """Filled slots the header does not count (a writer killed between its slot writes and
    its count, before the count was raised first) once made a later insert find the table
    full (ValueError out of append after 100 kill -9 rounds)."""
    first = 45_000  # a first table (65,536 slots) just under its load limit
    with EventLog(store, create=True, auto_seal="off") as log:
        log.append_many(_notes("a", first))
    index = IdIndex(str(store / "index"))
    table = index._tables[0]
    assert table.count == first
    table.set_count(0)  # every count update lost
    index.close()
    with EventLog(store, auto_seal="off") as log:
        log.append_many(_notes("b", 30_000))
        assert log.append_receipts([Note(id="a7"), Note(id="b7")]) == [
            Receipt(8, "a7", True),
            Receipt(first + 8, "b7", True),
        ]
    assert len(_rebuilds(store)) == 1
    assert len(_ids(store)) == first + 30_000
