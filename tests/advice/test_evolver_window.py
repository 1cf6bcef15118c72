"""evolver's advice from the window's summaries kept as it slides (what a warm engine and the
server answer) equals :func:`evolver_advice` over the same window, line for line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from evolog.advice import AdviceEngine
from evolog.advice._state import WINDOW
from evolog.advice.evolver._policy import evolver_advice, read_evolver_jsonl_tail
from evolog.advice.evolver._window import WindowIndex
from evolog.eventlog import Attempt, EventLog, Outcome, Signal, init_store
from evolog.eventlog.schema._signalkey import parse_iso_ms
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import evolver_graph_lines, evolver_queries

EXAMPLES = Path(__file__).resolve().parents[1] / "data" / "evolver-examples"
NOW_MS = parse_iso_ms("2026-03-01T00:00:00.000Z")


@settings(max_examples=150, deadline=None)
@given(
    st.lists(evolver_graph_lines(), max_size=40),
    st.integers(1, 9),
    st.lists(evolver_queries(), min_size=1, max_size=3),
)
def test_sliding_index_answers_as_the_window_does(
    lines: list[dict[str, Any]], width: int, queries: list[tuple[Any, list[Any], Any]]
) -> None:
    index = WindowIndex()
    for n, line in enumerate(lines, 1):
        index.push(line)
        if len(index) > width:
            index.pop()
        window = lines[max(0, n - width) : n]
        for signals, genes, drift in queries:
            want = evolver_advice(window, signals, genes, drift, NOW_MS, window=None)
            assert index.advice(signals, genes, drift, NOW_MS) == want


@pytest.mark.parametrize("name", sorted(p.stem for p in EXAMPLES.glob("*.jsonl")))
def test_reference_examples_through_the_index(name: str) -> None:
    lines = read_evolver_jsonl_tail(EXAMPLES / f"{name}.jsonl")
    queries = json.loads((EXAMPLES / f"{name}.query.json").read_text())
    index = WindowIndex(lines)
    for query in queries:
        args = (query["signals"], query["genes"], query["driftEnabled"], NOW_MS)
        assert index.advice(*args) == evolver_advice(lines, *args, window=None)


def _history(log: EventLog, start: int, count: int) -> None:
    events: list[Any] = []
    for i in range(start, start + count):
        signals = [f"s{i % 11}", f"area{i % 3}"]
        ts = 1_772_323_200_000_000 + i * 60_000_000
        if i % 17 == 0:
            events.append(Signal(id=f"sig{i}", ts=ts, signals=signals))
        events.append(Attempt(id=f"a{i}", ts=ts, action_id=f"act{i}", signals=signals,
                              gene=f"g{i % 5}"))  # fmt: skip
        status = "success" if (i * 7919) % 10 < 3 + i % 5 else "failed"
        events.append(Outcome(id=f"o{i}", ts=ts + 1, action_id=f"act{i}", status=status))
    log.append_many(events)


def test_warm_engine_equals_a_one_shot_read_as_the_window_slides(tmp_path: Path) -> None:
    store = str(tmp_path / "s")
    init_store(store)
    genes = [{"type": "Gene", "id": f"g{i}"} for i in range(5)]
    queries = [[f"s{i}", f"area{i % 3}"] for i in range(11)] + [[], ["s1"]]
    with EventLog(store) as log:
        warm = AdviceEngine(log, use_cache=False)
        start = 0
        # Below the window, then past it (rows leave the window), in steps of every size.
        for count in (30, 1, 700, 400, 2, 1100, 37):
            _history(log, start, count)
            start += count
            cold = AdviceEngine(log, use_cache=False, one_shot=True)
            for signals in queries:
                args: dict[str, Any] = {"policy": "evolver", "now": "2026-03-20T00:00:00Z"}
                got = warm.advise(signals, genes, **args)
                assert got == cold.advise(signals, genes, **args), (start, signals)
        assert len(warm.state().window) == WINDOW


def _line(key: Any, signals: Any, gene: Any, status: str, ts: Any) -> dict[str, Any]:
    return {
        "type": "MemoryGraphEvent", "kind": "outcome", "ts": ts,
        "signal": {"key": key, "signals": signals}, "gene": {"id": gene},
        "outcome": {"status": status},
    }  # fmt: skip


def _slide(lines: list[dict[str, Any]], width: int, signals: list[str]) -> None:
    index = WindowIndex()
    genes = [{"type": "Gene", "id": "g"}, {"type": "Gene", "id": "h"}]
    for n, line in enumerate(lines, 1):
        index.push(line)
        if len(index) > width:
            index.pop()
        want = evolver_advice(lines[max(0, n - width) : n], signals, genes, False, NOW_MS, None)
        assert index.advice(signals, genes, False, NOW_MS) == want, n


def test_a_key_takes_the_similarity_of_its_first_similar_event_in_the_window() -> None:
    # Key K is carried by two signal lists, both similar to the query but not equally:
    # the older event's similarity counts until it leaves the window.
    lines = [
        _line("K", ["a", "b"], "g", "success", "2026-02-27T00:00:00Z"),
        _line("K", ["a"], "g", "success", "2026-02-27T00:00:00Z"),
        _line("K", ["a", "b"], "g", "success", "2026-02-28T00:00:00Z"),
        _line("x", ["x"], "h", "success", "2026-02-28T00:00:00Z"),
        _line("x", ["x"], "h", "success", "2026-02-28T00:00:00Z"),
    ]
    _slide(lines, 3, ["a"])


def test_a_first_time_that_does_not_parse_sticks_until_it_leaves_the_window() -> None:
    lines = [
        _line("a", ["a"], "g", "success", "yesterday"),
        _line("a", ["a"], "g", "success", "2025-11-01T00:00:00Z"),
        _line("a", ["a"], "g", "success", "2025-10-01T00:00:00Z"),
        _line("b", ["b"], "h", "failed", 1772323200000),
        _line("b", ["b"], "h", "success", "2025-12-01T00:00:00Z"),
        _line("a", ["a"], "g", "failed", "2025-09-01T00:00:00Z"),
    ]
    _slide(lines, 2, ["a"])
    _slide(lines, 3, ["b"])
