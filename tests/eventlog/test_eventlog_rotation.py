"""Rotation seen by identity, and WAL files that disappear.

A seal rotates the WAL (a new active file) under the write lock; every other writer must
append to the new file from its next append on. Timestamps cannot tell it: a rotation can
land within one mtime tick of the directory (coarse-timestamp filesystems), which
``os.utime`` reproduces on any filesystem. A WAL file deleted behind the log's back must
stop the writers rather than let them hand out the lost seqs again.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from _eventlog_util import check_acked, hash_tree, read_acks, read_log, spawn
from evolog.eventlog import CorruptLogError, EventLog, Note


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A new, empty store."""
    path = tmp_path / "store"
    EventLog(path, create=True).close()
    return path


def _keep_mtime(directory: Path) -> os.stat_result:
    return os.stat(directory)


def _restore_mtime(directory: Path, st: os.stat_result) -> None:
    """Make a change land within the directory's previous timestamp tick."""
    os.utime(directory, ns=(st.st_atime_ns, st.st_mtime_ns))


def _ids(store: Path) -> list[str]:
    with EventLog(store) as log:
        report = log.verify()
        assert report.ok, report.problems
        events = list(log.replay())
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    return [e.id for e in events]


def test_seal_within_one_mtime_tick(store: Path) -> None:
    """The issue's form: A appends; B seals; wal/'s mtime restored; A and B append."""
    with EventLog(store, auto_seal="off") as a, EventLog(store, auto_seal="off") as b:
        assert a.append(Note(id="e1")) == 1
        st = _keep_mtime(store / "wal")
        b.seal()  # rotates, seals e1, deletes the file A has open
        _restore_mtime(store / "wal", st)
        assert a.append(Note(id="e2")) == 2
        assert b.append(Note(id="e3")) == 3
    assert _ids(store) == ["e1", "e2", "e3"]


def test_rotation_within_one_mtime_tick_before_the_old_file_goes(store: Path) -> None:
    """Between a seal's rotation and its deletion of the old file, the old file is still
    there: a writer must see that it is no longer the newest."""
    with EventLog(store, auto_seal="off") as a, EventLog(store, auto_seal="off") as b:
        assert a.append(Note(id="e1")) == 1
        st = _keep_mtime(store / "wal")
        assert b._writer.rotate() == 2  # a seal's first step
        _restore_mtime(store / "wal", st)
        assert b.append(Note(id="e2")) == 2
        assert a.append(Note(id="e3")) == 3
        assert b.append(Note(id="e4")) == 4
        b.seal()
        assert a.append(Note(id="e5")) == 5
    assert _ids(store) == ["e1", "e2", "e3", "e4", "e5"]


def test_many_rotations_within_one_tick(store: Path) -> None:
    st = _keep_mtime(store / "wal")
    logs = [EventLog(store, auto_seal="off") for _ in range(3)]
    try:
        want = []
        for i in range(30):
            log = logs[i % 3]
            want.append(f"e{i}")
            assert log.append(Note(id=f"e{i}")) == i + 1
            if i % 4 == 3:
                logs[(i + 1) % 3].seal()
            _restore_mtime(store / "wal", st)
    finally:
        for log in logs:
            log.close()
    assert _ids(store) == want


def test_a_rotation_stopped_between_its_two_steps(store: Path) -> None:
    """A seal killed after it retired the active file (read-only), before it made the next
    one: the next writer makes it, an open writer included."""
    with EventLog(store, auto_seal="off") as a:
        assert a.append(Note(id="e1")) == 1
        (wal,) = sorted((store / "wal").glob("*.wal"))
        os.chmod(wal, 0o444)
        assert a.append(Note(id="e2")) == 2
        with EventLog(store, auto_seal="off") as b:
            assert b.append(Note(id="e3")) == 3
            assert len(list((store / "wal").glob("*.wal"))) == 2
            b.seal()
        assert a.append(Note(id="e4")) == 4
    assert _ids(store) == ["e1", "e2", "e3", "e4"]


# -- a deleted newest WAL file -----------------------------------------------------------


def _wal_files(store: Path) -> list[Path]:
    return sorted((store / "wal").glob("*.wal"))


def _log_state(store: Path) -> dict[str, str]:
    return {k: v for k, v in hash_tree(store).items() if not k.startswith("index")}


def test_deleted_newest_wal_file_is_refused(store: Path) -> None:
    with EventLog(store, auto_seal="off") as log:
        log.append_many([Note(id=f"s{i}") for i in range(10)])
        log.seal()
        for i in range(50):
            log.append(Note(id=f"n{i}"))
    (newest,) = _wal_files(store)
    newest.unlink()
    before = _log_state(store)
    with EventLog(store) as log:
        with pytest.raises(CorruptLogError, match="missing"):
            log.append(Note(id="x"))
        with pytest.raises(CorruptLogError, match="missing"):
            log.append(Note(id="n3"))  # not "a new event at seq 14"
        report = log.verify()
        assert not report.ok
        assert any("missing" in p for p in report.problems), report.problems
    assert _log_state(store) == before, "the refused append changed the store"


def test_deleted_newest_wal_file_under_an_open_writer(store: Path) -> None:
    """The writer itself knows the seqs it handed out, even before the index has them."""
    with EventLog(store, auto_seal="off") as log:
        log.append_many([Note(id=f"s{i}") for i in range(10)])
        log.seal()
        for i in range(20):  # fewer than the writer's id-index lag: the index has none
            assert log.append(Note(id=f"n{i}")) == 11 + i
        (newest,) = _wal_files(store)
        newest.unlink()
        with pytest.raises(CorruptLogError, match="missing"):
            log.append(Note(id="x"))
        assert _wal_files(store) == [], "the refused append created a WAL file"


def test_restored_log_with_a_newer_index_needs_the_index_deleted(store: Path) -> None:
    """A log restored from an older copy beside a newer id index cannot be told from a
    log that lost its newest file: the writer refuses, and says how to accept it."""
    with EventLog(store, auto_seal="off") as log:
        log.append_many([Note(id=f"s{i}") for i in range(10)])
        log.seal()
    backup = {p.name: p.read_bytes() for p in _wal_files(store)}
    with EventLog(store, auto_seal="off") as log:
        log.append_many([Note(id=f"later{i}") for i in range(70)])
    for p in _wal_files(store):
        p.unlink()
    for name, data in backup.items():
        (store / "wal" / name).write_bytes(data)
    with EventLog(store) as log, pytest.raises(CorruptLogError, match="index"):
        log.append(Note(id="w"))
    for p in (store / "index").iterdir():
        p.unlink()
    with EventLog(store) as log:
        assert log.append(Note(id="w")) == 11
        assert log.append(Note(id="later1")) == 12
    assert _ids(store) == [*(f"s{i}" for i in range(10)), "w", "later1"]


# -- writers and sealers where timestamps cannot tell a rotation ---------------------------

WRITERS = 3
SEALERS = 2
PER_PROCESS = 200


def _writers_and_sealers(root: Path, *extra: str) -> None:
    """WRITERS appending and SEALERS appending and sealing every few events, all at once:
    every acknowledged append is in the log once, at its acknowledged seq."""
    store = root / "store"
    EventLog(store, create=True).close()
    children = []
    for w in range(WRITERS + SEALERS):
        mode, every = ("seal", ("--seal-every", str(7 + 4 * w))) if w >= WRITERS else ("append", ())
        args = ("--prefix", f"w{w}", "--count", str(PER_PROCESS), *every, *extra)
        children.append(spawn(mode, store, root / f"ack-w{w}", *args))
    for child in children:
        _, err = child.communicate(timeout=600)
        assert child.returncode == 0, err
    acks = {f"w{w}": read_acks(root / f"ack-w{w}") for w in range(WRITERS + SEALERS)}
    assert all(len(pairs) == PER_PROCESS for pairs in acks.values())
    events = read_log(store)  # verify ok, seqs 1..N, no id twice
    assert len(events) == (WRITERS + SEALERS) * PER_PROCESS, "acknowledged appends were lost"
    check_acked(events, acks)
    seqs = [s for pairs in acks.values() for s, _ in pairs]
    assert len(set(seqs)) == len(seqs), "a seq was acknowledged to two appends"
    with EventLog(store) as log, log.snapshot() as snap:
        assert snap.manifest.sealed_seq > 0, "nothing was sealed: no rotation was tried"


def test_writers_and_sealers_with_rotations_in_one_mtime_tick(tmp_path: Path) -> None:
    """Every WAL file created or deleted keeps wal/'s mtime (os.utime), as on a
    filesystem with coarse timestamps."""
    _writers_and_sealers(tmp_path, "--coarse-mtime")


@pytest.fixture
def ramfs(tmp_path: Path) -> Iterator[Path]:
    """A ramfs mounted for the test (coarse timestamps on many kernels), or a skip."""
    mnt = tmp_path / "ramfs"
    mnt.mkdir()
    if shutil.which("mount") is None:
        pytest.skip("no mount command to make a ramfs")
    made = subprocess.run(["mount", "-t", "ramfs", "ramfs", str(mnt)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a ramfs here: {made.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_writers_and_sealers_on_a_ramfs(ramfs: Path) -> None:
    _writers_and_sealers(ramfs)
