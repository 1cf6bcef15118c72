"""`import evolver` recognises evolver's format and refuses what is not evolver's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from evolog.advice import ImportReport, InvalidInputError, import_evolver
from evolog.advice.evolver._follow import Follower
from evolog.eventlog import EventLog, Outcome, Signal

EXAMPLES = Path(__file__).resolve().parents[1] / "data" / "evolver-examples"


@pytest.fixture
def log(tmp_path: Path) -> Any:
    with EventLog(tmp_path / "store", create=True) as opened:
        yield opened


def _store_files(log: EventLog) -> dict[str, bytes]:
    root = Path(log.paths.root)
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _replay_dump(tmp_path: Path) -> Path:
    """What `evolog replay` writes: our own events, one JSON object a line."""
    with EventLog(tmp_path / "other", create=True) as other:
        other.append(Signal(signals=["log_error"], ts=1_767_225_600_000_000))
        other.append(Outcome(action_id="a", status="success", ts=1_767_225_600_000_000))
        path = tmp_path / "replay.ndjson"
        path.write_text("".join(json.dumps(_builtins(e)) + "\n" for e in other.replay()))
    return path


def _builtins(event: Any) -> Any:
    import msgspec

    return msgspec.to_builtins(event)


@pytest.mark.parametrize(
    "content",
    [
        "replay",
        b'{"event": "login", "user": "bob"}\n{"event": "logout", "user": "bob"}\n',
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10",
        b'{"kind": "outcome", "id": "o1", "outcome": {"status": "success"}}\n',
    ],
)
def test_a_file_that_is_not_evolvers_is_refused_and_nothing_written(
    log: EventLog, tmp_path: Path, content: Any
) -> None:
    path = _replay_dump(tmp_path) if content == "replay" else tmp_path / "f.jsonl"
    if content != "replay":
        path.write_bytes(content)
    before = _store_files(log)
    with pytest.raises(InvalidInputError, match="expected an evolver memory graph") as err:
        import_evolver(log, path)
    assert "\n" not in str(err.value) and str(path) in str(err.value)
    assert list(log.replay()) == [] and _store_files(log) == before


def test_cli_refuses_with_one_line_and_exit_2(tmp_path: Path) -> None:
    path = _replay_dump(tmp_path)
    store = tmp_path / "s"
    subprocess.run([sys.executable, "-m", "evolog", "init", str(store)], check=True)
    result = subprocess.run(
        [sys.executable, "-m", "evolog", "--store", str(store), "import", "evolver", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "MemoryGraphEvent" in result.stderr


def test_lines_that_are_not_evolver_events_are_skipped_and_reported(
    log: EventLog, tmp_path: Path
) -> None:
    good = (EXAMPLES / "02_jaccard_one_third.jsonl").read_text().splitlines()
    stray = '{"kind": "outcome", "id": "x", "ts": "2026-01-01T00:00:00.000Z"}'
    path = tmp_path / "g.jsonl"
    path.write_text("\n".join([good[0], stray, *good[1:]]) + "\n")
    report = import_evolver(log, path)
    assert report.imported == len(good) and report.unsupported == 1
    assert any(p.startswith(f"{path}:2: expected an evolver event") for p in report.problems)
    assert "x" not in {e.id for e in log.replay()}


def test_an_undated_event_is_reported(log: EventLog, tmp_path: Path) -> None:
    obj = json.loads((EXAMPLES / "02_jaccard_one_third.jsonl").read_text().splitlines()[0])
    del obj["ts"]
    path = tmp_path / "g.jsonl"
    path.write_text(json.dumps(obj) + "\n")
    report = import_evolver(log, path)
    assert report.imported == 1 and report.undated == 1 and report.to_json()["undated"] == 1
    assert "no timestamp evolver can read" in report.problems[0]


def test_follow_refuses_a_file_that_is_not_evolvers(log: EventLog, tmp_path: Path) -> None:
    path = _replay_dump(tmp_path)
    with pytest.raises(InvalidInputError, match="expected an evolver memory graph"):
        Follower(log, str(path)).poll(ImportReport(str(path)))
    assert list(log.replay()) == []


def test_an_empty_file_is_an_empty_graph(log: EventLog, tmp_path: Path) -> None:
    report = import_evolver(log, EXAMPLES / "05_empty_graph_and_untyped_genes.jsonl")
    assert (report.lines, report.imported, report.problems) == (0, 0, [])
