"""The README's examples run as tests: Python blocks execute; shell lines run for real."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README.read_text(), flags=re.S)


@pytest.mark.parametrize("block", _blocks("python"))
def test_python_blocks_run(block: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    exec(compile(block, str(README), "exec"), {})


def test_cli_walkthrough_runs(tmp_path: Path) -> None:
    """Every `evolog ...` line of the command-line section, in order, against a temp store."""
    block = next(b for b in _blocks("sh") if "evolog init" in b)
    env = dict(os.environ, EVOLOG_STORE=str(tmp_path / "mem"))
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = bindir + os.pathsep + env["PATH"]
    script = block.replace("/tmp/mem", str(tmp_path / "mem")).replace(
        "/tmp/copy", str(tmp_path / "copy")
    )
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    copy = subprocess.run(
        [sys.executable, "-m", "evolog", "--store", str(tmp_path / "copy"), "replay"],
        capture_output=True,
        text=True,
        check=True,
    )
    original = subprocess.run(
        [sys.executable, "-m", "evolog", "--store", str(tmp_path / "mem"), "replay"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert copy.stdout == original.stdout  # same ids, same seqs: the target was empty


def test_sql_examples_run_on_the_demo_store(tmp_path: Path) -> None:
    """The README's analytics queries, against a store the demo filled."""
    block = next(b for b in _blocks("sh") if "evolog sql" in b)
    subprocess.run(
        [sys.executable, "-m", "evolog", "demo", "--cycles", "40", "--dir", "store"],
        cwd=tmp_path,
        capture_output=True,
        check=True,
    )
    env = dict(os.environ, EVOLOG_STORE=str(tmp_path / "store"))
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env["PATH"]
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "gene_" in result.stdout
    assert (tmp_path / "export").is_dir()
