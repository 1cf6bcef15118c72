"""The advice engine: incremental == rebuild == cache, as_of, and the key index."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import evolog.advice._keysearch as keysearch
from conftest import examples
from evolog.advice import AdviceEngine
from evolog.advice._cache import STATE_FILE, cache_dir
from evolog.advice._keysearch import KeyCatalog, jaccard, key_signals
from evolog.advice._state import AdviceState
from evolog.eventlog import Attempt, Event, EventLog, Outcome, Signal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.strategies import long_evolver_histories

DAY_US = 86_400_000_000
T0 = 1_767_225_600_000_000  # 2026-01-01
SIGNALS = [["a"], ["a", "b"], ["b", "c"], ["log_error", "errsig:boom at /x/y.js:3"], []]
GENES = [{"type": "Gene", "id": g} for g in ("g0", "g1", "g2")]


@st.composite
def histories(draw: st.DrawFn) -> list[list[Event]]:
    """Batches of attempts, outcomes (with and without their own key and gene) and signals."""
    batches: list[list[Event]] = []
    n = 0
    for _ in range(draw(st.integers(1, 5))):
        batch: list[Event] = []
        for _ in range(draw(st.integers(1, 12))):
            n += 1
            ts = T0 + draw(st.integers(0, 90)) * DAY_US
            aid = f"a{draw(st.integers(0, 8))}"
            sigs = draw(st.sampled_from(SIGNALS))
            gene = draw(st.sampled_from([None, "g0", "g1", "g2"]))
            kind = draw(st.sampled_from(["attempt", "outcome", "outcome_bare", "signal"]))
            status = draw(st.sampled_from(["success", "failed", "partial"]))
            if kind == "attempt":
                batch.append(Attempt(id=f"e{n}", ts=ts, action_id=aid, signals=sigs, gene=gene))
            elif kind == "outcome":
                batch.append(
                    Outcome(
                        id=f"e{n}", ts=ts, action_id=aid, signals=sigs, gene=gene, status=status
                    )
                )
            elif kind == "outcome_bare":  # names only its attempt
                batch.append(Outcome(id=f"e{n}", ts=ts, action_id=aid, status=status))
            else:
                batch.append(Signal(id=f"e{n}", ts=ts, signals=sigs))
        batches.append(batch)
    return batches


def _dump(state: AdviceState) -> dict[str, Any]:
    edges = state.edges.columns(len(state.catalog))
    genes = state.gene_stats.columns(1)
    return {
        "head": state.head,
        "keys": list(state.catalog.keys),
        "genes": list(state.genes),
        "edges": {k: v.tolist() for k, v in edges.items()},
        "gene_stats": {k: v.tolist() for k, v in genes.items()},
        "open": {k: v.to_json() for k, v in state.open.items()},
        "closed": dict(state.closed),
        "window": state.window_objects(),
    }


def _answers(engine: AdviceEngine) -> list[Any]:
    out = []
    for sigs in SIGNALS:
        for policy in ("evolog", "evolver"):
            a = engine.advise(sigs, GENES, policy=policy, now=T0 + 100 * DAY_US)
            out.append(a.to_json())
    return out


@given(histories(), st.integers(0, 2**32))
@settings(max_examples=examples(20))
def test_incremental_equals_rebuild_equals_cache(batches: list[list[Event]], seed: int) -> None:
    import tempfile

    rng = random.Random(seed)
    with (
        tempfile.TemporaryDirectory() as tmp,
        EventLog(Path(tmp) / "s", create=True, durability="none") as log,
    ):
        warm = AdviceEngine(log)
        for batch in batches:
            log.append_many(batch)
            if rng.random() < 0.4:
                log.seal()
            warm.advise(["a"], GENES)  # folds the new batch into the warm state
            if rng.random() < 0.5:
                warm.save()
        rebuilt = AdviceEngine(log, use_cache=False)
        cached = AdviceEngine(log)  # loads what the warm engine saved, folds the rest
        want = _dump(rebuilt.state())
        assert _dump(warm.state()) == want
        assert _dump(cached.state()) == want
        assert _answers(warm) == _answers(rebuilt) == _answers(cached)


def test_as_of_equals_a_store_holding_only_the_prefix(tmp_path: Path) -> None:
    events = [
        Outcome(
            id=f"o{i}",
            ts=T0 + i * DAY_US,
            signals=["x"],
            gene=f"g{i % 2}",
            status="success" if i % 3 else "failed",
        )
        for i in range(30)
    ]
    with (
        EventLog(tmp_path / "full", create=True, durability="none") as full,
        EventLog(tmp_path / "prefix", create=True, durability="none") as prefix,
    ):
        full.append_many(events)
        full.seal()
        prefix.append_many(events[:17])
        now = T0 + 40 * DAY_US
        for policy in ("evolog", "evolver"):
            past = AdviceEngine(full).advise(["x"], GENES, policy=policy, now=now, as_of=17)
            want = AdviceEngine(prefix).advise(["x"], GENES, policy=policy, now=now)
            assert past.to_json() == want.to_json()
            assert past.as_of == 17


def test_unchanged_log_is_not_opened_and_damaged_cache_is_rebuilt(tmp_path: Path) -> None:
    with EventLog(tmp_path / "s", create=True, durability="none") as log:
        log.append_many(
            Outcome(id=f"o{i}", ts=T0, signals=["x"], gene="g0", status="success") for i in range(5)
        )
        engine = AdviceEngine(log)
        first = engine.advise(["x"], GENES, now=T0).to_json()
        assert os.path.exists(os.path.join(cache_dir(log.paths), STATE_FILE))

        def refuse() -> Any:
            raise AssertionError("the log was opened although nothing changed")

        cold = AdviceEngine(log)
        log.snapshot = refuse  # type: ignore[method-assign]
        assert cold.advise(["x"], GENES, now=T0).to_json() == first
        del log.snapshot
        with open(os.path.join(cache_dir(log.paths), STATE_FILE), "wb") as f:
            f.write(b"\x00garbage")
        assert AdviceEngine(log).advise(["x"], GENES, now=T0).to_json() == first


# -- candidate keys ------------------------------------------------------------------------


def _random_keys(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    vocab = [f"s{i:03d}" for i in range(400)]
    keys = set()
    while len(keys) < n:
        keys.add(
            "|".join(
                sorted(
                    set(
                        rng.sample(vocab[:60], rng.randint(1, 3))
                        + rng.sample(vocab, rng.randint(0, 3))
                    )
                )
            )
        )
    return sorted(keys)


def _exact(keys: list[str], query: frozenset[str], limit: int) -> list[tuple[int, float]]:
    found = [(i, jaccard(query, key_signals(k))) for i, k in enumerate(keys)]
    found = [x for x in found if x[1] >= 1 / 3]
    return sorted(found, key=lambda x: (-x[1], x[0]))[:limit]


def test_key_index_finds_what_the_exact_scan_finds(tmp_path: Path) -> None:
    keys = _random_keys(3000, seed=5)
    catalog = KeyCatalog(list(keys[:2500]))
    catalog.build_index()
    path = str(tmp_path / "k.usearch")
    catalog.save_index(path)
    reloaded = KeyCatalog(list(keys[:2500]))
    reloaded.attach_index(keysearch.load_index(path), 2500, path)
    for k in keys[2500:]:
        reloaded.add(k)  # not in the saved index: found by the scan of new keys
    rng = random.Random(1)
    hits = total = 0
    for _ in range(100):
        query = key_signals(rng.choice(keys))
        want = _exact(keys, query, 32)
        got = reloaded.similar(query, 1 / 3, 32, exact=False)
        assert reloaded.similar(query, 1 / 3, 32, exact=True) == want
        assert all(sim == jaccard(query, key_signals(keys[k])) >= 1 / 3 for k, sim in got)
        cut = want[-1][1] if len(want) == 32 else 0.0
        must = {k for k, s in want if s > cut}  # the top, apart from ties at the cut
        hits += len(must & {k for k, _ in got})
        total += len(must)
    assert hits / total >= 0.97  # approximate search; measured recall is in bench/
    reloaded.build_index()  # a memory-mapped index is loaded to grow
    assert reloaded.indexed == 3000


def test_exact_scan_below_the_threshold() -> None:
    keys = _random_keys(500, seed=2)
    catalog = KeyCatalog(list(keys))
    query = key_signals(keys[7])
    assert catalog.similar(query, 1 / 3, 10) == _exact(keys, query, 10)
    assert catalog.indexed == 0  # no index is built for a small catalog
    none = KeyCatalog(["(none)", "a"])
    assert none.similar(frozenset(), 1 / 3, 5) == [(0, 1.0)]


@given(long_evolver_histories(), st.booleans())
@settings(max_examples=examples(8), deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_sealed_fold_passing_over_rows_equals_the_wal_fold(
    history: tuple[list[Event], list[int]], compact: bool
) -> None:
    """A segment's rows that only pass through the window are counted, not decoded: the
    state folded from segments (sealed anywhere, compacted or not) equals the state folded
    from the same events left in the WAL, where every row is decoded."""
    import tempfile

    events, seals = history
    with tempfile.TemporaryDirectory() as tmp:
        with EventLog(Path(tmp) / "wal", create=True, durability="none", auto_seal="off") as wal:
            wal.append_many(events)
            want = AdviceEngine(wal, use_cache=False).state()
            want_dump, want_answers = _dump(want), _answers(AdviceEngine(wal, use_cache=False))
        with EventLog(Path(tmp) / "s", create=True, durability="none", auto_seal="off") as log:
            start = 0
            for cut in [*seals, len(events) - 1]:
                log.append_many(events[start : cut + 1])
                log.seal()
                start = cut + 1
            if compact:
                log.compact(small_rows=10_000, target_rows=10_000)
            got = AdviceEngine(log, use_cache=False).state()
            assert _dump(got) == want_dump
            assert (got.applied, got.window_version) == (want.applied, want.window_version)
            assert _answers(AdviceEngine(log, use_cache=False)) == want_answers
