"""The ``evolog`` policy: each evolver defect (spec §11) shown under ``evolver``, absent here."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from evolog.advice import AdviceEngine, EvologParams, InvalidInputError, import_evolver
from evolog.eventlog import EventLog, Outcome
from evolog.eventlog.schema._signalkey import parse_iso_ms

EXAMPLES = Path(__file__).resolve().parents[1] / "data" / "evolver-examples"
NOW = "2026-03-01T00:00:00.000Z"
NOW_US = int(parse_iso_ms(NOW)) * 1000
DAY_US = 86_400_000_000


def gene(gid: str) -> dict[str, str]:
    return {"type": "Gene", "id": gid, "category": "repair"}


GENES = [gene("gene_a"), gene("gene_b")]


@pytest.fixture
def log(tmp_path: Path) -> Any:
    with EventLog(tmp_path / "store", create=True, durability="none") as lg:
        yield lg


def _outcomes(log: EventLog, rows: list[tuple[list[str], str, str, float]]) -> None:
    """Append outcomes (signals, gene, status, age in days)."""
    log.append_many(
        Outcome(ts=NOW_US - int(days * DAY_US), signals=sigs, gene=g, status=status)
        for sigs, g, status, days in rows
    )


def _both(log: EventLog, signals: list[str], genes: list[Any], drift: bool = False) -> Any:
    engine = AdviceEngine(log, use_cache=False)
    ev = engine.advise(signals, genes, policy="evolver", drift=drift, now=NOW).to_json()
    ours = engine.advise(signals, genes, drift=drift, now=NOW).to_json()
    return ev, ours


def _example(log: EventLog, name: str, i: int = 0) -> tuple[Any, Any]:
    import_evolver(log, EXAMPLES / f"{name}.jsonl")
    q = json.loads((EXAMPLES / f"{name}.query.json").read_text())[i]
    return _both(log, q["signals"], q["genes"], q["driftEnabled"])


def _pick(answer: dict[str, Any]) -> str | None:
    """What an agent following the answer uses: the preferred gene, else the first to explore."""
    pick = answer["preferredGeneId"] or (answer["explore"] or [None])[0]
    assert pick is None or isinstance(pick, str)
    return pick


def _scored(answer: dict[str, Any], gid: str) -> dict[str, Any]:
    return next(s for s in answer["scored"] if s["geneId"] == gid)


# -- §11.8: only the last 2000 lines count ------------------------------------------------


def test_all_history_counts_not_a_window(log: EventLog) -> None:
    ev, ours = _example(log, "09_tail_window")
    assert ev["preferredGeneId"] == "gene_b"  # 5 successes of gene_a fell out of the window
    assert _scored(ev, "gene_a")["attempts"] == 0
    assert ours["preferredGeneId"] == "gene_a" and ours["status"] == "prefer"
    assert _scored(ours, "gene_a")["outcomes"] == 5


# -- §11.4: decay keys on the newest outcome only ---------------------------------------------


def test_decay_is_per_event(log: EventLog) -> None:
    old = [(["x"], "gene_a", "success", 200.0)] * 10
    _outcomes(log, [*old, (["x"], "gene_a", "failed", 0.0)])
    ev, ours = _both(log, ["x"], [gene("gene_a")])
    # evolver: one fresh failure makes ten 200-day-old successes current again.
    assert math.isclose(_scored(ev, "gene_a")["best"], 11 / 13, rel_tol=1e-12)
    a = _scored(ours, "gene_a")
    assert math.isclose(a["success"], 10 * 0.5 ** (200 / 30), rel_tol=1e-9)
    assert a["fail"] == 1.0 and a["mean"] < 0.5


# -- §11.1: a banned gene can be preferred ------------------------------------------------


@pytest.mark.parametrize(
    ("name", "i"),
    [("01_stale_success_banned", 0), ("03_neighbour_successes_banned", 0), ("07_prior_ban", 0)],
)
def test_banned_gene_is_never_preferred(log: EventLog, name: str, i: int) -> None:
    ev, ours = _example(log, name, i)
    assert ev["preferredGeneId"] in ev["bannedGeneIds"]
    assert ours["preferredGeneId"] not in ours["bannedGeneIds"]


def test_prior_ban_holds_and_the_other_gene_is_explored(log: EventLog) -> None:
    _, ours = _example(log, "07_prior_ban")
    assert (
        ours["bannedGeneIds"] == ["gene_a"]
        and _scored(ours, "gene_a")["ban_reason"] == "poor_prior"
    )
    assert ours["preferredGeneId"] is None and ours["explore"] == ["gene_b"]


def test_all_banned_prefers_nothing(log: EventLog) -> None:
    _outcomes(log, [(["x"], g, "failed", 0.5) for g in ("gene_a", "gene_b") for _ in range(6)])
    ev, ours = _both(log, ["x"], GENES)
    assert ev["preferredGeneId"] == "gene_a" and ev["bannedGeneIds"] == ["gene_a", "gene_b"]
    assert ours["status"] == "all_banned" and ours["preferredGeneId"] is None
    assert ours["bannedGeneIds"] == ["gene_a", "gene_b"]
    assert ours["explanation"] == ["memory_ban:gene_a,gene_b", "all_banned"]


# -- §11.2: with no evidence the first typed gene wins ------------------------------------------


@pytest.mark.parametrize(
    ("name", "evolver_pick"),
    [("05_empty_graph_and_untyped_genes", "gene_first"), ("04_unknown_status_edge", "gene_b")],
)
def test_no_evidence_says_explore(log: EventLog, name: str, evolver_pick: str) -> None:
    ev, ours = _example(log, name)
    assert ev["preferredGeneId"] == evolver_pick  # picked on no success or failure at all
    assert ours["status"] == "explore" and ours["preferredGeneId"] is None
    assert "explore:no_evidence" in ours["explanation"]
    assert ours["explore"]  # the genes to try, instead of a pick by list position


def test_explore_lists_untried_genes_in_order(log: EventLog) -> None:
    ev, ours = _both(log, ["x"], [gene("g3"), gene("g1"), gene("g2")])
    assert ev["preferredGeneId"] == "g3"  # list order
    assert ours["explore"] == ["g3", "g1", "g2"] and ours["preferredGeneId"] is None


# -- §11.4/§11.5: staleness and neighbour similarity treated as failure ---------------------


@pytest.mark.parametrize("name", ["01_stale_success_banned", "03_neighbour_successes_banned"])
def test_bans_need_evidence_of_failure(log: EventLog, name: str) -> None:
    ev, ours = _example(log, name)
    assert ev["bannedGeneIds"] == ["gene_a"]  # only successes, yet banned
    assert ours["bannedGeneIds"] == [] and _pick(ours) == "gene_a"
    assert _scored(ours, "gene_a")["mean"] > 0.5


def test_fresh_failures_are_banned(log: EventLog) -> None:
    _outcomes(log, [(["x"], "gene_a", "failed", 1.0)] * 5 + [(["x"], "gene_b", "success", 1.0)])
    _, ours = _both(log, ["x"], GENES)
    assert (
        ours["bannedGeneIds"] == ["gene_a"] and _scored(ours, "gene_a")["ban_reason"] == "failures"
    )
    assert _pick(ours) == "gene_b"  # one success: explored, not preferred
    _, drifting = _both(log, ["x"], GENES, drift=True)
    assert drifting["bannedGeneIds"] == [] and drifting["explanation"][-1] == "random_drift:enabled"


def test_old_failures_age_out_of_a_ban(log: EventLog) -> None:
    _outcomes(log, [(["x"], "gene_a", "failed", 365.0)] * 5)
    _, ours = _both(log, ["x"], GENES)
    assert ours["bannedGeneIds"] == []


# -- §11.6: attempts and best come from different keys ------------------------------------------


def test_attempts_and_estimate_come_from_the_same_evidence(log: EventLog) -> None:
    _outcomes(
        log,
        [(["a", "b"], "gene_a", "success", 0.0)] + [(["a", "b", "c"], "gene_a", "failed", 0.0)] * 9,
    )
    ev, ours = _both(log, ["a", "b"], [gene("gene_a")])
    e = _scored(ev, "gene_a")
    assert e["attempts"] == 9 and math.isclose(e["best"], 2 / 3)  # 9 from {a,b,c}, best from {a,b}
    a = _scored(ours, "gene_a")
    sims = {x["key"]: x["sim"] for x in a["evidence"]}
    assert sims == {"a|b": 1.0, "a|b|c": 2 / 3}
    s = sum(x["sim"] * x["weighted_success"] for x in a["evidence"])
    f = sum(x["sim"] * x["weighted_fail"] for x in a["evidence"])
    assert (a["success"], a["fail"]) == (s, f) and a["attempts"] == s + f == 7.0
    assert math.isclose(a["mean"], (s + 2 * a["prior"]) / (s + f + 2), rel_tol=1e-12)


# -- the formulas, pinned ---------------------------------------------------------------------


def test_score_formula(log: EventLog) -> None:
    _outcomes(log, [(["x"], "gene_a", "success", 30.0), (["x"], "gene_a", "failed", 0.0)])
    _, ours = _both(log, ["x"], [gene("gene_a")])
    a = _scored(ours, "gene_a")
    s, f = 0.5, 1.0  # one half-life (30 days) old success, a fresh failure
    sg = 0.5 ** (30 / 45)
    prior = (sg + 1) / (sg + 1 + 2)
    mean = (s + 2 * prior) / (s + f + 2)
    sd = math.sqrt(mean * (1 - mean) / (s + f + 3))
    w = min(1.0, (s + f) / (2 * 1))  # local evidence per gene asked about, over k = 2
    for name, want in (
        ("success", s),
        ("fail", f),
        ("prior", prior),
        ("mean", mean),
        ("sd", sd),
        ("score", mean + w * sd),
    ):
        assert math.isclose(a[name], want, rel_tol=1e-12), name
    assert ours["explanation"] == ["memory_prefer:gene_a", f"gene_prior:{prior:.3f}"]


def test_a_success_never_lowers_the_estimate(log: EventLog) -> None:
    # §11.6b: in evolver one weak old success drops a gene below its no-edge score 0.4*prior
    # (and below gene_b, which has no edge at all); here positive evidence only raises it.
    ev, ours = _example(log, "06_weak_edge_vs_prior_only")
    e = _scored(ev, "gene_a")
    assert ev["preferredGeneId"] == "gene_b" and e["score"] < 0.4 * e["prior"]
    a = _scored(ours, "gene_a")
    assert a["success"] > 0 and a["fail"] == 0 and a["mean"] > a["prior"]


def test_neighbour_threshold_includes_one_third(log: EventLog) -> None:
    ev, ours = _example(log, "02_jaccard_one_third", 0)  # {a,c} vs {a,b}: Jaccard 1/3
    assert _scored(ev, "gene_a")["attempts"] == 0
    assert ours["candidateKeys"] == [["a|b", 1 / 3]] and _scored(ours, "gene_a")["outcomes"] == 3


# -- inputs ---------------------------------------------------------------------------------------


def test_gene_list_is_checked_and_reported(log: EventLog) -> None:
    genes = [
        {"id": "untyped"},
        "plain",
        {"type": "Capsule", "id": "c"},
        {"type": "Gene"},
        gene("plain"),
    ]
    ours = AdviceEngine(log).advise(["x"], genes, now=NOW)
    assert [s["geneId"] for s in ours.scored] == ["untyped", "plain"]
    assert [w.split(":")[0] for w in ours.warnings] == ["genes[2]", "genes[3]", "genes[4]"]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"signals": "x"},
        {"genes": {"id": "g"}},
        {"policy": "best"},
        {"as_of": -1},
        {"now": "yesterday"},
    ],
)
def test_bad_queries_raise_clear_errors(log: EventLog, kwargs: dict[str, Any]) -> None:
    query: dict[str, Any] = {"signals": ["x"], "genes": GENES, **kwargs}
    with pytest.raises(InvalidInputError):
        AdviceEngine(log).advise(query.pop("signals"), query.pop("genes"), **query)


def test_params_are_validated() -> None:
    with pytest.raises(InvalidInputError, match="min_similarity"):
        EvologParams(min_similarity=0)
    with pytest.raises(InvalidInputError, match="exploration"):
        EvologParams(exploration=-1)


# -- issue 17.2: "prefer" on one lucky outcome ---------------------------------------------------

MISSING = ["log_error", "errsig:ModuleNotFoundError: No module named 'yaml'"]


def test_one_lucky_outcome_is_explored_not_preferred(log: EventLog) -> None:
    # The 200-task life: gene_pin_dependency has 16 successes in 22 outcomes on the family;
    # gene_add_index one old success (decayed to ~0.14) on a neighbouring key. Its optimistic
    # score beats the evidence, which is a fine bet to try but not something to "prefer".
    rows = [(MISSING, "gene_pin_dependency", "success" if i % 11 > 2 else "failed", i * 0.5)
            for i in range(22)]  # fmt: skip
    rows.append(([*MISSING, "slow_query"], "gene_add_index", "success", 85.0))
    _outcomes(log, rows)
    genes = [gene("gene_pin_dependency"), gene("gene_add_index")]
    _, ours = _both(log, MISSING, genes)
    pin, lucky = _scored(ours, "gene_pin_dependency"), _scored(ours, "gene_add_index")
    assert lucky["score"] > pin["score"] and lucky["attempts"] < 0.2  # still the bet to try
    assert ours["status"] == "explore" and ours["preferredGeneId"] is None
    assert ours["explore"] == ["gene_add_index"]
    assert ours["explanation"] == [
        "explore:optimistic:gene_add_index",
        "evidence_best:gene_pin_dependency",
    ]


def test_prefer_means_evidence(log: EventLog) -> None:
    rows = [(MISSING, "gene_pin_dependency", "success" if i % 11 > 2 else "failed", i * 0.5)
            for i in range(22)]  # fmt: skip
    rows += [(MISSING, "gene_add_index", "failed", 1.0)] * 2
    _outcomes(log, rows)
    _, ours = _both(log, MISSING, [gene("gene_add_index"), gene("gene_pin_dependency")])
    assert ours["status"] == "prefer" and ours["preferredGeneId"] == "gene_pin_dependency"
    pin = _scored(ours, "gene_pin_dependency")
    assert pin["attempts"] >= 1 and pin["mean"] == max(s["mean"] for s in ours["scored"])


def test_exploration_bonus_shrinks_with_little_traffic_per_gene(log: EventLog) -> None:
    # 2 effective outcomes spread over 40 genes: w = 2 / (2 * 40); the ranking is by estimate.
    _outcomes(log, [(["x"], "g0", "success", 0.0), (["x"], "g1", "failed", 0.0)])
    genes = [gene(f"g{i}") for i in range(40)]
    _, ours = _both(log, ["x"], genes)
    g0 = _scored(ours, "g0")
    assert math.isclose(g0["score"], g0["mean"] + (2 / 80) * g0["sd"], rel_tol=1e-12)
    _, old = _both_with(log, ["x"], genes, EvologParams(explore_evidence_per_gene=0))
    assert math.isclose(_scored(old, "g0")["score"], g0["mean"] + g0["sd"], rel_tol=1e-12)


def _both_with(log: EventLog, signals: list[str], genes: list[Any], p: EvologParams) -> Any:
    engine = AdviceEngine(log, use_cache=False, params=p)
    return None, engine.advise(signals, genes, now=NOW).to_json()
