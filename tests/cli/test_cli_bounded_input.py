"""Commands that read a file or stdin, given one that never ends: a one-line error, soon.

``advise --genes /dev/zero`` and ``isa parse /dev/zero`` once read until memory ran out
(~9 GB in 12 s) and ``import evolver /dev/zero`` never ended. Each child runs under an
address-space limit, so the old behaviour ends in a MemoryError (or the timeout) here
instead of taking the machine's memory.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from _eventlog_util import REPO, hash_tree
from evolog.eventlog import EventLog, Note

_AS_LIMIT = 3 << 30


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (_AS_LIMIT, _AS_LIMIT))


def _run(
    store: Path, args: list[str], stdin: str = "/dev/null", **env: str
) -> subprocess.CompletedProcess[bytes]:
    with open(stdin, "rb") as f:
        return subprocess.run(
            [sys.executable, "-m", "evolog", "--store", str(store), *args],
            stdin=f, capture_output=True, cwd=REPO, timeout=60, check=False,
            env={**os.environ, **env}, preexec_fn=_limited,
        )  # fmt: skip


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "store"
    with EventLog(path, create=True) as log:
        log.append(Note(id="n1", ts=10, text="already here"))
    return path


def _one_line(proc: subprocess.CompletedProcess[bytes]) -> str:
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 2, err[-2000:]
    assert len(err.splitlines()) == 1 and err.startswith("evolog: error: "), err[-2000:]
    return err


@pytest.mark.parametrize(
    ("args", "stdin", "where"),
    [
        (["advise", "--genes", "/dev/zero", "--signals", "a"], "/dev/null", "--genes /dev/zero"),
        (["advise"], "/dev/zero", "stdin"),
        (["isa", "parse", "/dev/zero"], "/dev/null", "/dev/zero"),
        (["isa", "run", "-"], "/dev/zero", "stdin"),
    ],
)
def test_a_whole_file_input_is_capped(store: Path, args: list[str], stdin: str, where: str) -> None:
    before = hash_tree(store)
    err = _one_line(_run(store, args, stdin, EVOLOG_MAX_INPUT_BYTES="100000"))
    assert f"{where}: expected at most 100000 bytes (EVOLOG_MAX_INPUT_BYTES); got more" in err
    assert hash_tree(store) == before


def test_the_default_cap_stops_dev_zero(store: Path) -> None:
    err = _one_line(_run(store, ["isa", "parse", "-"], "/dev/zero"))
    assert "stdin: expected at most 67108864 bytes" in err


def test_an_input_under_the_cap_is_read_whole(store: Path, tmp_path: Path) -> None:
    source = tmp_path / "p.isa"
    source.write_text("NOP\n" * 30_000)  # 120 KB, past one read chunk of the cap's size
    proc = _run(store, ["isa", "parse", str(source)], EVOLOG_MAX_INPUT_BYTES="130000")
    assert b"expected at most" not in proc.stderr, proc.stderr
    proc = _run(store, ["isa", "parse", str(source)], EVOLOG_MAX_INPUT_BYTES="119999")
    assert "expected at most 119999 bytes" in _one_line(proc)


# The last: digits to str.isdigit, but Arabic-Indic ones.
@pytest.mark.parametrize("bad", ["0", "-5", "lots", "1e6", "\u0661\u0660\u0660"])
def test_a_bad_cap_setting_is_one_line(store: Path, bad: str) -> None:
    err = _one_line(_run(store, ["isa", "parse", "-"], EVOLOG_MAX_INPUT_BYTES=bad))
    assert f"EVOLOG_MAX_INPUT_BYTES: expected a positive number of bytes; got {bad!r}" in err


@pytest.mark.parametrize("command", [["import"], ["follow", "--polls", "1"]])
def test_an_evolver_import_of_an_endless_line_stops(store: Path, command: list[str]) -> None:
    before = hash_tree(store)
    args = [command[0], "evolver", "/dev/zero", *command[1:]]
    err = _one_line(_run(store, args))
    assert "/dev/zero: line 1 (at byte 0): expected a JSONL line of at most" in err
    assert "without a newline" in err
    assert hash_tree(store) == before


def _fed_blank_lines(store: Path, args: list[str]) -> subprocess.CompletedProcess[bytes]:
    """``yes '' | evolog ARGS``: an endless stream of blank lines on stdin."""
    blank = subprocess.Popen(["yes", ""], stdout=subprocess.PIPE)
    assert blank.stdout is not None
    try:
        child = subprocess.Popen(
            [sys.executable, "-m", "evolog", "--store", str(store), *args],
            stdin=blank.stdout, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO,
            preexec_fn=_limited,
        )  # fmt: skip
        blank.stdout.close()  # the child holds the only read end: `yes` ends when it does
        try:
            out, err = child.communicate(timeout=120)
        finally:
            child.kill()
            child.wait()
    finally:
        blank.kill()
        blank.wait()
    return subprocess.CompletedProcess(child.args, child.returncode, out, err)


def test_an_evolver_import_of_endless_blank_lines_stops(store: Path) -> None:
    before = hash_tree(store)
    text = _one_line(_fed_blank_lines(store, ["import", "evolver", "/dev/stdin"]))
    assert "expected an evolver memory graph" in text and "got only blank lines" in text
    assert hash_tree(store) == before


def test_append_of_endless_blank_lines_stops(store: Path) -> None:
    before = hash_tree(store)
    text = _one_line(_fed_blank_lines(store, ["append"]))
    assert "expected JSON events; got more than 4194304 bytes of blank lines in a row" in text
    assert hash_tree(store) == before


def test_a_binary_file_is_refused_before_anything_is_imported(store: Path, tmp_path: Path) -> None:
    blob = tmp_path / "blob"
    blob.write_bytes(bytes(range(256)) * 40_000)  # newlines inside, no JSON anywhere
    before = hash_tree(store)
    err = _one_line(_run(store, ["import", "evolver", str(blob)]))
    assert "expected an evolver memory graph" in err
    assert hash_tree(store) == before


def test_a_token_file_is_capped(store: Path) -> None:
    args = ["serve", "--token-file", "/dev/zero", "--port", "0"]
    err = _one_line(_run(store, args))
    assert "--token-file /dev/zero: expected a token file of at most 1048576 characters" in err
