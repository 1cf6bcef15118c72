"""Counting passing tests by running pytest, in a worker process that stays up.

Starting Python and importing pytest costs about 0.3 s; running a ten-test project costs a
few ms. The worker runs ``pytest.main`` on each directory it is sent, with plugin autoload
and bytecode writing off (a patched ``lib.py`` can keep its size and mtime second), then
drops every module imported from that directory so the next run imports it afresh.
``mode="subprocess"`` starts a fresh ``python -m pytest`` per run instead (slower; the
tests check both agree).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Literal

from ._errors import PytestError

Mode = Literal["worker", "subprocess"]
ENV = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1"}


class PytestRunner:
    """``passed(directory)``: how many tests of that project pass."""

    def __init__(self, mode: Mode = "worker") -> None:
        self.mode = mode
        self._proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> PytestRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def passed(self, directory: str | os.PathLike[str]) -> int:
        """Run the project's tests; return the number that passed."""
        path = os.path.abspath(directory)
        if self.mode == "subprocess":
            return _count_subprocess(path)
        proc = self._worker()
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(path + "\n")
            proc.stdin.flush()
            answer = json.loads(proc.stdout.readline() or "{}")
        except (OSError, ValueError) as exc:
            self.close()
            raise PytestError(f"pytest worker on {path}: {exc}") from None
        if "passed" not in answer:
            self.close()
            raise PytestError(f"pytest worker on {path}: {answer.get('error', 'it died')}")
        return int(answer["passed"])

    def _worker(self) -> subprocess.Popen[str]:
        if self._proc is None or self._proc.poll() is not None:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "evolog.survive._pytestenv"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                env={**os.environ, **ENV},
            )
        return self._proc

    def close(self) -> None:
        """Stop the worker (if one runs)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            if proc.stdin is not None:
                proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


#: Built-in plugins a ten-test run does not need: dropping them halves a worker run.
LEAN = [
    arg
    for name in (
        "doctest", "junitxml", "pastebin", "nose", "warnings", "logging", "faulthandler",
        "stepwise", "legacypath", "unraisableexception", "threadexception", "tmpdir",
        "monkeypatch", "setuponly", "setupplan", "capture",
    )
    for arg in ("-p", f"no:{name}")
]  # fmt: skip


def _args(path: str) -> list[str]:
    ini = os.path.join(path, "pytest.ini")
    return [path, "-q", "-p", "no:cacheprovider", "-c", ini, "--rootdir", path]


def _count_subprocess(path: str) -> int:
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", *_args(path), "-rA"],
            capture_output=True,
            text=True,
            env={**os.environ, **ENV},
            timeout=120,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PytestError(f"pytest on {path}: {exc}") from None
    return sum(line.startswith("PASSED ") for line in done.stdout.splitlines())


class _Counter:
    def __init__(self) -> None:
        self.passed = 0

    def pytest_runtest_logreport(self, report: object) -> None:
        if getattr(report, "when", "") == "call" and getattr(report, "passed", False):
            self.passed += 1


def run_once(path: str) -> int:
    """Run pytest in this process on ``path``; forget its modules afterwards."""
    import pytest

    counter = _Counter()
    saved_path = list(sys.path)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            pytest.main([*_args(path), *LEAN, "--assert=plain"], plugins=[counter])
    finally:
        sys.path[:] = saved_path
        root = Path(path)
        for name, module in list(sys.modules.items()):
            file = getattr(module, "__file__", None)
            if file and Path(file).is_relative_to(root):
                del sys.modules[name]
    return counter.passed


def _serve() -> None:
    sys.dont_write_bytecode = True
    for line in sys.stdin:
        path = line.strip()
        if not path:
            continue
        answer: dict[str, object]
        try:
            answer = {"passed": run_once(path)}
        except Exception as exc:  # report it to the parent rather than dying silently
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    _serve()
