"""Projections: the catalog, edge stats (both decay modes), time travel, traces, the cache."""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import strategies
from evolog.eventlog import (
    Attempt,
    Event,
    EventLog,
    Hypothesis,
    Outcome,
    Signal,
    Step,
    init_store,
    parse_ts,
)
from evolog.eventlog.sealed._arrow import SCHEMA, events_to_table
from evolog.eventlog.sealed._manifest import FileCommitter, Manifest
from evolog.eventlog.sealed._segments import write_segment
from evolog.projections._api import Projections
from evolog.projections._errors import InvalidParameterError
from evolog.projections._tail import NARROW_SCHEMA, narrow_tail
from evolog.projections.edges._eval import EdgeParams
from hypothesis import given, settings

DAY = 86_400_000_000
T0 = 1_767_225_600_000_000  # 2026-01-01T00:00:00Z
EX = Path(__file__).resolve().parents[1] / "data" / "evolver-examples"


def _log(store: Path) -> EventLog:
    return EventLog(store, create=True, durability="none", auto_seal="off")


def _outcome(key: str, gene: str | None, status: str, ts: int, **kw: object) -> Outcome:
    return Outcome(key=key, gene=gene, status=status, ts=ts, agent="t", **kw)  # type: ignore[arg-type]


def _row(table: pa.Table, **match: object) -> dict[str, object]:
    rows = [r for r in table.to_pylist() if all(r[k] == v for k, v in match.items())]
    assert len(rows) == 1, (match, table.to_pylist())
    return rows[0]


# -- catalog ---------------------------------------------------------------------------------
def test_events_view_spans_segments_and_wal_tail(store: Path) -> None:
    with _log(store) as log:
        log.append_many([Signal(signals=["a"], ts=T0 + i, agent="x") for i in range(5)])
        log.seal()
        log.append_many([Step(action_id="a1", index=i, ts=T0 + 10 + i) for i in range(3)])
        proj = Projections(log)
        counts = proj.sql("SELECT kind, count(*) AS n FROM events GROUP BY kind ORDER BY kind")
        assert counts.to_pylist() == [{"kind": "signal", "n": 5}, {"kind": "step", "n": 3}]
        seqs = proj.sql("SELECT seq FROM events ORDER BY seq")["seq"].to_pylist()
        assert seqs == list(range(1, 9))
        steps = proj.sql('SELECT seq, "index", action_id FROM steps ORDER BY seq')
        assert steps["index"].to_pylist() == [0, 1, 2]
        described = proj.sql("DESCRIBE signals").to_pylist()
        types = {r["column_name"]: r["column_type"] for r in described}
        assert types["ts"] == "TIMESTAMP WITH TIME ZONE"
        assert "key" in types and "kind" not in types and "gene" not in types


def test_as_of_seq_and_time(store: Path) -> None:
    with _log(store) as log:
        log.append_many([Signal(signals=["a"], ts=T0 + 100 - i, agent="x") for i in range(6)])
        log.seal()
        log.append(Signal(signals=["b"], ts=T0, agent="x"))
        proj = Projections(log)
        assert proj.sql("SELECT count(*) AS n FROM events", as_of=3)["n"].to_pylist() == [3]
        assert proj.sql("SELECT count(*) AS n FROM events", as_of=99)["n"].to_pylist() == [7]
        # ts counts down with seq: ts <= T0+97 keeps seqs 4, 5, 6 and the tail event.
        got = proj.sql("SELECT seq FROM events ORDER BY seq", as_of_ts=T0 + 97)
        assert got["seq"].to_pylist() == [4, 5, 6, 7]
        both = proj.sql("SELECT seq FROM events ORDER BY seq", as_of=5, as_of_ts=T0 + 97)
        assert both["seq"].to_pylist() == [4, 5]


def test_older_segment_without_a_newer_column_reads_null(store: Path) -> None:
    paths = init_store(store)
    old = SCHEMA.empty_table().drop_columns(["delta", "supported_by"]).schema
    row: dict[str, list[object]] = {n: [None] for n in old.names}
    row.update(seq=[1], id=["old"], kind=["outcome"], status=["failed"], key=["k"], gene=["g"])
    row["ts"] = [T0]
    table = pa.table({n: pa.array(v, old.field(n).type) for n, v in row.items()}, schema=old)
    info = write_segment(paths.segments, table)
    FileCommitter(paths.manifest).commit(Manifest(version=1, sealed_seq=1, segments=[info]))
    proj = Projections(store)
    got = proj.sql("SELECT seq, status, delta, supported_by FROM outcomes ORDER BY seq")
    assert got.to_pylist() == [{"seq": 1, "status": "failed", "delta": None, "supported_by": None}]
    with _log(store) as log:
        log.append(Outcome(action_id="a", status="success", key="k", gene="g", delta=2.0, ts=T0))
    got = proj.sql("SELECT seq, delta FROM outcomes ORDER BY seq").to_pylist()
    assert got == [{"seq": 1, "delta": None}, {"seq": 2, "delta": 2.0}]
    assert _row(proj.edges(now=T0))["attempts"] == 2


# -- edges: evolver semantics ----------------------------------------------------------------
def _load_example(name: str) -> tuple[list[Outcome], dict[str, object], list[str]]:
    events = []
    for i, line in enumerate((EX / f"{name}.jsonl").read_text().splitlines()):
        ev = json.loads(line)
        events.append(
            Outcome(
                id=f"ex{i}",
                ts=parse_ts(ev["ts"]),
                key=ev["signal"]["key"],
                signals=ev["signal"]["signals"],
                gene=ev["gene"]["id"],
                status=ev["outcome"]["status"],
            )
        )
    query = json.loads((EX / f"{name}.query.json").read_text())[0]
    expected = json.loads((EX / f"{name}.expected.json").read_text())["results"][0]
    return events, expected, query["signals"]


# These examples have no neighbour keys, so evolver's score is the exact key's edge value
# plus 0.12 x the gene prior, or 0.4 x the prior without an edge (spec §6.3-6.4).
@pytest.mark.parametrize(
    "name",
    [
        "01_stale_success_banned",
        "04_unknown_status_edge",
        "06_weak_edge_vs_prior_only",
        "07_prior_ban",
    ],
)
def test_newest_mode_reproduces_evolver_scores(store: Path, name: str) -> None:
    events, result, signals = _load_example(name)
    now = parse_ts(result["now"])
    with _log(store) as log:
        log.append_many(events)
        proj = Projections(log)
        edges = {r["gene"]: r for r in proj.edges(signals=signals, now=now).to_pylist()}
        priors = {r["gene"]: r["value"] for r in proj.gene_priors(now=now).to_pylist()}
    assert result["scored"]
    for scored in result["scored"]:
        gene = scored["geneId"]
        prior = priors.get(gene, 0.0)
        assert prior == pytest.approx(scored["prior"], rel=1e-12)
        edge = edges.get(gene)
        score = edge["value"] + 0.12 * prior if edge else 0.4 * prior
        assert score == pytest.approx(scored["score"], rel=1e-12)
        assert (edge["attempts"] if edge else 0) == scored["attempts"]


def test_other_status_creates_an_edge_without_counts(store: Path) -> None:
    with _log(store) as log:
        log.append(_outcome("x", "g", "partial", T0))
        row = _row(Projections(log).edges(now=T0))
        assert (row["success"], row["fail"], row["other"], row["attempts"]) == (0, 0, 1, 0)
        assert row["p"] == 0.5 and row["value"] == 0.5


def test_key_and_gene_fall_back_to_the_newest_preceding_attempt(store: Path) -> None:
    with _log(store) as log:
        log.append_many(
            [
                Attempt(action_id="a1", key="old", gene="g_old", ts=T0),
                Attempt(action_id="a1", key="k1", gene="g1", ts=T0 + 1),
                Outcome(action_id="a1", status="success", ts=T0 + 2),  # -> (k1, g1)
                Attempt(action_id="a1", key="late", gene="g_late", ts=T0 + 3),
                Outcome(action_id="a2", status="failed", gene="g2", ts=T0 + 4),  # -> ((none), g2)
                Outcome(action_id="a3", status="failed", key="k3", ts=T0 + 5),  # no gene: ignored
                Attempt(action_id="a4", key="k4", ts=T0 + 6),
                Outcome(action_id="a4", status="success", gene="g4", ts=T0 + 7),  # -> (k4, g4)
            ]
        )
        log.seal()
        log.append(Outcome(action_id="a1", status="failed", ts=T0 + 8))  # -> (late, g_late)
        got = Projections(log).edges(now=T0)
        pairs = [(r["signal_key"], r["gene"], r["success"], r["fail"]) for r in got.to_pylist()]
        assert pairs == [
            ("(none)", "g2", 0, 1),
            ("k1", "g1", 1, 0),
            ("k4", "g4", 1, 0),
            ("late", "g_late", 0, 1),
        ]


def test_newest_ts_is_the_maximum_and_weight_is_one_in_the_future(store: Path) -> None:
    with _log(store) as log:
        log.append_many(
            [_outcome("k", "g", "success", T0 + 5 * DAY), _outcome("k", "g", "failed", T0)]
        )
        proj = Projections(log)
        row = _row(proj.edges(now=T0 + 35 * DAY))
        assert row["newest_ts"].timestamp() == (T0 + 5 * DAY) / 1e6
        assert row["weight"] == pytest.approx(0.5, rel=1e-12)
        assert row["value"] == pytest.approx(0.5 * 0.5, rel=1e-12)
        early = _row(proj.edges(now=T0))
        assert early["weight"] == 1.0 and early["age_days"] == 0.0


# -- edges: per-event decay ------------------------------------------------------------------
def _model(outcomes: list[tuple[int, str]], now: int, hl_days: float) -> float:
    newest = max(t for t, _ in outcomes)
    at = max(now, newest)
    s = sum(0.5 ** ((at - t) / (hl_days * DAY)) for t, st in outcomes if st == "success")
    f = sum(0.5 ** ((at - t) / (hl_days * DAY)) for t, st in outcomes if st == "failed")
    return (s + 1) / (s + f + 2)


@pytest.mark.parametrize("hl", [30.0, 0.25, 3.7])
def test_per_event_matches_the_formula(store: Path, hl: float) -> None:
    times = [T0 + k * 7_777_777_777 for k in (0, 3, 3, 17, 40, 41, 120, 350, 351)]
    statuses = [
        "success",
        "failed",
        "success",
        "success",
        "partial",
        "failed",
        "success",
        "failed",
        "success",
    ]
    with _log(store) as log:
        log.append_many([_outcome("k", "g", s, t) for t, s in zip(times, statuses, strict=True)])
        proj = Projections(log, params=EdgeParams(half_life_days=hl, gene_half_life_days=hl))
        for now in (T0, times[-1], times[-1] + 3 * DAY, times[-1] + 400 * DAY):
            expect = _model(list(zip(times, statuses, strict=True)), now, hl)
            row = _row(proj.edges(now=now, mode="per_event"))
            assert row["p"] == pytest.approx(expect, rel=1e-12, abs=1e-15)
            assert row["value"] == row["p"]
            prior = _row(proj.gene_priors(now=now, mode="per_event"))
            assert prior["p"] == pytest.approx(expect, rel=1e-12, abs=1e-15)


def test_stale_successes_shrink_to_the_prior_not_to_zero(store: Path) -> None:
    with _log(store) as log:
        log.append_many([_outcome("k", "g", "success", T0 + i) for i in range(10)])
        proj = Projections(log)
        later = T0 + 300 * DAY  # ten half-lives
        per_event = _row(proj.edges(now=later, mode="per_event"))
        newest = _row(proj.edges(now=later))
        assert per_event["p"] == pytest.approx((10 / 1024 + 1) / (10 / 1024 + 2), rel=1e-9)
        assert per_event["p"] > 0.5 > newest["value"]


def test_counterfactual_half_life_leaves_the_cache_alone(store: Path) -> None:
    with _log(store) as log:
        log.append_many([_outcome("k", "g", "success", T0 + i * DAY) for i in range(4)])
        proj = Projections(log)
        proj.refresh()
        before = sorted(os.listdir(log.paths.cache + "/projections"))
        other = proj.edges(now=T0 + 20 * DAY, mode="per_event", half_life_days=2.0)
        assert sorted(os.listdir(log.paths.cache + "/projections")) == before
        fresh = Projections(log, cache=False).edges(
            now=T0 + 20 * DAY, mode="per_event", half_life_days=2.0
        )
        assert other.equals(fresh)
        assert other["p"][0].as_py() != proj.edges(now=T0 + 20 * DAY, mode="per_event")["p"][0]


@pytest.mark.parametrize("bad", [0, -1.0, math.inf, math.nan, "30", True])
def test_bad_half_life_is_refused(bad: object) -> None:
    with pytest.raises(InvalidParameterError, match="half_life_days"):
        EdgeParams(half_life_days=bad)  # type: ignore[arg-type]


def test_bad_mode_is_refused() -> None:
    with pytest.raises(InvalidParameterError, match="mode: expected one of newest, per_event"):
        EdgeParams(mode="latest")  # type: ignore[arg-type]


# -- time travel -----------------------------------------------------------------------------
def test_edges_as_of_equal_a_log_cut_at_that_point(tmp_path: Path) -> None:
    events = [
        _outcome(
            f"k{i % 3}", f"g{i % 2}", ("success", "failed")[i % 3 == 0], T0 + (i * 13 % 7) * DAY
        )
        for i in range(30)
    ]
    with _log(tmp_path / "full") as log:
        log.append_many(events[:20])
        log.seal()
        log.append_many(events[20:])
        proj = Projections(log)
        for cut in (0, 1, 12, 20, 25, 30):
            with _log(tmp_path / f"cut{cut}") as short:
                if cut:
                    short.append_many(events[:cut])
                expect = Projections(short).edges(now=T0 + 9 * DAY, mode="per_event")
            got = proj.edges(as_of=cut, now=T0 + 9 * DAY, mode="per_event")
            assert got.equals(expect), cut
        at = T0 + 3 * DAY
        by_time = proj.edges(as_of_ts=at)
        assert sum(by_time["outcomes"].to_pylist()) == sum(e.ts <= at for e in events)
        assert by_time.equals(proj.edges(as_of_ts=at, now=at))


# -- traces ----------------------------------------------------------------------------------
def test_traces_assemble_attempts(store: Path) -> None:
    with _log(store) as log:
        log.append_many(
            [
                Signal(signals=["e"], key="k", ts=T0),
                Hypothesis(hypothesis_id="h", key="k", text="try g", gene="g", ts=T0 + 1),
                Attempt(
                    action_id="a",
                    key="k",
                    gene="g",
                    hypothesis_id="h",
                    decided_by=["n1"],
                    supported_by=["n2"],
                    task="fix",
                    ts=T0 + 2,
                ),
                Step(action_id="a", index=1, action="second", ts=T0 + 3),
                Step(action_id="a", index=0, action="first", ts=T0 + 4),
                Step(action_id="zz", index=0, action="orphan", ts=T0 + 4),
                Outcome(
                    action_id="a", status="success", supported_by=["n2", "n3"], delta=1.5, ts=T0 + 5
                ),
                Attempt(action_id="b", ts=T0 + 6),
            ]
        )
        traces = Projections(log).traces().to_pylist()
    assert [t["action_id"] for t in traces] == ["a", "b"]
    a, b = traces
    assert [s["action"] for s in a["steps"]] == ["first", "second"] and a["step_count"] == 2
    assert a["hypothesis"]["text"] == "try g" and a["signal"]["signals"] == ["e"]
    assert a["outcome"]["delta"] == 1.5 and a["status"] == "success" and not a["open"]
    assert a["decided_by"] == ["n1"] and a["supported_by"] == ["n2", "n3"]
    assert b["open"] and b["steps"] == [] and b["outcome"] is None


def test_open_only_and_action_id_filters(store: Path) -> None:
    with _log(store) as log:
        log.append_many([Attempt(action_id=f"a{i}", ts=T0 + i) for i in range(4)])
        log.append(Outcome(action_id="a1", status="failed", ts=T0 + 9))
        proj = Projections(log)
        assert proj.traces(open_only=True)["action_id"].to_pylist() == ["a0", "a2", "a3"]
        assert proj.traces(action_ids=["a1", "a3"])["status"].to_pylist() == ["failed", None]
        assert proj.traces(as_of=2)["action_id"].to_pylist() == ["a0", "a1"]


# -- the cache -------------------------------------------------------------------------------
def test_cache_survives_deletion_corruption_and_foreign_logs(tmp_path: Path) -> None:
    with _log(tmp_path / "a") as log:
        log.append_many([_outcome("k", f"g{i % 3}", "success", T0 + i) for i in range(9)])
        proj = Projections(log)
        want = proj.edges(now=T0, mode="per_event")
        cache_file = proj._cache().path
        assert os.path.exists(cache_file)
        proj.clear_cache()
        assert proj.edges(now=T0, mode="per_event").equals(want)
        Path(cache_file).write_bytes(b"not a duckdb file at all" * 100)
        assert proj.edges(now=T0, mode="per_event").equals(want)
    with _log(tmp_path / "b") as other:
        other.append_many([_outcome("z", "g", "failed", T0 + i) for i in range(9)])
        theirs = Projections(other)
        os.makedirs(os.path.dirname(theirs._cache().path), exist_ok=True)
        shutil.copy(cache_file, theirs._cache().path)
        got = theirs.edges(now=T0)
        assert got["signal_key"].to_pylist() == ["z"] and got["fail"].to_pylist() == [9]


def test_cache_follows_compaction(store: Path) -> None:
    with _log(store) as log:
        for i in range(4):
            log.append_many([_outcome("k", "g", "success", T0 + i * 10 + j) for j in range(5)])
            log.seal()
        proj = Projections(log)
        proj.refresh()
        log.compact(small_rows=100, target_rows=1000)
        log.append(_outcome("k", "g", "failed", T0 + 99))
        done = proj.refresh()
        assert done.from_seq == 20 and done.to_seq == 21 and not done.rebuilt
        assert _row(proj.edges(now=T0))["fail"] == 1


def test_export_writes_parquet_and_csv(store: Path, tmp_path: Path) -> None:
    with _log(store) as log:
        log.append_many(
            [
                Attempt(action_id="a", key="k", gene="g", ts=T0),
                Outcome(action_id="a", status="success", ts=T0 + 1),
            ]
        )
        proj = Projections(log)
        paths = proj.export(tmp_path / "out", now=T0)
        names = sorted(Path(p).name for p in paths)
        assert names == [
            "attempts.parquet",
            "edges.parquet",
            "events.parquet",
            "gene_priors.parquet",
            "outcomes.parquet",
            "traces.parquet",
        ]
        assert pq.read_table(tmp_path / "out" / "events.parquet").num_rows == 2
        assert pq.read_table(tmp_path / "out" / "edges.parquet")["success"].to_pylist() == [1]
        csv_paths = proj.export(tmp_path / "csv", "csv", now=T0)
        text = Path(csv_paths[0]).read_text()
        assert text.splitlines()[0].startswith("seq,id,ts,kind")
        with pytest.raises(InvalidParameterError, match="format"):
            proj.export(tmp_path / "bad", "xlsx")  # type: ignore[arg-type]


# -- the light WAL decoder -------------------------------------------------------------------
@settings(max_examples=30)
@given(strategies.event_lists(min_size=1, max_size=12))
def test_narrow_tail_equals_the_wide_table(events: list[Event]) -> None:
    with (
        tempfile.TemporaryDirectory() as tmp,
        EventLog(f"{tmp}/s", create=True, durability="none", auto_seal="off") as log,
    ):
        log.append_many(events)
        with log.snapshot() as snap:
            narrow = narrow_tail(snap, 0, snap.head_seq)
            wide = events_to_table(snap.tail_events()).select(NARROW_SCHEMA.names)
            assert narrow.equals(wide)
            assert narrow_tail(snap, 1, snap.head_seq).num_rows == len(events) - 1
