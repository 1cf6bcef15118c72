"""Torn and damaged WAL tails, on real files.

A tail cut anywhere inside the last appends is what a crash mid-write leaves: the next
writer cuts back to the last whole append, says so in ``recovery.log``, and carries on.
A changed byte in the middle of the log, with valid frames after it, is damage: it must be
reported (``CorruptLogError``, ``verify`` problems), never silently cut away.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from _eventlog_util import hash_tree
from evolog.eventlog import CorruptLogError, Event, EventLog, Note
from evolog.eventlog.wal import _frames as fr

# Appends as the writer made them: two single events, then one batch of three.
APPENDS: list[list[Event]] = [
    [Note(id="a", ts=1, text="first")],
    [Note(id="b", ts=2, text="second \U0001f9ec")],
    [Note(id=f"c{i}", ts=3 + i, text=f"batch {i}") for i in range(3)],
]


def _build(store: Path) -> Path:
    """The store with APPENDS written, one event per frame; returns its (only) WAL file."""
    old = fr.MAX_FRAME_BODY
    fr.MAX_FRAME_BODY = 1  # the batch then spans three frames, END on the last
    try:
        with EventLog(store, create=True, auto_seal="off") as log:
            for batch in APPENDS:
                log.append_many(batch)
    finally:
        fr.MAX_FRAME_BODY = old
    # The tests cut and damage the WAL behind the writer's back. A crashed writer has not
    # told the id index about a torn append; this one told it about all of them (at
    # close), and an index that knows seqs the log lacks stops the writers. So: no index.
    shutil.rmtree(store / "index")
    (wal,) = (store / "wal").iterdir()
    return wal


def _layout(data: bytes) -> list[tuple[int, int, bool]]:
    """(start, end, end-of-append) of every frame in a WAL file."""
    result = fr.scan(data, fr.FILE_HEADER.size, len(data))
    return [(f.offset, f.offset + fr.frame_size(f), f.end) for f in result.frames]


@pytest.fixture(scope="module")
def wal_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return _build(tmp_path_factory.mktemp("layout") / "store").read_bytes()


def _recovery_lines(store: Path) -> list[dict[str, object]]:
    path = store / "recovery.log"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_cut_at_every_byte_of_the_last_appends(tmp_path: Path, wal_bytes: bytes) -> None:
    frames = _layout(wal_bytes)
    assert [end for _, _, end in frames] == [True, True, False, False, True]
    boundaries = [stop for _, stop, end in frames if end]  # where whole appends end
    ids = [e.id for batch in APPENDS for e in batch]
    whole = {stop: n for n, stop in zip([1, 2, 5], boundaries, strict=True)}
    first_cut = frames[1][0] + 1  # anywhere from inside the second append to the end
    for length in range(first_cut, len(wal_bytes)):
        store = tmp_path / f"s{length}"
        wal = _build(store)
        os.truncate(wal, length)
        kept = max(n for stop, n in whole.items() if stop <= length)
        good_end = max(stop for stop in boundaries if stop <= length)
        with EventLog(store) as reader:  # readers see whole appends only, and change nothing
            assert [e.id for e in reader.replay()] == ids[:kept]
            report = reader.verify()
            assert report.ok, report.problems
            assert (length != good_end) == any("torn tail" in n for n in report.notes)
        with EventLog(store) as log:
            assert log.append(Note(id="next")) == kept + 1
            assert [e.id for e in log.replay()] == [*ids[:kept], "next"]
            report = log.verify()
            assert report.ok and not report.notes, report
            # Re-sending the batch: its original seqs if it survived, else new ones.
            resent = [3, 4, 5] if kept == 5 else [kept + 2, kept + 3, kept + 4]
            assert log.append_many(APPENDS[2]) == resent
        lines = _recovery_lines(store)
        if length == good_end:
            assert lines == [], f"cut at an append boundary ({length}) needs no repair"
        else:
            assert len(lines) == 1, f"length {length}: {lines}"
            assert lines[0]["offset"] == good_end
            assert lines[0]["cut_bytes"] == length - good_end
            assert str(lines[0]["path"]).endswith(wal.name)


def test_append_many_after_a_torn_batch(tmp_path: Path, wal_bytes: bytes) -> None:
    """A batch cut after its first frames is dropped whole; re-sending it appends it whole."""
    frames = _layout(wal_bytes)
    store = tmp_path / "s"
    wal = _build(store)
    os.truncate(wal, frames[3][1])  # two of the batch's three frames are whole
    with EventLog(store) as log:
        assert log.append_many(APPENDS[2]) == [3, 4, 5]
        assert [e.id for e in log.replay()] == ["a", "b", "c0", "c1", "c2"]
    assert _recovery_lines(store)[0]["dropped_frames"] == 2


def _middle_frame_positions(wal_bytes: bytes) -> range:
    start, stop, _ = _layout(wal_bytes)[1]  # frame 2 of 5: valid frames follow it
    return range(start, stop)


def _damage(store: Path, pos: int) -> Path:
    wal = _build(store)
    data = bytearray(wal.read_bytes())
    data[pos] ^= 0x5A
    wal.write_bytes(bytes(data))
    return wal


def _log_state(store: Path) -> dict[str, str]:
    return {k: v for k, v in hash_tree(store).items() if not k.startswith("index")}


def test_damage_inside_the_log_is_reported_never_cut(tmp_path: Path, wal_bytes: bytes) -> None:
    """Every byte of a middle frame: readers, seal and verify raise; nothing is cut.

    A writer whose WAL tail is intact does not read the rest of the file (a cold append
    reads only the last frame), so its append may go through; it must not cut anything.
    """
    for pos in _middle_frame_positions(wal_bytes):
        store = tmp_path / f"s{pos}"
        wal = _damage(store, pos)
        damaged = wal.read_bytes()
        with EventLog(store) as log:
            report = log.verify()
            assert not report.ok and report.problems, f"byte {pos}: {report}"
            with pytest.raises(CorruptLogError, match="damage"):
                list(log.replay())
            with pytest.raises(CorruptLogError, match="damage"):
                list(log.replay_arrow())
            try:
                log.append(Note(id="next"))
            except CorruptLogError as exc:
                assert "bad frame" in str(exc)
            assert wal.read_bytes()[: len(damaged)] == damaged, f"byte {pos}: the log was cut"
            state = _log_state(store)
            with pytest.raises(CorruptLogError):
                log.seal()
            assert wal.exists() and wal.read_bytes()[: len(damaged)] == damaged
            with log.snapshot() as snap:
                assert snap.manifest.sealed_seq == 0, "a seal committed around the damage"
            assert {k: v for k, v in _log_state(store).items() if k in state} == state
        assert _recovery_lines(store) == []


def test_damage_before_a_torn_tail_stops_the_writer(tmp_path: Path, wal_bytes: bytes) -> None:
    """A writer that must repair a torn tail reads the file and finds the damage: it raises
    CorruptLogError and changes nothing, rather than cutting the valid frames after it."""
    for pos in _middle_frame_positions(wal_bytes)[::3]:
        store = tmp_path / f"s{pos}"
        wal = _damage(store, pos)
        os.truncate(wal, len(wal_bytes) - 2)
        before = _log_state(store)
        with EventLog(store) as log:
            with pytest.raises(CorruptLogError, match="bad frame"):
                log.append(Note(id="next"))
            assert not log.verify().ok
        assert _log_state(store) == before, f"byte {pos}: the damaged log was modified"
        assert _recovery_lines(store) == []


def test_a_cut_tail_is_not_cut_again_by_a_second_writer(tmp_path: Path, wal_bytes: bytes) -> None:
    store = tmp_path / "s"
    wal = _build(store)
    os.truncate(wal, len(wal_bytes) - 3)
    with EventLog(store) as one, EventLog(store) as two:
        assert one.append(Note(id="x")) == 3
        assert two.append(Note(id="y")) == 4  # sees one's append, finds nothing to cut
        assert one.append(Note(id="z")) == 5
    assert len(_recovery_lines(store)) == 1
    with EventLog(store) as log:
        assert [e.id for e in log.replay()] == ["a", "b", "x", "y", "z"]


def _long_wal(store: Path, n: int) -> Path:
    """A store of ``n`` single-event appends (one frame each); returns its WAL file."""
    with EventLog(store, create=True, auto_seal="off", durability="none") as log:
        for i in range(n):
            log.append(Note(id=f"n{i}", text=f"event {i}"))
    (wal,) = (store / "wal").iterdir()
    return wal


def test_damage_far_into_the_file_before_a_torn_tail(tmp_path: Path) -> None:
    """Damage in frame 200 and a torn last frame: verify looks for the frames after the
    damage by the seqs this file holds, not by the seq the file started at."""
    store = tmp_path / "s"
    wal = _long_wal(store, 300)
    frames = _layout(wal.read_bytes())
    data = bytearray(wal.read_bytes())
    data[frames[199][0] + 30] ^= 0x01
    wal.write_bytes(bytes(data[:-2]))
    before = _log_state(store)
    with EventLog(store) as log:
        report = log.verify()
        assert not report.ok, report
        assert any("damaged frame" in p for p in report.problems), report.problems
        with pytest.raises(CorruptLogError, match="bad frame"):
            log.append(Note(id="next"))
    assert _log_state(store) == before
    assert _recovery_lines(store) == []


@pytest.mark.parametrize("where", ["crc", "length", "seq", "body", "footer"])
def test_a_bit_flip_in_the_last_whole_frame_is_damage(tmp_path: Path, where: str) -> None:
    """A torn write is a short frame. A frame of full length with a bad checksum is damage:
    reported, never cut (its event was acknowledged; cutting it would hand out its seq)."""
    store = tmp_path / "s"
    wal = _long_wal(store, 5)
    data = bytearray(wal.read_bytes())
    start, stop, _ = _layout(bytes(data))[-1]
    offset = {"crc": 0, "length": 4, "seq": 8, "body": 25, "footer": stop - start - 3}[where]
    data[start + offset] ^= 0x04
    wal.write_bytes(bytes(data))
    with EventLog(store) as log:
        report = log.verify()
        assert not report.ok, report
        assert not any("torn" in n for n in report.notes), report.notes
        with pytest.raises(CorruptLogError, match="damage"):
            list(log.replay())
        with pytest.raises(CorruptLogError, match="bad frame"):
            log.append(Note(id="next"))
        with pytest.raises(CorruptLogError):
            log.seal()
    assert wal.read_bytes() == bytes(data), "the damaged frame was cut"
    assert _recovery_lines(store) == []
