"""`evolog demo`: the README's first command, end to end, and idempotent on a rerun."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from evolog.eventlog import EventLog


def run_demo(cwd: Path, *args: str) -> str:
    return subprocess.run(
        [sys.executable, "-m", "evolog", "demo", "--cycles", "60", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout


def test_demo_records_and_reports(tmp_path: Path) -> None:
    out = run_demo(tmp_path)
    assert "60 simulated agent cycles" in out
    with EventLog(tmp_path / "evolog-demo") as log:
        stats = log.stats()
        assert log.verify().ok
    kinds = stats["kinds"]
    assert kinds["attempt"] == kinds["outcome"] == kinds["signal"] == kinds["hypothesis"] == 60
    assert kinds["step"] >= 120
    # The agent's events are sealed; the dream cycle the demo runs afterwards is in the WAL.
    assert stats["sealed_events"] == sum(
        kinds[k] for k in ("attempt", "hypothesis", "outcome", "signal", "step")
    )
    assert kinds["dream_begin"] == kinds["dream_end"] >= 1


def test_demo_rerun_adds_nothing(tmp_path: Path) -> None:
    run_demo(tmp_path)
    out = run_demo(tmp_path)
    assert "appended 0 new events" in out
    with EventLog(tmp_path / "evolog-demo") as log:
        assert log.stats()["kinds"]["attempt"] == 60
