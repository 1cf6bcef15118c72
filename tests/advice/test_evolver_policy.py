"""Tests for the reproduction of evolver's ``getMemoryAdvice`` (reference examples and rules)."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from evolog.advice.evolver._policy import EvolverAdvice, evolver_advice, read_evolver_jsonl_tail
from evolog.eventlog.schema._signalkey import js_pow, parse_iso_ms
from hypothesis import given, settings
from hypothesis import strategies as st

EXAMPLES = Path(__file__).resolve().parents[1] / "data" / "evolver-examples"
EXAMPLE_NAMES = [
    "01_stale_success_banned",
    "02_jaccard_one_third",
    "03_neighbour_successes_banned",
    "04_unknown_status_edge",
    "05_empty_graph_and_untyped_genes",
    "06_weak_edge_vs_prior_only",
    "07_prior_ban",
    "08_tofixed_tie",
    "09_tail_window",
]
NOW = "2026-03-01T00:00:00.000Z"
NOW_MS = parse_iso_ms(NOW)
DAY_MS = 86_400_000


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _gene(gene_id: object, type_: str = "Gene") -> dict[str, object]:
    return {"type": type_, "id": gene_id, "category": "repair"}


def _outcome(
    key: str | None, signals: list[str], gene_id: object, status: str, ts: str = NOW
) -> dict[str, object]:
    event: dict[str, object] = {"type": "MemoryGraphEvent", "kind": "outcome", "ts": ts}
    if key is not None:
        event["signal"] = {"key": key, "signals": signals}
    event["gene"] = {"id": gene_id}
    event["outcome"] = {"status": status}
    return event


def _days_ago(days: float) -> str:
    seconds = (NOW_MS - days * DAY_MS) / 1000
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


# -- the real module's answers ---------------------------------------------------------------


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_reference_example(name: str) -> None:
    events = read_evolver_jsonl_tail(EXAMPLES / f"{name}.jsonl")
    queries = _json(EXAMPLES / f"{name}.query.json")
    expected = _json(EXAMPLES / f"{name}.expected.json")["results"]
    assert len(queries) == len(expected) >= 1
    for query, want in zip(queries, expected, strict=True):
        advice = evolver_advice(
            events,
            query["signals"],
            query["genes"],
            query["driftEnabled"],
            now_ms=parse_iso_ms(want["now"]),
        )
        got = advice.to_evolver_json()
        assert got["currentSignalKey"] == want["currentSignalKey"]
        assert got["preferredGeneId"] == want["preferredGeneId"]
        assert got["bannedGeneIds"] == want["bannedGeneIdsInsertionOrder"]
        assert sorted(got["bannedGeneIds"]) == want["bannedGeneIds"]
        assert got["explanation"] == want["explanation"]
        _assert_scored(advice, want["scored"])


def _assert_scored(advice: EvolverAdvice, want: list[dict[str, Any]]) -> None:
    assert [s.gene_id for s in advice.scored] == [w["geneId"] for w in want]
    for got, exp in zip(advice.scored, want, strict=True):
        for field in ("score", "attempts", "prior"):
            assert math.isclose(getattr(got, field), exp[field], rel_tol=1e-12, abs_tol=0.0)
        assert got.banned == exp["banned"]


def test_tail_window_drops_old_history() -> None:
    assert len((EXAMPLES / "09_tail_window.jsonl").read_text().splitlines()) == 2005
    events = read_evolver_jsonl_tail(EXAMPLES / "09_tail_window.jsonl")
    assert len(events) == 2000
    assert all(e["kind"] == "signal" for e in events)


# -- reading -------------------------------------------------------------------------------------


def test_read_tail_line_handling() -> None:
    text = '\ufeff{"a":1}\r\n\n   \nnot json\nnull\n0\nfalse\n""\n[]\n{}\nNaN\n{"b":2}'
    assert read_evolver_jsonl_tail([text]) == [{"a": 1}, [], {}, {"b": 2}]


def test_read_tail_windows_lines_before_parsing() -> None:
    lines = ['{"a":1}\n', "\n", "  \n", '{"b":2}\n', "broken\n", "null\n"]
    assert read_evolver_jsonl_tail(lines, limit_lines=3) == [{"b": 2}]
    assert read_evolver_jsonl_tail(lines, limit_lines=4) == [{"a": 1}, {"b": 2}]


def test_read_tail_file(tmp_path: Path) -> None:
    assert read_evolver_jsonl_tail(tmp_path / "missing.jsonl") == []
    path = tmp_path / "graph.jsonl"
    path.write_bytes(b'{"a":1}\n\xff\n{"b":2}\n')
    assert read_evolver_jsonl_tail(str(path), limit_lines=2) == [{"b": 2}]
    with pytest.raises(ValueError):
        read_evolver_jsonl_tail(path, limit_lines=0)


# -- scoring rules -------------------------------------------------------------------------------


def test_no_typed_genes() -> None:
    genes = [_gene("a", "gene"), {"id": "b"}, _gene(""), _gene(0), "Gene", None]
    advice = evolver_advice([], ["x"], genes, False, NOW_MS)
    assert advice.preferred_gene_id is None
    assert advice.scored == () and advice.banned_gene_ids == () and advice.explanation == ()


def test_drift_is_javascript_truthiness() -> None:
    events = [_outcome("x", ["x"], "g", "failed") for _ in range(4)]
    strict = evolver_advice(events, ["x"], [_gene("g")], False, NOW_MS)
    drifting = evolver_advice(events, ["x"], [_gene("g")], "false", NOW_MS)
    assert strict.banned_gene_ids == ("g",)
    assert drifting.banned_gene_ids == ()
    assert drifting.explanation[-1] == "random_drift:enabled"


def test_bans_keep_gene_order_and_explanation_lists_six() -> None:
    ids = [f"g{i}" for i in range(7)][::-1]
    events = [_outcome("x", ["x"], g, "failed") for g in ids for _ in range(4)]
    advice = evolver_advice(events, ["x"], [_gene(g) for g in ids], False, NOW_MS)
    assert advice.banned_gene_ids == tuple(ids)
    assert advice.preferred_gene_id == "g6"  # equal scores keep the genes' order
    assert advice.explanation[:2] == ("memory_prefer:g6", "memory_ban:" + ",".join(ids[:6]))


def test_newest_timestamp_wins_not_file_order() -> None:
    newer, older = _days_ago(1), _days_ago(10)
    forward = [
        _outcome("x", ["x"], "g", "success", newer),
        _outcome("x", ["x"], "g", "success", older),
    ]
    backward = forward[::-1]
    one = evolver_advice(forward, ["x"], [_gene("g")], False, NOW_MS).scored[0]
    two = evolver_advice(backward, ["x"], [_gene("g")], False, NOW_MS).scored[0]
    assert one == two
    assert one.best == 0.75 * js_pow(0.5, 1 / 30)


def test_unparseable_first_timestamp_sticks() -> None:
    events = [
        _outcome("x", ["x"], "g", "success", "yesterday"),
        _outcome("x", ["x"], "g", "success", _days_ago(100)),
    ]
    scored = evolver_advice(events, ["x"], [_gene("g")], False, NOW_MS).scored[0]
    assert scored.best == 0.75 and scored.prior == 0.75  # never decayed


def test_future_timestamp_does_not_decay() -> None:
    events = [_outcome("x", ["x"], "g", "success", "2030-01-01T00:00:00Z")]
    assert evolver_advice(events, ["x"], [_gene("g")], False, NOW_MS).scored[0].best == 2 / 3


def test_any_event_kind_adds_a_candidate_key_and_keys_are_retried() -> None:
    history = _outcome("K", [], "g", "success")  # its own raw signals do not match
    later = {"type": "MemoryGraphEvent", "kind": "signal", "signal": {"key": "K", "signals": ["a"]}}
    without = evolver_advice([history], ["a"], [_gene("g")], False, NOW_MS)
    with_snapshot = evolver_advice([history, later], ["a"], [_gene("g")], False, NOW_MS)
    assert without.scored[0].attempts == 0
    assert with_snapshot.scored[0].attempts == 1


def test_outcome_without_signal_is_keyed_none() -> None:
    events = [_outcome(None, [], "g", "success")]
    assert evolver_advice(events, [], [_gene("g")], False, NOW_MS).scored[0].attempts == 1
    assert evolver_advice(events, ["a"], [_gene("g")], False, NOW_MS).scored[0].attempts == 0


def test_numeric_gene_id_matches_string_history() -> None:
    events = [_outcome("x", ["x"], "7", "success")]
    advice = evolver_advice(events, ["x"], [_gene(7), _gene(7.0)], False, NOW_MS)
    assert advice.preferred_gene_id == 7
    assert len(advice.scored) == 1  # 7 and 7.0 are one Map key in JavaScript
    assert advice.to_evolver_json()["explanation"][0] == "memory_prefer:7"


def test_window_keeps_trailing_events() -> None:
    events = [_outcome("x", ["x"], "g", "success"), _outcome("y", ["y"], "h", "success")]
    advice = evolver_advice(events, ["x"], [_gene("g")], False, NOW_MS, window=1)
    assert advice.scored[0].attempts == 0 and advice.scored[0].prior == 0
    with pytest.raises(ValueError):
        evolver_advice(events, ["x"], [_gene("g")], False, NOW_MS, window=0)


def test_non_list_inputs() -> None:
    advice = evolver_advice([], "x", "genes", None, NOW_MS)
    assert advice.current_signal_key == "(none)"
    assert advice.to_evolver_json() == {
        "currentSignalKey": "(none)",
        "preferredGeneId": None,
        "bannedGeneIds": [],
        "explanation": [],
    }


_STATUS = st.sampled_from(["success", "failed", "partial", ""])
_KEYS = st.sampled_from(["a", "b", "a|b", "c"])
_GENES = st.sampled_from(["g0", "g1", "g2"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_KEYS, _GENES, _STATUS, st.integers(0, 200)), max_size=30), st.booleans())
def test_ranking_invariants(rows: list[tuple[str, str, str, int]], drift: bool) -> None:
    events = [_outcome(k, k.split("|"), g, s, _days_ago(d)) for k, g, s, d in rows]
    advice = evolver_advice(events, ["a"], [_gene(g) for g in ("g2", "g0", "g1")], drift, NOW_MS)
    scores = [s.score for s in advice.scored]
    assert scores == sorted(scores, reverse=True)
    assert advice.preferred_gene_id == advice.scored[0].gene_id
    assert set(advice.banned_gene_ids) == {s.gene_id for s in advice.scored if s.banned}
    assert not (drift and advice.banned_gene_ids)
