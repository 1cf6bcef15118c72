"""A full disk: writes fail, the writer gets a clean StorageError, the log stays exact.

``RLIMIT_FSIZE`` with SIGXFSZ ignored makes every write past the limit fail with EFBIG, in a
real child process (``tests/_crashy.py fsize``), with no mount and no mocking. A small tmpfs
(mounting needs root, as the test environment runs) gives a real ENOSPC, which also reaches
memory-mapped files: there, a write into an unallocated page kills with SIGBUS.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from _eventlog_util import check_acked, read_acks, read_log, spawn
from evolog.eventlog import EventLog, Note


@pytest.mark.parametrize(
    ("limit", "text_bytes"),
    [(20_000, 100), (50_000, 3_000), (200_000, 40_000)],
    ids=["small-events", "mid-events", "large-events"],
)
def test_file_size_limit_gives_storage_error(tmp_path: Path, limit: int, text_bytes: int) -> None:
    store = tmp_path / "store"
    ack = tmp_path / "ack"
    child = spawn(
        "fsize",
        store,
        ack,
        "--prefix",
        "f",
        "--fsize-limit",
        str(limit),
        "--text-bytes",
        str(text_bytes),
    )
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    (line,) = out.splitlines()
    assert line.startswith("storage-error "), out
    assert "disk is full" in line, line
    acks = {"f": read_acks(ack)}
    assert len(acks["f"]) >= 2
    events = read_log(store)  # verify() ok, seqs 1..N, no duplicate ids
    check_acked(events, acks)
    assert len(events) == len(acks["f"]), "an event that failed to append is in the log"
    wal = max((store / "wal").iterdir())
    assert wal.stat().st_size <= limit
    with EventLog(store) as log:  # with room again, the same store goes on
        assert log.append(Note(id="more")) == len(events) + 1
        log.seal()
    assert [e.id for e in read_log(store)] == [e.id for e in events] + ["more"]


def test_file_size_limit_during_seal(tmp_path: Path) -> None:
    """A segment that cannot be written: StorageError, nothing sealed, nothing lost."""
    store = tmp_path / "store"
    child = spawn(
        "fsize-seal",
        store,
        tmp_path / "ack",
        "--prefix",
        "f",
        "--count",
        "3000",
        "--text-bytes",
        "200",
        "--fsize-limit",
        "4096",
    )
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    assert out.startswith("storage-error "), out + err
    events = read_log(store)
    assert [e.id for e in events] == [f"f-{i}" for i in range(3000)]
    with EventLog(store) as log:
        assert log.snapshot().manifest.sealed_seq == 0
        log.seal()
        assert log.append(Note(id="f-7")) == 8
    assert [e.id for e in read_log(store)] == [e.id for e in events]


def test_file_size_limit_in_the_segment_writer_thread(tmp_path: Path) -> None:
    """The same when the failing write is a row group written by the background thread."""
    store = tmp_path / "store"
    args = ["--prefix", "f", "--count", "3000", "--text-bytes", "200"]
    child = spawn(
        "fsize-seal", store, tmp_path / "ack", *args, "--fsize-limit", "32768",
        "--row-group-rows", "200",
    )  # fmt: skip
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    assert out.startswith("storage-error "), out + err
    assert os.listdir(store / "segments") == []  # the partial segment was deleted at once
    assert [e.id for e in read_log(store)] == [f"f-{i}" for i in range(3000)]
    with EventLog(store) as log:
        assert log.seal().rows == 3000
    assert [e.id for e in read_log(store)] == [f"f-{i}" for i in range(3000)]


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """An 8 MiB tmpfs: a file system that really runs out of space (needs root)."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=True)


def _fill(path: Path, leave: int) -> None:
    """Fill the file system of ``path`` with one file, then free ``leave`` bytes."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        with contextlib.suppress(OSError):
            while True:
                os.write(fd, b"\0" * 65536)
        with contextlib.suppress(OSError):
            while True:
                os.write(fd, b"\0" * 512)
    finally:
        os.close(fd)
    os.truncate(path, os.path.getsize(path) - leave)


def test_no_space_left_on_device(small_tmpfs: Path, tmp_path: Path) -> None:
    """ENOSPC from a real file system: appends and seals fail cleanly, nothing is lost."""
    store = small_tmpfs / "store"
    with EventLog(store, create=True) as log:
        log.append(Note(id="f-first"))
    filler = small_tmpfs / "filler"
    _fill(filler, leave=96 * 1024)
    child = spawn("fsize", store, tmp_path / "ack", "--prefix", "f", "--fsize-limit", "0")
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, f"the writer failed ({child.returncode}): {err}"
    assert out.startswith("storage-error ") and "disk is full" in out, out
    acked = read_acks(tmp_path / "ack")
    events = read_log(store)
    assert [e.id for e in events] == ["f-first"] + [eid for _, eid in acked]
    child = spawn("fsize-seal", store, tmp_path / "ack2", "--count", "0", "--fsize-limit", "0")
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, f"the sealer failed ({child.returncode}): {err}"
    assert out.startswith("storage-error "), out
    assert [e.id for e in read_log(store)] == [e.id for e in events]
    filler.unlink()
    with EventLog(store) as log:
        assert log.append(Note(id="f-more")) == len(events) + 1
        log.seal()
    assert [e.id for e in read_log(store)] == [e.id for e in events] + ["f-more"]
