"""``evolog init`` on a full disk, on a real small tmpfs (mounting needs root, as the tests
run): nothing half-made is left behind, and a directory an interrupted init left half-made
(this version in place, or an older one anywhere) is completed by the next init.

``init`` once created the sub-directories, then failed on the marker: a directory that every
later ``init`` refused as "non-empty without an evolog store", while the hook, which creates
its store on first use, dead-lettered every payload.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from _eventlog_util import REPO
from evolog.eventlog import EventLog, Note, StoreExistsError, init_store


def _evolog(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "evolog", *args],
        input=stdin, capture_output=True, cwd=REPO, timeout=60, check=False,
    )  # fmt: skip


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=True)


@contextlib.contextmanager
def _full(mnt: Path) -> Iterator[None]:
    """The file system of ``mnt`` without a free byte, until the block ends."""
    filler = mnt / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for size in (65536, 512, 1):
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * size)
    finally:
        os.close(fd)
    try:
        yield
    finally:
        filler.unlink()


def _payload(prompt: str) -> bytes:
    return json.dumps(
        {"hook_event_name": "UserPromptSubmit", "session_id": "s1", "prompt": prompt}
    ).encode()


def test_a_failed_init_of_a_new_directory_leaves_nothing(tmpfs: Path) -> None:
    target = tmpfs / "store"
    with _full(tmpfs):
        proc = _evolog("init", str(target))
        err = proc.stderr.decode()
        assert proc.returncode == 1, err
        assert len(err.splitlines()) == 1 and "the disk is full" in err, err
        assert sorted(os.listdir(tmpfs)) == ["filler"]  # no store, no build directory
    proc = _evolog("init", str(target))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["created"] is True
    with EventLog(target) as log:
        assert log.append(Note(text="works")) == 1


def test_an_empty_directory_left_half_made_is_completed(tmpfs: Path) -> None:
    target = tmpfs / "store"
    target.mkdir(mode=0o710)
    with _full(tmpfs):
        proc = _evolog("init", str(target))
        assert proc.returncode == 1 and b"the disk is full" in proc.stderr, proc.stderr
        # The hook, meanwhile: its payload is dead-lettered elsewhere, the agent unaffected.
        hook = _evolog("--store", str(target), "hook", "claude-code", stdin=_payload("one"))
        assert hook.returncode == 0, hook.stderr
    assert not (target / "EVOLOG").exists() and os.listdir(target)  # half-made
    # Once there is room, the hook's own init completes it, and records.
    hook = _evolog("--store", str(target), "hook", "claude-code", stdin=_payload("two"))
    assert hook.returncode == 0 and b"not recorded" not in hook.stderr, hook.stderr
    with EventLog(target) as log:
        assert [getattr(e, "task", None) for e in log.replay()][-1] == "two"
    assert target.stat().st_mode & 0o777 == 0o710  # the owner's directory, kept


def test_what_an_older_init_left_is_completed(tmp_path: Path) -> None:
    target = tmp_path / "store"
    for name in ("wal", "segments", "index", "cache"):
        (target / name).mkdir(parents=True)
    (target / "EVOLOG.tmp.999999999").write_bytes(b"")  # a marker write cut short
    proc = _evolog("init", str(target))
    assert proc.returncode == 0, proc.stderr
    assert sorted(os.listdir(target)) == ["EVOLOG", "cache", "index", "segments", "wal"]
    with EventLog(target) as log:
        assert log.append(Note(text="works")) == 1


@pytest.mark.parametrize(
    "extra",
    [
        ("notes.txt", "file"),
        ("wal/0001.wal", "file"),
        ("segments/x", "dir"),
        ("EVOLOG.tmp.1/inner", "file"),
        ("cache", "symlink"),
    ],
)
def test_a_directory_with_anything_else_is_still_refused(
    tmp_path: Path, extra: tuple[str, str]
) -> None:
    target = tmp_path / "store"
    for name in ("wal", "segments", "index"):
        (target / name).mkdir(parents=True)
    path, kind = target / extra[0], extra[1]
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "file":
        path.write_text("someone's data")
    elif kind == "dir":
        path.mkdir()
    else:
        path.symlink_to(tmp_path)
    before = sorted(str(p.relative_to(target)) for p in target.rglob("*"))
    with pytest.raises(StoreExistsError, match="got a non-empty directory without an evolog"):
        init_store(target)
    assert sorted(str(p.relative_to(target)) for p in target.rglob("*")) == before


def test_concurrent_inits_of_one_new_store_all_succeed(tmp_path: Path) -> None:
    target = tmp_path / "store"
    code = "import sys; from evolog.eventlog import init_store; init_store(sys.argv[1])"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(target)], cwd=REPO, stderr=subprocess.PIPE
        )
        for _ in range(8)
    ]
    for p in procs:
        _, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
    assert sorted(os.listdir(tmp_path)) == ["store"]  # no build directory left beside it
    assert sorted(os.listdir(target)) == ["EVOLOG", "cache", "index", "segments", "wal"]


def test_a_link_to_a_missing_directory_is_refused_and_kept(tmp_path: Path) -> None:
    link = tmp_path / "store"
    link.symlink_to(tmp_path / "not-mounted")
    with pytest.raises(StoreExistsError, match=r"got a symbolic link to .*, which does not exist"):
        init_store(link)
    assert link.is_symlink() and sorted(os.listdir(tmp_path)) == ["store"]
