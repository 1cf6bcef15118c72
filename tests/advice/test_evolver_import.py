"""Importing evolver memory graphs: identical advice, lossless export, idempotent re-import."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest
from evolog.advice import (
    AdviceEngine,
    EvolverSourceError,
    apply_patch,
    canonical_evolver,
    evolver_advice,
    evolver_to_event,
    import_evolver,
    patch_supported,
    read_evolver_jsonl_tail,
    to_evolver,
)
from evolog.advice._outcomes import infer_from_signals
from evolog.advice.evolver._import import diff_patch, same_json
from evolog.advice.evolver._writer import EvolverGraphWriter
from evolog.eventlog import EventLog
from evolog.eventlog.schema._signalkey import parse_iso_ms
from hypothesis import given, settings
from hypothesis import strategies as st

EXAMPLES = Path(__file__).resolve().parents[1] / "data" / "evolver-examples"
EXAMPLE_NAMES = sorted(p.name[: -len(".jsonl")] for p in EXAMPLES.glob("0*.jsonl"))
NOW_MS = 1_772_323_200_000  # 2026-03-01T00:00:00Z
GENES = [{"type": "Gene", "id": f"gene_{i}", "category": "repair"} for i in range(4)]
SIGNAL_SETS = [
    ["log_error", "errsig:TypeError: x is None at /srv/app/main.js:12"],
    ["perf_bottleneck"],
    ["capability_gap", "perf_bottleneck"],
    ["log_error"],
    ["user_feature_request", "capability_gap"],
]


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(t) for t in path.read_text(encoding="utf-8").splitlines() if t.strip()]


def _compact(obj: object) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _assert_same_answer(got: dict[str, Any], want: dict[str, Any]) -> None:
    assert got["currentSignalKey"] == want["currentSignalKey"]
    assert got["preferredGeneId"] == want["preferredGeneId"]
    assert got["bannedGeneIds"] == want["bannedGeneIdsInsertionOrder"]
    assert got["explanation"] == want["explanation"]
    assert [s["geneId"] for s in got["scored"]] == [s["geneId"] for s in want["scored"]]
    for g, w in zip(got["scored"], want["scored"], strict=True):
        for name in ("score", "attempts", "prior"):
            assert math.isclose(g[name], w[name], rel_tol=1e-12, abs_tol=0.0)
        assert g["banned"] == w["banned"]


@pytest.fixture
def log(tmp_path: Path) -> Any:
    with EventLog(tmp_path / "store", create=True, durability="none") as lg:
        yield lg


# -- the worked examples, imported into a store --------------------------------------------


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_example_imported_gives_evolvers_answer(log: EventLog, name: str) -> None:
    assert len(EXAMPLE_NAMES) == 9
    report = import_evolver(log, EXAMPLES / f"{name}.jsonl")
    assert report.imported == len(_lines(EXAMPLES / f"{name}.jsonl"))
    assert report.unparseable == report.unsupported == report.rejected == 0
    queries = json.loads((EXAMPLES / f"{name}.query.json").read_text())
    expected = json.loads((EXAMPLES / f"{name}.expected.json").read_text())["results"]
    for sealed in (False, True):
        if sealed:
            log.seal()
        engine = AdviceEngine(log, use_cache=False)
        for query, want in zip(queries, expected, strict=True):
            got = engine.advise(
                query["signals"],
                query["genes"],
                policy="evolver",
                drift=query["driftEnabled"],
                now=want["now"],
            )
            _assert_same_answer(got.to_json(), want)


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_example_reimport_adds_nothing(log: EventLog, name: str) -> None:
    first = import_evolver(log, EXAMPLES / f"{name}.jsonl")
    before = list(log.replay())
    log.seal()
    again = import_evolver(log, EXAMPLES / f"{name}.jsonl")
    assert again.imported == 0
    assert again.duplicates == first.imported
    assert [e.id for e in log.replay()] == [e.id for e in before]


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_example_export_reproduces_each_line(log: EventLog, name: str) -> None:
    original = _lines(EXAMPLES / f"{name}.jsonl")
    report = import_evolver(log, EXAMPLES / f"{name}.jsonl")
    log.seal()
    events = list(log.replay())
    assert len(events) == len(original)
    if patch_supported():
        assert report.lossy == 0
        # Exact: same keys, same order, same number types.
        assert [_compact(to_evolver(e)) for e in events] == [_compact(o) for o in original]
    else:
        # Without the schema's evolver_patch field, hand-written lines that lack fields of
        # evolver's writer cannot be restored; every such line is counted, none is hidden.
        needs_patch = sum(
            diff_patch(canonical_evolver(e), o) is not None
            for e, o in zip(events, original, strict=True)
        )
        assert report.lossy == needs_patch == len(original)


def test_repeated_ids_in_one_file_are_all_kept(log: EventLog, tmp_path: Path) -> None:
    # evolver ids are not unique (same key in the same millisecond, hand-made graphs);
    # evolver counts every line, so the import keeps every line too.
    lines = _lines(EXAMPLES / "07_prior_ban.jsonl")[:3]
    for obj in lines:
        obj["id"] = "dup"
    path = tmp_path / "g.jsonl"
    path.write_text("".join(_compact(o) + "\n" for o in lines), encoding="utf-8")
    report = import_evolver(log, path)
    ids = [e.id for e in log.replay()]
    width = len(_compact(lines[0])) + 1
    assert report.imported == 3
    assert ids == ["dup", f"dup@{width}", f"dup@{2 * width}"]
    assert import_evolver(log, path).duplicates == 3
    if patch_supported():
        assert [to_evolver(e)["id"] for e in log.replay()] == ["dup"] * 3
    window = AdviceEngine(log, use_cache=False).state().window_objects()
    gene_a = [{"type": "Gene", "id": "gene_a"}]
    assert evolver_advice(window, ["z"], gene_a, False, NOW_MS).scored[0].attempts == 3


# -- histories written the way evolver's own module writes them ----------------------------


def _evolver_history(cycles: int, seed: int) -> EvolverGraphWriter:
    rng = random.Random(seed)
    w = EvolverGraphWriter()
    now = NOW_MS - cycles * 3_600_000
    for _ in range(cycles):
        signals = rng.choice(SIGNAL_SETS)
        inferred = infer_from_signals(rng.random() < 0.5, "log_error" in signals)
        w.outcome(now, inferred.status, inferred.score, inferred.note, signals)
        w.signal(now, signals, {"recent_error_count": rng.randint(0, 5)})
        w.attempt(now, signals, rng.choice(GENES), drift=rng.random() < 0.1)
        now += 3_600_000
    return w


@pytest.mark.parametrize("cycles", [30, 350])
def test_module_written_history_round_trips_byte_for_byte(
    log: EventLog, tmp_path: Path, cycles: int
) -> None:
    w = _evolver_history(cycles, seed=cycles)
    path = tmp_path / "memory_graph.jsonl"
    path.write_text(w.text(), encoding="utf-8")
    report = import_evolver(log, path)
    assert report.imported == len(w.lines) and report.lossy == 0
    log.seal()
    assert [_compact(to_evolver(e)) for e in log.replay()] == w.lines


def test_module_written_history_gives_identical_advice(log: EventLog, tmp_path: Path) -> None:
    # 350 cycles write about 2100 lines: the 2000-line window cuts into the history.
    w = _evolver_history(350, seed=11)
    path = tmp_path / "memory_graph.jsonl"
    path.write_text(w.text(), encoding="utf-8")
    import_evolver(log, path)
    window = read_evolver_jsonl_tail(path)
    engine = AdviceEngine(log, use_cache=False)
    for signals in [*SIGNAL_SETS, ["perf_bottleneck", "other"], []]:
        for drift in (False, True):
            want = evolver_advice(window, signals, GENES, drift, NOW_MS)
            got = engine.advise(signals, GENES, policy="evolver", drift=drift, now=NOW_MS * 1000)
            assert got.to_json()["bannedGeneIds"] == list(want.banned_gene_ids)
            assert {k: v for k, v in got.to_json().items() if k in want.to_evolver_json()} == (
                want.to_evolver_json()
            )
            assert [s["score"] for s in got.scored] == [s.score for s in want.scored]


def test_native_events_count_in_the_evolver_window(log: EventLog) -> None:
    from evolog.eventlog import Attempt, Outcome

    ts = (NOW_MS - 3_600_000) * 1000
    log.append(Attempt(id="a1", ts=ts, signals=["x"], gene="gene_0"))
    log.append(Outcome(ts=ts, action_id="a1", status="failed"))  # key and gene from the attempt
    window = AdviceEngine(log, use_cache=False).state().window_objects()
    assert [o["kind"] for o in window] == ["attempt", "outcome"]
    assert window[1]["signal"] == {"key": "x", "signals": ["x"]}
    assert window[1]["gene"] == {"id": "gene_0"}
    answer = evolver_advice(window, ["x"], GENES, False, NOW_MS)
    assert {s.gene_id: s.attempts for s in answer.scored}["gene_0"] == 1


# -- line handling -----------------------------------------------------------------------------


def test_bad_lines_are_skipped_and_counted(log: EventLog, tmp_path: Path) -> None:
    good = _lines(EXAMPLES / "02_jaccard_one_third.jsonl")
    text = "\n".join(
        [
            _compact(good[0]),
            "",
            "   ",
            "not json",
            "null",
            "[1, 2]",
            '{"type":"MemoryGraphEvent","kind":"mystery","id":"m1"}',
            _compact(good[1]),
            _compact(good[2]),  # the last line has no newline: a one-shot import reads it
        ]
    )
    path = tmp_path / "g.jsonl"
    path.write_text(text, encoding="utf-8")
    report = import_evolver(log, path)
    assert (report.lines, report.imported) == (7, 3)
    assert (report.unparseable, report.unsupported) == (2, 2)
    assert len(report.problems) == 4 + (report.lossy > 0)
    assert report.problems[0].startswith(f"{path}:2:")
    assert report.offset == len(text.encode())


def test_missing_file_is_a_clear_error(log: EventLog, tmp_path: Path) -> None:
    with pytest.raises(EvolverSourceError, match="cannot open"):
        import_evolver(log, tmp_path / "nope.jsonl")


def test_lines_without_ids_get_stable_derived_ids(log: EventLog, tmp_path: Path) -> None:
    obj = _lines(EXAMPLES / "04_unknown_status_edge.jsonl")[0]
    del obj["id"]
    path = tmp_path / "g.jsonl"
    path.write_text(_compact(obj) + "\n" + _compact(obj) + "\n", encoding="utf-8")
    assert import_evolver(log, path).imported == 2
    assert import_evolver(log, path).duplicates == 2
    ids = [e.id for e in log.replay()]
    assert ids[0].startswith("evolver-line:") and ids[1] == f"{ids[0]}@{len(_compact(obj)) + 1}"


# -- the mapping itself, on arbitrary objects --------------------------------------------------

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**53), 2**53),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
_FIELDS = [
    "id",
    "ts",
    "signal",
    "gene",
    "outcome",
    "action",
    "hypothesis",
    "mutation",
    "personality",
    "capsules",
    "observed",
    "baseline",
    "confidence",
    "stats",
    "edge",
    "derived_from",
    "external",
    "asset",
    "candidate",
]


@st.composite
def evolver_objects(draw: st.DrawFn) -> dict[str, Any]:
    """Evolver-like objects: a known kind, then arbitrary (often wrongly typed) fields."""
    kind = draw(
        st.sampled_from(
            [
                "signal",
                "hypothesis",
                "attempt",
                "outcome",
                "confidence_edge",
                "confidence_gene_outcome",
                "external_candidate",
            ]
        )
    )
    obj: dict[str, Any] = {"type": draw(st.sampled_from(["MemoryGraphEvent", "x"])), "kind": kind}
    for name in draw(st.lists(st.sampled_from(_FIELDS), unique=True, max_size=8)):
        if name == "ts":
            obj[name] = draw(st.one_of(st.just("2026-02-01T10:00:00.000Z"), _values))
        elif name == "signal":
            obj[name] = draw(
                st.one_of(
                    _values,
                    st.fixed_dictionaries(
                        {
                            "key": st.one_of(st.text(max_size=4), _values),
                            "signals": st.lists(st.text(max_size=5), max_size=3),
                        }
                    ),
                )
            )
        else:
            obj[name] = draw(_values)
    return obj


@given(evolver_objects())
@settings(max_examples=300)
def test_patch_restores_any_object(obj: dict[str, Any]) -> None:
    # The stored id differs from the object's (or the object has none): the patch restores it.
    mapped = evolver_to_event(obj, "derived-id", 1_000_000)
    restored = apply_patch(canonical_evolver(mapped.event), mapped.patch or {})
    assert same_json(restored, obj)
    if patch_supported():
        assert same_json(to_evolver(mapped.event), obj)


def test_canonical_objects_need_no_patch() -> None:
    for line in _evolver_history(5, seed=1).lines:
        obj = json.loads(line)
        mapped = evolver_to_event(obj, obj["id"], 1)
        assert mapped.patch is None and not mapped.lossy
        assert _compact(to_evolver(mapped.event)) == line


def test_timestamps_follow_evolvers_reading() -> None:
    obj = {"type": "MemoryGraphEvent", "kind": "signal", "created_at": "2026-02-01T00:00:00Z"}
    event = evolver_to_event(obj, "s1", 5).event
    assert event.ts == parse_iso_ms("2026-02-01T00:00:00Z") * 1000
    assert evolver_to_event({"kind": "signal", "ts": "garbage"}, "s2", 5).event.ts == 5
