"""``evolog hook claude-code`` never exits 2: Claude Code reads a hook's exit 2 as "block".

An unknown argument (a settings file written for a newer version, say) once exited 2 from
argparse and blocked every prompt and tool call. A hook's own problems now exit 1, a
non-blocking error, with one line on stderr; a payload it cannot record exits 0 as before.
"""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest
from _eventlog_util import REPO, hash_tree
from evolog.eventlog import EventLog


def _limited() -> None:
    # Reading /dev/zero whole would otherwise take the machine's memory before failing.
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


def _hook(argv: list[str], stdin: str = "/dev/null") -> subprocess.CompletedProcess[bytes]:
    with open(stdin, "rb") as f:
        return subprocess.run(
            [sys.executable, "-m", "evolog", *argv],
            stdin=f, capture_output=True, cwd=REPO, timeout=60, check=False,
            preexec_fn=_limited,
        )  # fmt: skip


@pytest.mark.parametrize(
    "args",
    [
        ["hook", "claude-code", "--bogus"],
        ["hook", "claude-code", "extra"],
        ["hook"],
        ["hook", "other-agent"],
        ["hook", "claude-code", "--print-settings", "--nope"],
        ["--bogus", "hook", "claude-code"],
        ["--store=STORE", "hook", "claude-code", "--store"],
    ],
)
def test_a_mistake_in_the_arguments_exits_1_in_one_line(tmp_path: Path, args: list[str]) -> None:
    store = tmp_path / "s"
    EventLog(store, create=True).close()
    before = hash_tree(store)
    argv = [a.replace("STORE", str(store)) for a in args]
    if not argv[0].startswith("--store"):
        argv = ["--store", str(store), *argv]
    proc = _hook(argv)
    err = proc.stderr.decode()
    assert proc.returncode == 1, (proc.returncode, err)
    assert len(err.splitlines()) == 1 and err.startswith("evolog: error: "), err
    assert hash_tree(store) == before


def test_help_and_settings_still_exit_0(tmp_path: Path) -> None:
    store = str(tmp_path / "s")
    for args in (["hook", "--help"], ["hook", "claude-code", "--print-settings"]):
        proc = _hook(["--store", store, *args])
        assert proc.returncode == 0 and proc.stdout and not proc.stderr, proc


@pytest.mark.parametrize("stdin", ["/dev/null", "/dev/zero"])
def test_a_payload_it_cannot_record_exits_0(tmp_path: Path, stdin: str) -> None:
    store = tmp_path / "s"
    proc = _hook(["--store", str(store), "hook", "claude-code"], stdin)
    err = proc.stderr.decode()
    assert proc.returncode == 0, err
    assert len(err.splitlines()) == 1 and "not recorded" in err, err
    if stdin == "/dev/zero":  # read in bounded pieces, refused past the cap, start kept
        assert "expected a hook payload of at most 67108864 bytes; got more" in err
        kept = (store / "dead-letter.ndjson").stat().st_size
        assert 0 < kept < 1 << 20
