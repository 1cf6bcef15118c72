"""Issue 17.3: related keys. evolver's keys keep digits inside tokens (``646ms``), so one
recurring error spreads over many keys; the ``evolog`` policy and ``edges`` match them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from evolog.advice import AdviceEngine
from evolog.eventlog import EventLog, Outcome
from evolog.eventlog.schema._signalkey import compute_signal_key, parse_iso_ms
from evolog.projections import Projections

NOW = "2026-03-01T00:00:00.000Z"
NOW_US = int(parse_iso_ms(NOW)) * 1000
DAY_US = 86_400_000_000


@pytest.fixture
def log(tmp_path: Path) -> Any:
    with EventLog(tmp_path / "store", create=True, durability="none") as lg:
        yield lg


def _timeouts(log: EventLog) -> None:
    log.append_many(
        Outcome(
            ts=NOW_US - DAY_US,
            signals=["log_error", f"errsig:timeout after {ms}ms"],
            gene="gene_retry",
            status="success",
        )
        for ms in (646, 1200, 88)
    )


def test_digits_inside_tokens_do_not_split_evidence(log: EventLog) -> None:
    _timeouts(log)
    query = ["log_error", "errsig:timeout after 5000ms"]
    answer = AdviceEngine(log, use_cache=False).advise(query, ["gene_retry"], now=NOW).to_json()
    assert answer["currentSignalKey"] == compute_signal_key(query)  # evolver's key, unchanged
    assert sorted(s for _, s in answer["candidateKeys"]) == [1.0, 1.0, 1.0]  # was 1/3 each
    assert answer["status"] == "prefer" and answer["preferredGeneId"] == "gene_retry"
    other = ["log_error", "errsig:No space left on device"]
    unrelated = AdviceEngine(log, use_cache=False).advise(other, ["gene_retry"], now=NOW)
    assert [s for _, s in unrelated.to_json()["candidateKeys"]] == [1 / 3] * 3


def test_matching_sets_survive_the_cache(log: EventLog) -> None:
    _timeouts(log)
    query = ["log_error", "errsig:timeout after 7ms"]
    first = AdviceEngine(log).advise(query, ["gene_retry"], now=NOW).to_json()
    second = AdviceEngine(log).advise(query, ["gene_retry"], now=NOW).to_json()
    assert first["candidateKeys"] == second["candidateKeys"]
    assert [s for _, s in second["candidateKeys"]] == [1.0] * 3


def test_edges_for_signals_find_the_keys_holding_them(log: EventLog) -> None:
    flaky = ["test_failure", "flaky", "errsig:AssertionError in tests/test_io.py:41"]
    log.append_many(
        [
            Outcome(ts=NOW_US, signals=flaky, gene="gene_retry", status="success"),
            Outcome(ts=NOW_US, signals=["test_failure"], gene="gene_x", status="failed"),
        ]
    )
    proj = Projections(log)
    exact = proj.edges(signals=["test_failure", "flaky"], now=NOW_US).to_pylist()
    related = proj.edges(signals=["test_failure", "flaky"], now=NOW_US, related=True)
    assert exact == []
    assert [(r["signal_key"], r["gene"]) for r in related.to_pylist()] == [
        (compute_signal_key(flaky), "gene_retry")
    ]


def test_edges_cli_matches_related_keys_unless_exact(log: EventLog, tmp_path: Path) -> None:
    import subprocess
    import sys

    log.append(
        Outcome(
            ts=NOW_US,
            signals=["test_failure", "flaky", "errsig:x 12ms"],
            gene="gene_retry",
            status="success",
        )
    )
    log.flush()
    base = [sys.executable, "-m", "evolog", "--store", str(tmp_path / "store"), "edges"]
    args = ["--signals", "test_failure,flaky"]
    out = subprocess.run([*base, *args], capture_output=True, text=True, check=True).stdout
    assert [r["gene"] for r in json.loads(out)] == ["gene_retry"]
    out = subprocess.run([*base, *args, "--exact"], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []
