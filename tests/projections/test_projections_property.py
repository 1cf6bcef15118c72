"""Property tests: incremental refresh == full rebuild, exactly; and the edge semantics.

For random histories (outcomes with and without key or gene, attempts, steps, signals, far
apart and out-of-order timestamps), random refresh and seal points and two parameter sets,
the checkpoint refreshed step by step gives bit-identical tables to a rebuild from the log,
deleting it changes no answer, and an ``as_of`` query equals what was answered back then.
A pure-Python model checks the numbers themselves.

Strategies (local to this file): :func:`histories` draws ``(events, refresh_at, seal_at)``.
"""

from __future__ import annotations

import tempfile
from collections import defaultdict
from typing import Any
from unittest import mock

import pyarrow as pa
import pytest
from evolog.eventlog import Attempt, Event, EventLog, Outcome, Signal, Step
from evolog.projections._api import Projections
from evolog.projections.edges import _state as _edgestate
from evolog.projections.edges._eval import EdgeParams
from hypothesis import given, settings
from hypothesis import strategies as st

DAY = 86_400_000_000
T0 = 1_767_225_600_000_000
PARAMS = [EdgeParams(), EdgeParams(half_life_days=0.01, gene_half_life_days=0.025)]
KEYS = ["k1", "k2", ""]
GENES = ["g1", "g2", None, ""]
ACTIONS = ["a1", "a2", "a3", ""]
STATUSES = ["success", "failed", "success", "partial", "unknown"]  # the log refuses ""


@st.composite
def histories(draw: Any, max_size: int = 30) -> tuple[list[Event], set[int], set[int]]:
    """Events with a shared time unit (1 µs to 11 days, so spans reach hundreds of
    half-lives), plus the indexes after which to refresh and to seal."""
    unit = draw(st.sampled_from([1, 37_000_000, DAY // 3, 11 * DAY]))
    ts = st.integers(-400, 400).map(lambda k: T0 + k * unit)
    key, gene, action = st.sampled_from(KEYS), st.sampled_from(GENES), st.sampled_from(ACTIONS)
    outcome = st.builds(
        Outcome, key=key, gene=gene, action_id=action, ts=ts, status=st.sampled_from(STATUSES)
    ).filter(lambda o: o.action_id or o.key or o.gene)  # the log refuses one about nothing
    event = st.one_of(
        outcome,
        outcome,
        st.builds(Attempt, key=key, gene=gene, action_id=action, ts=ts),
        st.builds(Step, action_id=action, ts=ts, index=st.integers(0, 3)),
        st.builds(Signal, key=key, ts=ts),
    )
    events = draw(st.lists(event, min_size=1, max_size=max_size))
    indexes = st.integers(0, len(events) - 1)
    return events, draw(st.sets(indexes, max_size=6)), draw(st.sets(indexes, max_size=4))


def _answers(
    proj: Projections,
    now: int,
    as_of: int | None = None,
    modes: tuple[str, ...] = ("newest", "per_event"),
) -> list[pa.Table]:
    out = []
    for mode in modes:
        out.append(proj.edges(now=now, mode=mode, as_of=as_of))  # type: ignore[arg-type]
        out.append(proj.gene_priors(now=now, mode=mode, as_of=as_of))  # type: ignore[arg-type]
    return out


def _same(a: list[pa.Table], b: list[pa.Table]) -> bool:
    return all(x.equals(y) for x, y in zip(a, b, strict=True))


def _check_incremental(
    events: list[Event], refresh_at: set[int], seal_at: set[int], params: EdgeParams
) -> None:
    now = T0 + 5 * DAY
    with (
        tempfile.TemporaryDirectory() as tmp,
        EventLog(f"{tmp}/s", create=True, durability="none", auto_seal="off") as log,
        mock.patch.object(_edgestate, "FIRST_WINDOW", 2),
    ):  # many backward windows
        proj = Projections(log, params=params)
        seen = []
        for i, event in enumerate(events):
            log.append(event)
            if i in seal_at:
                log.seal()
            if i in refresh_at:
                seen.append((i + 1, _answers(proj, now, modes=("per_event",))))
        incremental = _answers(proj, now)
        rebuilt = _answers(Projections(log, params=params, cache=False), now)
        assert _same(incremental, rebuilt)
        proj.clear_cache()
        assert _same(_answers(proj, now), rebuilt)
        for head, then in seen:
            assert _same(_answers(proj, now, as_of=head, modes=("per_event",)), then), head


@settings(max_examples=15)
@given(histories(), st.sampled_from(PARAMS))
def test_incremental_equals_rebuild(
    history: tuple[list[Event], set[int], set[int]], params: EdgeParams
) -> None:
    _check_incremental(*history, params)


@pytest.mark.long
@settings(max_examples=400)
@given(histories(max_size=80), st.sampled_from(PARAMS))
def test_incremental_equals_rebuild_long(
    history: tuple[list[Event], set[int], set[int]], params: EdgeParams
) -> None:
    _check_incremental(*history, params)


# -- a reference model of the semantics ------------------------------------------------------
def _model(events: list[Event], now: int, hl_days: float) -> dict[tuple[str, str], dict[str, Any]]:
    """Edges by the documented rules, one outcome at a time, in plain Python."""
    attempts: dict[str, Attempt] = {}
    edges: dict[tuple[str, str], dict[str, Any]] = defaultdict(
        lambda: {"s": 0, "f": 0, "n": 0, "ts": []}
    )
    for e in events:
        if isinstance(e, Attempt):
            attempts[e.action_id] = e  # the newest attempt before later outcomes
        if not isinstance(e, Outcome):
            continue
        a = attempts.get(e.action_id)
        key = e.key or (a.key if a else "") or "(none)"
        gene = e.gene or (a.gene if a else None)
        if not gene:
            continue
        edge = edges[(key, gene)]
        edge["n"] += 1
        edge["s"] += e.status == "success"
        edge["f"] += e.status == "failed"
        edge["ts"].append((e.ts, e.status))
    for edge in edges.values():
        newest = max(t for t, _ in edge["ts"])
        at, hl = max(now, newest), hl_days * DAY
        sw = sum(0.5 ** ((at - t) / hl) for t, s in edge["ts"] if s == "success")
        fw = sum(0.5 ** ((at - t) / hl) for t, s in edge["ts"] if s == "failed")
        edge["p_event"] = (sw + 1) / (sw + fw + 2)
        edge["newest"] = newest
        edge["weight"] = 1.0 if now <= newest else 0.5 ** ((now - newest) / hl)
    return edges


@settings(max_examples=25)
@given(histories(max_size=25), st.sampled_from(PARAMS), st.integers(-50, 50))
def test_edges_follow_the_reference_model(
    history: tuple[list[Event], set[int], set[int]], params: EdgeParams, days: int
) -> None:
    events = history[0]
    now = T0 + days * DAY
    with (
        tempfile.TemporaryDirectory() as tmp,
        EventLog(f"{tmp}/s", create=True, durability="none", auto_seal="off") as log,
    ):
        log.append_many(events)
        stored = list(log.replay())  # with what the log fills in (an attempt's action_id)
        proj = Projections(log, params=params, cache=False)
        newest = proj.edges(now=now).to_pylist()
        per_event = proj.edges(now=now, mode="per_event").to_pylist()
    model = _model(stored, now, params.half_life_days)
    assert sorted(model) == [(r["signal_key"], r["gene"]) for r in newest]
    for row, row_w in zip(newest, per_event, strict=True):
        m = model[(row["signal_key"], row["gene"])]
        assert (row["success"], row["fail"], row["outcomes"]) == (m["s"], m["f"], m["n"])
        assert row["newest_ts"].timestamp() * 1e6 == pytest.approx(m["newest"], abs=1)
        p = (m["s"] + 1) / (m["s"] + m["f"] + 2)
        assert row["value"] == pytest.approx(p * m["weight"], rel=1e-12, abs=1e-300)
        assert row_w["p"] == pytest.approx(m["p_event"], rel=1e-12)
