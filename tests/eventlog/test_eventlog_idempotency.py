"""Idempotent ids: re-appending an id returns its original seq and writes nothing.

Wherever the original lives (the WAL tail, a sealed segment, a compacted segment) and
whatever happened to the id index (deleted, taken from another store, ahead of the log):
the index is a cache, and the log decides.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
from _eventlog_util import assert_same_events, hash_tree, with_seqs
from evolog.eventlog import Event, EventLog, Note, Receipt
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import event_lists

REPO = Path(__file__).resolve().parents[2]


def _notes(prefix: str, n: int, start: int = 0) -> list[Event]:
    return [Note(id=f"{prefix}{i}", ts=1000 + i, text=f"t{i}") for i in range(start, start + n)]


def _log_files(store: Path) -> dict[str, str]:
    """Hashes of the log itself (WAL, segments, manifest): the truth that must not change."""
    return {k: v for k, v in hash_tree(store).items() if k.split("/")[0] != "index"}


def _reappend_changes_nothing(log: EventLog, store: Path, events: list[Event]) -> None:
    before_ids = [e.id for e in log.replay()]
    originals = {e.id: e.seq for e in log.replay()}
    files = hash_tree(store)
    receipts = log.append_receipts(events)
    assert receipts == [Receipt(originals[e.id], e.id, True) for e in events]
    assert hash_tree(store) == files, "a duplicate append changed files"
    assert [e.id for e in log.replay()] == before_ids


@pytest.mark.parametrize("where", ["tail", "sealed", "compacted"])
def test_reappend_returns_original_seq(store: Path, where: str) -> None:
    first = _notes("a", 30)
    with EventLog(store, create=True, auto_seal="off") as log:
        for i in range(0, 30, 10):
            log.append_many(first[i : i + 10])
            if where != "tail":
                log.seal()
        if where == "compacted":
            assert log.compact(small_rows=1000).merged_segments == 3
        log.append(Note(id="later", ts=5))
        # Same ids, different content: the id alone decides.
        again = [msgspec.structs.replace(e, text="changed") for e in first[::3]]
        _reappend_changes_nothing(log, store, again)
    with EventLog(store) as log:  # a fresh process-like open, cold caches
        _reappend_changes_nothing(log, store, first[::-7])
        assert log.append(Note(id="new")) == 32


def test_duplicates_within_one_batch(store: Path) -> None:
    with EventLog(store, create=True) as log:
        a, b = Note(id="a", text="1"), Note(id="b")
        receipts = log.append_receipts([a, b, Note(id="a", text="2"), b, Note(id="c")])
        assert receipts == [
            Receipt(1, "a", False),
            Receipt(2, "b", False),
            Receipt(1, "a", True),
            Receipt(2, "b", True),
            Receipt(3, "c", False),
        ]
        got = list(log.replay())
        assert [(e.seq, e.id) for e in got] == [(1, "a"), (2, "b"), (3, "c")]
        assert got[0].text == "1"  # type: ignore[attr-defined]


def test_duplicates_under_group_commit(store: Path) -> None:
    with EventLog(store, create=True, durability="batch") as log:
        assert log.append(Note(id="x")) == 1
        assert log.append_many([Note(id="y"), Note(id="x")]) == [2, 1]  # x still buffered
        log.flush()
        assert log.append(Note(id="y")) == 2
    with EventLog(store) as log:
        assert [e.id for e in log.replay()] == ["x", "y"]


@given(event_lists(min_size=1, max_size=15), st.data())
@settings(max_examples=20)
def test_reappending_any_subset_is_a_no_op(events: list[Event], data: st.DataObject) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as d, EventLog(Path(d) / "s", create=True) as log:
        log.append_many(events)
        if data.draw(st.booleans(), label="seal"):
            log.seal()
        subset = data.draw(st.lists(st.sampled_from(events), max_size=20), label="again")
        assert log.append_many(subset) == [events.index(e) + 1 for e in subset]
        assert_same_events(list(log.replay()), with_seqs(events))


# -- the index is a cache -------------------------------------------------------------------


def _sealed_store(store: Path, n: int = 40) -> list[Event]:
    events = _notes("e", n)
    with EventLog(store, create=True) as log:
        log.append_many(events[: n // 2])
        log.seal()
        log.append_many(events[n // 2 :])
    return events


def _check_index_rebuilt(store: Path, events: list[Event]) -> None:
    log_files = _log_files(store)
    with EventLog(store) as log:
        assert log.append_many(events[::-1]) == list(range(len(events), 0, -1))
        assert _log_files(store) == log_files, "re-appending known ids wrote to the log"
        assert log.append(Note(id="fresh")) == len(events) + 1
        assert log.append(Note(id="fresh")) == len(events) + 1
        assert [e.id for e in log.replay()] == [e.id for e in events] + ["fresh"]


def test_deleted_index_is_rebuilt_from_the_log(store: Path) -> None:
    events = _sealed_store(store)
    shutil.rmtree(store / "index")
    _check_index_rebuilt(store, events)


def test_emptied_index_directory_is_rebuilt(store: Path) -> None:
    events = _sealed_store(store)
    for f in (store / "index").iterdir():
        f.unlink()
    _check_index_rebuilt(store, events)


def test_index_from_another_store_is_not_trusted(tmp_path: Path) -> None:
    mine = _sealed_store(tmp_path / "mine", 30)
    other = tmp_path / "other"
    with EventLog(other, create=True) as log:
        log.append_many(_notes("zz", 60))  # other ids, more of them: covered_seq is ahead
        log.seal()
    shutil.rmtree(tmp_path / "mine" / "index")
    shutil.copytree(other / "index", tmp_path / "mine" / "index")
    _check_index_rebuilt(tmp_path / "mine", mine)
    with EventLog(tmp_path / "mine") as log:
        assert log.append(Note(id="zz5")) == 32  # an id only the other store had is new here


def test_index_from_a_same_sized_store_is_not_trusted(tmp_path: Path) -> None:
    mine = _sealed_store(tmp_path / "mine", 30)
    other = tmp_path / "other"
    with EventLog(other, create=True) as log:
        log.append_many(_notes("zz", 30))  # same length: only the ids tell them apart
    shutil.rmtree(tmp_path / "mine" / "index")
    shutil.copytree(other / "index", tmp_path / "mine" / "index")
    _check_index_rebuilt(tmp_path / "mine", mine)


def test_index_ahead_of_a_restored_log(tmp_path: Path) -> None:
    store = tmp_path / "live"
    events = _sealed_store(store, 10)
    backup = tmp_path / "backup"
    shutil.copytree(store, backup)
    with EventLog(store) as log:
        log.append_many(_notes("later", 10))
    # Restore the log from the backup but keep the newer index (a cache that went on).
    shutil.rmtree(backup / "index")
    shutil.copytree(store / "index", backup / "index")
    with EventLog(backup) as log:
        assert log.append(Note(id="w")) == 11
        assert log.append(Note(id="later1")) == 12  # seq 12 in the stale index, new here
        assert log.append(Note(id="x")) == 13
        assert log.append(Note(id="later2")) == 14  # stale index says 12: that is "later1"
        assert log.append_many(events) == list(range(1, 11))
        ids = [e.id for e in log.replay()]
    assert ids == [e.id for e in events] + ["w", "later1", "x", "later2"]


def test_index_deleted_while_another_writer_has_it_open(store: Path) -> None:
    events = _sealed_store(store, 20)
    with EventLog(store) as old:
        assert old.append(events[0]) == 1  # maps the index
        shutil.rmtree(store / "index")
        with EventLog(store) as new:
            assert new.append(events[5]) == 6
            assert new.append(Note(id="y")) == 21
        assert old.append(Note(id="y")) == 21, "the old writer used its stale index"
        assert old.append(Note(id="z")) == 22
    with EventLog(store) as log:
        assert log.append(Note(id="z")) == 22
        assert [e.id for e in log.replay()][-2:] == ["y", "z"]


def test_many_ids_grow_the_index(store: Path) -> None:
    """Far more ids than the first index table holds (65,536 slots)."""
    n = 100_000
    with EventLog(store, create=True, durability="none", auto_seal="off") as log:
        for start in range(0, n, 10_000):
            log.append_many(_notes("m", 10_000, start))
        assert log.append_many(_notes("m", 50, n - 50)) == list(range(n - 49, n + 1))
        assert log.append(Note(id="past")) == n + 1
    with EventLog(store) as log:
        assert log.append(Note(id="m77777")) == 77_778
        assert log.append(Note(id="m0")) == 1


def test_concurrent_writers_of_the_same_ids(store: Path) -> None:
    """Processes racing to append the same ids: each id is written exactly once."""
    EventLog(store, create=True).close()
    code = (
        "import sys; from evolog.eventlog import EventLog, Note\n"
        "with EventLog(sys.argv[1]) as log:\n"
        "    for i in range(150):\n"
        "        log.append(Note(id=f'same{i}', text=sys.argv[2]))\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(store), str(w)], cwd=REPO)
        for w in range(4)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0] * 4
    with EventLog(store) as log:
        got = list(log.replay())
        assert sorted(e.id for e in got) == sorted(f"same{i}" for i in range(150))
        assert [e.seq for e in got] == list(range(1, 151))
        assert log.verify().ok


def test_ids_a_writer_has_not_indexed_yet_are_found_by_others(store: Path) -> None:
    """A writer inserts its ids into the index in groups; until then others read the WAL."""
    with EventLog(store, create=True) as a, EventLog(store) as b:
        a.append_many([Note(ts=1, text=f"t{i}") for i in range(3)])  # minted ids
        minted = [e.id for e in a.replay()]
        assert a.append(Note(id="client", ts=1)) == 4
        assert b.append(Note(id="client", ts=1)) == 4
        assert b.append_receipts([Note(id=minted[1], ts=1)]) == [Receipt(2, minted[1], True)]
        assert a.append(Note(id=minted[2], ts=1)) == 3
        assert a.append(Note(id="after", ts=1)) == 5
        assert b.append(Note(id="after", ts=1)) == 5
    with EventLog(store) as log:
        assert [log.append(Note(id=i, ts=1)) for i in [*minted, "client", "after"]] == [
            1,
            2,
            3,
            4,
            5,
        ]


def test_a_writer_killed_before_indexing_its_ids(store: Path) -> None:
    """The ids of a writer that died with ids not yet indexed are found in the WAL."""
    EventLog(store, create=True).close()
    code = (
        "import os, sys; from evolog.eventlog import EventLog, Note\n"
        "log = EventLog(sys.argv[1])\n"
        "for i in range(10):\n"
        "    log.append(Note(id=f'k{i}', ts=1))\n"
        "os._exit(0)  # no close: the index never hears of these ids\n"
    )
    subprocess.run([sys.executable, "-c", code, str(store)], cwd=REPO, check=True)
    with EventLog(store) as log:
        assert log.append_many(_notes("k", 10)) == list(range(1, 11))
        assert log.append(Note(id="new", ts=1)) == 11
        assert log.verify().ok
