"""A store on read-only media can be read: every reader command works, writers fail with one
line. Two real forms: a read-only bind mount (root only; skipped where mounting is not
permitted) and a store whose permission bits deny writing (run as root, the child first
drops the capabilities that let root ignore permission bits).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from evolog.eventlog import Attempt, EventLog, Outcome, Signal

# linux/prctl.h and linux/capability.h
PR_CAPBSET_DROP = 24
CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 1, 2

READERS = [
    ["replay"],
    ["stats"],
    ["verify"],
    ["route", "fix the flaky test"],
    ["graph"],
    ["advise", "--signals", "log_error", "--genes", "GENES"],
    ["sql", "select count(*) as n from events"],
    ["edges"],
    ["ledger"],
]
WRITERS = [["append", '{"kind":"note","text":"x"}'], ["seal"], ["compact"]]


def _fill(store: Path) -> None:
    with EventLog(store, create=True) as log:
        for i in range(6):
            log.append_many(
                [
                    Signal(signals=["log_error"]),
                    Attempt(action_id=f"a{i}", task="fix the flaky test", gene="gene_a"),
                    Outcome(action_id=f"a{i}", status="success" if i % 2 else "failed"),
                ]
            )
            if i == 2:
                log.seal()  # some events sealed, the rest in the WAL


def _genes(directory: Path) -> Path:
    path = directory / "genes.json"
    gene = {"type": "Gene", "id": "gene_a", "category": "repair"}
    path.write_text(json.dumps({"version": 1, "genes": [gene]}))
    return path


def _run(
    store: Path, args: list[str], genes: Path, preexec: Callable[[], None] | None = None
) -> subprocess.CompletedProcess[str]:
    argv = [str(genes) if a == "GENES" else a for a in args]
    return subprocess.run(
        [sys.executable, "-m", "evolog", "--store", str(store), *argv],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=preexec,
        cwd=str(genes.parent),
    )


def _check(store: Path, genes: Path, preexec: Callable[[], None] | None = None) -> None:
    before = _tree(store)
    for args in READERS:
        result = _run(store, args, genes, preexec)
        assert result.returncode == 0, (args, result.stderr)
        assert "Traceback" not in result.stderr
    for args in WRITERS:
        result = _run(store, args, genes, preexec)
        assert result.returncode == 1, (args, result.stdout)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("evolog: error: "), result.stderr
        assert "write access" in lines[0]
    assert _tree(store) == before


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@contextlib.contextmanager
def _scratch(tmp_path: Path) -> Iterator[Path]:
    """A directory whose permission bits are restored at the end, for pytest to clean."""
    path = tmp_path / "scratch"
    path.mkdir()
    try:
        yield path
    finally:
        for p in [path, *path.rglob("*")]:
            with contextlib.suppress(OSError):
                p.chmod(0o755 if p.is_dir() else 0o644)


def test_readers_work_on_a_read_only_bind_mount(tmp_path: Path) -> None:
    source, mount = tmp_path / "store", tmp_path / "ro"
    _fill(source)
    mount.mkdir()
    bind = subprocess.run(["mount", "--bind", str(source), str(mount)], capture_output=True)
    if bind.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {bind.stderr.decode().strip()}")
    try:
        ro = subprocess.run(
            ["mount", "-o", "remount,ro,bind", str(mount)], capture_output=True, text=True
        )
        if ro.returncode != 0:
            pytest.skip(f"cannot remount read-only here: {ro.stderr.strip()}")
        with pytest.raises(OSError):
            (mount / "probe").write_text("x")
        _check(mount, _genes(tmp_path))
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def _drop_dac_override() -> None:
    """In the child, before exec: root without the capabilities to bypass permission bits
    (dropped from the bounding set, so the exec'd program does not get them back)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            os._exit(99)


def test_readers_work_on_a_store_without_write_permission(tmp_path: Path) -> None:
    with _scratch(tmp_path) as scratch:
        store = scratch / "store"
        _fill(store)
        genes = _genes(scratch)
        for p in [store, *store.rglob("*")]:
            mode = p.stat().st_mode
            p.chmod(stat.S_IMODE(mode) & ~0o222)
        preexec = _drop_dac_override if os.geteuid() == 0 else None
        probe = subprocess.run(
            [sys.executable, "-c", "open(__import__('sys').argv[1], 'a')", str(store / "x")],
            capture_output=True,
            preexec_fn=preexec,
        )
        if b"PermissionError" not in probe.stderr:
            pytest.skip(f"cannot run as a user the permission bits apply to: {probe.stderr!r}")
        _check(store, genes, preexec)
