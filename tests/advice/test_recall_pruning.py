"""Ranking with a limit scores only what can reach the top, and returns exactly what the
exhaustive ranking would (same items, scores, order, reasons), on random stores, with the
fold in memory and loaded from its checkpoint."""

from __future__ import annotations

import os
import tempfile
from typing import Any

from conftest import examples
from evolog.advice.recall import rank
from evolog.eventlog import Event
from evolog.projections.memory import ItemFold, ItemIndex, MemoryConfig
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import MEMORY_BRANCHES, MEMORY_WORDS, item_events

from evolog import Memory

queries = st.lists(st.sampled_from(MEMORY_WORDS), min_size=1, max_size=5).map(" ".join)
configs = st.builds(
    MemoryConfig,
    retrieval_threshold=st.sampled_from([0.0, 0.05, 0.15, 0.3]),
    min_similarity=st.sampled_from([0.0, 0.1, 0.2, 0.4]),
    min_margin=st.sampled_from([-1.0, 0.0, 0.05]),
    decay_lambda=st.sampled_from([0.0, 0.5, 2.0]),
    backbone_decays=st.booleans(),
)


def exhaustive_top(fold: ItemFold, query: str, cfg: MemoryConfig, limit: int, **kw: Any) -> Any:
    every, null, _ = rank(fold, query, cfg, **kw)
    return [c for c in every if c.applies][:limit], null


@settings(max_examples=examples(120), deadline=None)
@given(
    item_events(),
    queries,
    configs,
    st.integers(0, 12),
    st.lists(st.sampled_from([f"e{i}" for i in range(1, 61)]), max_size=6),
    st.one_of(st.none(), st.lists(st.sampled_from(MEMORY_BRANCHES), max_size=3)),
)
def test_pruned_ranking_equals_the_exhaustive_one(
    events: list[Event],
    query: str,
    cfg: MemoryConfig,
    limit: int,
    dead: list[str],
    branches: list[str] | None,
) -> None:
    fold = ItemFold()
    fold.apply_all(events)
    kw: dict[str, Any] = {"dead": frozenset(dead), "branches": branches}
    want, null = exhaustive_top(fold, query, cfg, limit, **kw)
    got, got_null, considered = rank(fold, query, cfg, limit=limit, **kw)
    assert (got, got_null) == (want, null)
    assert considered == rank(fold, query, cfg, **kw)[2]


def test_a_limit_scores_a_fraction_of_the_candidates(monkeypatch: Any) -> None:
    from evolog.advice.recall import _rank
    from evolog.eventlog import Note

    fold = ItemFold()
    words = [f"w{i}" for i in range(60)]
    fold.apply_all(
        Note(id=f"n{i}", seq=i + 1, text=" ".join(words[(i * k) % 60] for k in (1, 7, 11, 13)))
        for i in range(2000)
    )
    calls = []
    real = _rank._measure
    monkeypatch.setattr(_rank, "_measure", lambda *a: calls.append(1) or real(*a))
    cfg = MemoryConfig(min_similarity=0.0, min_margin=-1.0, retrieval_threshold=0.0)
    every = rank(fold, "w1 w7 w11", cfg)[0]
    exhaustive, calls[:] = len(calls), []
    top = rank(fold, "w1 w7 w11", cfg, limit=10)[0]
    assert top == [c for c in every if c.applies][:10]
    assert exhaustive == len(every) > 100 and len(calls) < exhaustive / 4


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(item_events(max_size=40), st.lists(queries, min_size=1, max_size=4), configs)
def test_pruned_ranking_on_a_loaded_checkpoint(
    events: list[Event], qs: list[str], cfg: MemoryConfig
) -> None:
    """The same through the checkpoint's mapped tables, after more events were folded."""
    with tempfile.TemporaryDirectory(prefix="evolog-prune-") as root:
        store = os.path.join(root, "s")
        half = len(events) // 2
        with Memory(store) as mem:
            mem.append_many([e.__class__(**{**_fields(e), "seq": 0}) for e in events[:half]])
            with mem.log.snapshot() as snap:
                mem._items().refresh(snap, mem.log)
                mem._items().save(snap)
            mem.append_many([e.__class__(**{**_fields(e), "seq": 0}) for e in events[half:]])
        with Memory(store) as mem:
            index = ItemIndex(mem.log.paths)
            with mem.log.snapshot() as snap:
                loaded = index.refresh(snap, mem.log)
            fresh = ItemFold()
            fresh.apply_all(mem.replay())
            for q in qs:
                assert rank(loaded, q, cfg, limit=5) == rank(fresh, q, cfg, limit=5)
                assert rank(loaded, q, cfg) == rank(fresh, q, cfg)
            for fold in (loaded, fresh):
                assert _scoring(fold) == _scoring_of_records(fresh)


def _scoring(fold: ItemFold) -> dict[str, Any]:
    """What ranking reads in place of a record, for every item (the ``scoring`` table)."""
    return {i: fold.scoring(i) for i in sorted(fold.state.items)}


def _scoring_of_records(fold: ItemFold) -> dict[str, Any]:
    """The same, derived from the decoded records: backbone flag and pooled group of the
    active items, nothing for the others."""
    out = {}
    for i in sorted(fold.state.items):
        item = fold.state.items[i]
        out[i] = (item.branch == "backbone", tuple(item.group)) if item.active else (False, ())
    return out


def test_a_limit_decodes_only_the_records_it_returns() -> None:
    """Ranking from a checkpoint scores candidates from small entries (snapshot, evidence,
    ``scoring``) and decodes only the records of the items it returns."""
    from evolog.eventlog import Feedback, Note

    words = [f"w{i}" for i in range(40)]
    with tempfile.TemporaryDirectory(prefix="evolog-prune-") as root:
        with Memory(os.path.join(root, "s")) as mem:
            mem.append_many(
                [
                    Note(
                        text=" ".join(words[(i * k) % 40] for k in (1, 3, 7)),
                        branch="backbone" if i % 7 == 0 else "ops",
                    )
                    for i in range(600)
                ]
            )
            with mem.log.snapshot() as snap:
                index = ItemIndex(mem.log.paths)
                index.refresh(snap, mem.log)
                index.save(snap)
            ids = sorted(index.fold.state.items)
            merged = Note(text="w1 w3", sources=ids[:2])  # a group's evidence pools
            mem.append_many([Feedback(target=ids[3], rating=1.0), merged])
            index = ItemIndex(mem.log.paths)
            with mem.log.snapshot() as snap:
                loaded = index.refresh(snap, mem.log)
            fresh = ItemFold()
            fresh.apply_all(mem.replay())
        table = loaded.state.items
        decoded: list[str] = []
        real = table.peek
        table.peek = lambda key: decoded.append(key) or real(key)  # type: ignore[method-assign]
        cfg = MemoryConfig(min_similarity=0.0, min_margin=-1.0, retrieval_threshold=0.0)
        top, _, considered = rank(loaded, "w1 w3 w7", cfg, limit=5)
        assert considered >= 50 and len(top) == 5
        assert sorted(decoded) == sorted(c.id for c in top)
        assert (top, _) == rank(fresh, "w1 w3 w7", cfg, limit=5)[:2]


def _fields(e: Event) -> dict[str, Any]:
    return {f: getattr(e, f) for f in e.__struct_fields__}
