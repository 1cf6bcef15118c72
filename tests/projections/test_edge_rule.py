"""One edge rule, two folds: advice's edge statistics equal the projections' edges.

The reference and why both folds exist: :mod:`evolog.projections.edges`. For random logs
(:func:`tests.strategies.outcome_streams`: outcomes with and without their own key and gene,
late and repeated ones, equal, out-of-order and far times, sealed and tail events,
hypotheses and retractions), advice's state — folded incrementally, saved and reloaded —
and the projections' checkpoint give, for every (signal key, gene) edge and every gene:

* the same edges and genes, and exactly the same counts and first/newest times;
* the same per-event decayed sums ``success_w``/``fail_w`` at any ``now``, and so the same
  Laplace-smoothed ``p``, within ``TOLERANCE · (outcomes + 1) · w``, ``w`` being the weight
  an outcome at the edge's newest time has at ``now``. Both are ``Σ 2^(-age_i/h)``: the
  projections quantise each term to 53 bits and sum integers exactly, truncating buckets
  shifted to the newest one (at most 2^-52 each, 9 of them) and dropping terms more than 64
  half-lives old (below 2^-64 each); advice adds doubles in log order (a few ulp per
  outcome). Both errors are far below 2^-40 of one fresh outcome per outcome.
"""

from __future__ import annotations

import datetime
import tempfile
from typing import Any
from unittest import mock

import evolog.advice._state as advice_state
import evolog.eventlog.wal._prepare as prepare
import pytest
from conftest import examples
from evolog.advice import AdviceEngine
from evolog.advice._forgotten import ForgottenIds
from evolog.advice._reader import AttemptFinder
from evolog.eventlog import TS_MAX, Attempt, Event, EventLog, Outcome
from evolog.projections._api import Projections
from evolog.projections.edges._eval import EdgeParams
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import EDGE_T0, outcome_streams

DAY_US = 86_400_000_000
TOLERANCE = 2.0**-40
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)

Stats = dict[Any, tuple[int, int, int, int, int, float, float]]


def _advice(engine: AdviceEngine, now: int) -> tuple[Stats, Stats]:
    state = engine.state()
    edges: Stats = {}
    genes: Stats = {}
    for gid, gene in enumerate(state.genes):
        for kid, key in enumerate(state.catalog.keys):
            stat = state.edges.get(kid, gid)
            if stat is not None:
                edges[(key, gene)] = _row(stat, *stat.decayed(now, state.edge_half_life_us))
        stat = state.gene_stats.get(0, gid)
        if stat is not None:
            genes[gene] = _row(stat, *stat.decayed(now, state.gene_half_life_us))
    return edges, genes


def _row(stat: Any, s: float, f: float) -> tuple[int, int, int, int, int, float, float]:
    return (stat.success, stat.fail, stat.outcomes, stat.first_t, stat.newest_t, s, f)


def _projections(proj: Projections, now: int) -> tuple[Stats, Stats]:
    def us(t: datetime.datetime) -> int:
        return (t - _EPOCH) // datetime.timedelta(microseconds=1)

    def row(r: dict[str, Any]) -> tuple[int, int, int, int, int, float, float]:
        return (
            r["success"],
            r["fail"],
            r["outcomes"],
            us(r["first_ts"]),
            us(r["newest_ts"]),
            r["success_w"],
            r["fail_w"],
        )

    edges = proj.edges(now=now, mode="per_event").to_pylist()
    genes = proj.gene_priors(now=now, mode="per_event").to_pylist()
    return (
        {(r["signal_key"], r["gene"]): row(r) for r in edges},
        {r["gene"]: row(r) for r in genes},
    )


def _assert_same(advice: Stats, proj: Stats, now: int, half_life_days: float) -> None:
    assert sorted(advice) == sorted(proj)
    for name, a in advice.items():
        p = proj[name]
        assert a[:5] == p[:5], name  # counts and times: exactly
        w = 2.0 ** (-max(0, now - a[4]) / (half_life_days * DAY_US))
        tol = max(TOLERANCE * (a[2] + 1) * w, 1e-300)
        (sa, fa), (sp, fp) = a[5:], p[5:]
        assert abs(sa - sp) <= tol and abs(fa - fp) <= tol, (name, a, p)
        # The Laplace smoothing both apply (edges' p; the evolog policy's prior).
        assert abs((sa + 1) / (sa + fa + 2) - (sp + 1) / (sp + fp + 2)) <= tol, name


def _compare(log: EventLog, now: int, advice: AdviceEngine, proj: Projections) -> None:
    params = EdgeParams()
    a_edges, a_genes = _advice(advice, now)
    p_edges, p_genes = _projections(proj, now)
    _assert_same(a_edges, p_edges, now, params.half_life_days)
    _assert_same(a_genes, p_genes, now, params.gene_half_life_days)


def test_both_folds_use_the_same_half_lives() -> None:
    params, state = EdgeParams(), advice_state.AdviceState()
    assert state.edge_half_life_us == params.half_lives.edge_us
    assert state.gene_half_life_us == params.half_lives.gene_us


@settings(max_examples=examples(15))
@given(
    outcome_streams(),
    st.one_of(
        st.integers(-50, 500).map(lambda d: EDGE_T0 + d * DAY_US),
        st.sampled_from([1, TS_MAX]),
    ),
)
def test_advice_edges_equal_projection_edges(
    stream: tuple[list[Event], set[int], set[int]], now: int
) -> None:
    events, seal_after, fold_after = stream
    with (
        tempfile.TemporaryDirectory() as tmp,
        EventLog(f"{tmp}/s", create=True, durability="none", auto_seal="off") as log,
        # Few closed attempts held, so that late outcomes of forgotten attempts occur.
        mock.patch.object(advice_state, "RECENT_CLOSED", 1),
    ):
        advice, proj = AdviceEngine(log), Projections(log)
        for i, event in enumerate(events):
            log.append(event)
            if i in seal_after:
                log.seal()
            if i in fold_after:  # both fold this prefix: the rest comes incrementally
                advice.state()
                advice.save()
                proj.refresh()
        _compare(log, now, advice, proj)
        _compare(log, now, AdviceEngine(log), proj)  # from the saved cache
        _compare(log, now, AdviceEngine(log, use_cache=False), proj)


def test_late_outcome_of_a_long_closed_attempt_counts_for_its_edge(tmp_path: Any) -> None:
    """Regression: advice held only the last 4096 closed attempts, so a late outcome naming
    only its action id, after 4096 other attempts had closed, lost its key and gene there
    (and counted for nothing) while the projections counted it for its attempt's edge."""
    events: list[Event] = [
        Attempt(id="first", ts=EDGE_T0, action_id="first", key="k", gene="g"),
        Outcome(id="first-o", ts=EDGE_T0 + 1, action_id="first", status="success"),
    ]
    for i in range(advice_state.RECENT_CLOSED):
        t = EDGE_T0 + 10 + i
        events.append(Attempt(id=f"a{i}", ts=t, action_id=f"a{i}", key="other", gene="h"))
        events.append(Outcome(id=f"o{i}", ts=t, action_id=f"a{i}", status="failed"))
    events.append(Outcome(id="late", ts=EDGE_T0 + DAY_US, action_id="first", status="success"))
    now = EDGE_T0 + 2 * DAY_US
    with EventLog(tmp_path / "s", create=True, durability="none", auto_seal="off") as log:
        log.append_many(events[: len(events) // 2])
        log.seal()
        log.append_many(events[len(events) // 2 : -1])
        AdviceEngine(log).save()  # the late outcome comes after a saved state
        log.append(events[-1])
        for advice in (AdviceEngine(log, use_cache=False), AdviceEngine(log)):
            edges, _ = _advice(advice, now)
            assert edges[("k", "g")][:3] == (2, 0, 2)
            _compare(log, now, advice, Projections(log, cache=False))


def test_outcomes_without_an_attempt_never_scan_the_log(tmp_path: Any) -> None:
    """Only an action id whose attempt the state let go can send a fold to the log."""
    events: list[Event] = []
    for i in range(3):
        events.append(Attempt(id=f"a{i}", ts=EDGE_T0 + i, action_id=f"a{i}", gene="g"))
        events.append(Outcome(id=f"o{i}", ts=EDGE_T0 + i, action_id=f"a{i}", status="success"))
    events += [Outcome(id=f"m{i}", ts=EDGE_T0, action_id=f"m{i}", delta=1.0) for i in range(5)]
    events.append(Outcome(id="late", ts=EDGE_T0 + 9, action_id="a0", status="failed"))
    with (
        EventLog(tmp_path / "s", create=True, durability="none") as log,
        mock.patch.object(advice_state, "RECENT_CLOSED", 1),
        mock.patch.object(AttemptFinder, "__call__", autospec=True) as finder,
    ):
        finder.return_value = None
        log.append_many(events)
        AdviceEngine(log, use_cache=False).state()
    assert [call.args[1:] for call in finder.call_args_list] == [("a0", len(events))]


@pytest.mark.parametrize("far", [TS_MAX + 5, 2**63 - 1, -1, -(2**63) + 1])
def test_times_outside_the_log_range_count_as_the_nearest_one(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, far: int
) -> None:
    """Regression: an older log can hold a time the log now refuses; the projections count
    such an outcome as of the nearest accepted time, advice counted it at the raw time (its
    first and newest times, and the decay origin, differed)."""
    monkeypatch.setattr(prepare, "_envelope_ok", lambda event: True)
    monkeypatch.setattr(prepare, "_check_envelope", lambda event, where: None)
    now = EDGE_T0 + 5
    with EventLog(tmp_path / "s", create=True, durability="none", auto_seal="off") as log:
        log.append_many(
            [
                Attempt(action_id="a1", key="k", gene="g", ts=EDGE_T0 + 1),
                Outcome(action_id="a1", key="k", gene="g", status="success", ts=far),
                Attempt(action_id="a2", key="k", gene="g", ts=far),
                Outcome(action_id="a2", status="failed", ts=EDGE_T0 + 3),
            ]
        )
        _compare(log, now, AdviceEngine(log, use_cache=False), Projections(log, cache=False))
        log.seal()
        _compare(log, now, AdviceEngine(log, use_cache=False), Projections(log, cache=False))


def test_forgotten_ids_survive_saving() -> None:
    ids = ForgottenIds()
    for i in range(300):
        ids.add(f"a{i}")
    again = ForgottenIds(ids.to_bytes())
    again.add("late")
    saved = ForgottenIds(again.to_bytes())
    assert all(f"a{i}" in saved for i in range(300)) and "late" in saved
    assert "never" not in saved and "never" not in ForgottenIds()
