"""Genes are memory items: folded from the attempts and outcomes that name them, with their
evidence as text, recalled when the caller's signals match, credited by feedback, and
survival-ledger entries (a dead gene is not recalled unless asked)."""

from __future__ import annotations

import os
from typing import Any

import pytest
from evolog.eventlog import Attempt, Outcome

from evolog import Memory


@pytest.fixture
def mem(tmp_path: Any) -> Memory:
    m = Memory(os.path.join(str(tmp_path), "store"))
    yield m
    m.close()


def tried(mem: Memory, gene: str, signals: list[str], statuses: list[str]) -> None:
    events: list[Any] = []
    for status in statuses:
        aid = f"{gene}-{mem.log.snapshot().head_seq}-{len(events)}"
        events += [
            Attempt(id=aid, action_id=aid, gene=gene, signals=signals, gene_category="repair"),
            Outcome(
                action_id=aid, status=status, gene=gene, delta=1.0 if status == "success" else -1.0
            ),
        ]
    mem.append_many(events)


def test_genes_are_recalled_with_their_evidence_when_the_signals_match(mem: Memory) -> None:
    tried(
        mem,
        "gene_pin_dependency",
        ["dependency_conflict", "build_failure"],
        ["success"] * 3 + ["failed"],
    )
    tried(mem, "gene_retry_network", ["network_timeout"], ["success"])
    mem.remember("ops", "restart nginx after changing its config")

    res = mem.recall("fix the broken build", signals=["dependency_conflict"], record=False)
    genes = [i for i in res.items if i.kind == "gene"]
    assert [g.id for g in genes] == ["gene_pin_dependency"]
    assert genes[0].branch == "genes" and (genes[0].helpful, genes[0].harmful) == (3, 1)
    assert "dependency_conflict" in genes[0].text and "3 succeeded, 1 failed" in genes[0].text
    assert "- Gene [gene_pin_dependency] (helped 3 of 4 uses):" in res.text

    # Without signals (the hook's prompts), or with unrelated ones, no gene is injected.
    assert not [
        i for i in mem.recall("dependency conflict", record=False).items if i.kind == "gene"
    ]
    unrelated = mem.recall("fix it", signals=["disk_full"], record=False)
    assert not [i for i in unrelated.items if i.kind == "gene"]


def test_feedback_on_a_gene_enters_its_quality(mem: Memory) -> None:
    tried(mem, "gene_a", ["flaky_test"], ["success"])
    before = mem.recall("x", signals=["flaky_test"], record=False).items[0]
    mem.feedback("gene_a", "harmful")
    mem.feedback("gene_a", "harmful")
    after = mem.recall("x", signals=["flaky_test"], record=False, threshold=0.0).items[0]
    assert after.id == before.id == "gene_a"
    assert after.harmful == 2 and after.quality < before.quality


def test_a_dead_gene_is_skipped_unless_asked(mem: Memory) -> None:
    tried(mem, "gene_bad", ["oom_kill"], ["failed"] * 4)
    for _ in range(4):
        mem.feedback("gene_bad", "harmful")
    mem.tick()
    assert "gene_bad" in mem.ledger().dead_ids()
    assert mem.recall("memory", signals=["oom_kill"], record=False, threshold=0.0).items == []
    res = mem.recall("memory", signals=["oom_kill"], record=False, threshold=0.0, include_dead=True)
    assert [i.id for i in res.items] == ["gene_bad"]


def test_gene_items_survive_the_checkpoint_and_replay(mem: Memory, tmp_path: Any) -> None:
    tried(mem, "gene_pin_dependency", ["dependency_conflict"], ["success", "failed"])
    want = mem.recall("q", signals=["dependency_conflict"], record=False)
    with mem.log.snapshot() as snap:
        mem._items().save(snap)
    tried(mem, "gene_pin_dependency", ["dependency_conflict", "lockfile_drift"], ["success"])
    with Memory(mem.path) as fresh:  # the checkpoint, then the events appended since
        got = fresh.recall("q", signals=["lockfile_drift"], record=False)
        assert (
            "lockfile_drift" in got.items[0].text and "2 succeeded, 1 failed" in got.items[0].text
        )
        events = list(fresh.replay())
    with Memory(os.path.join(str(tmp_path), "copy")) as copy:
        copy.append_many(events)
        again = copy.recall("q", signals=["lockfile_drift"], record=False)
        assert (again.items, again.text) == (got.items, got.text)
    assert want.items[0].id == got.items[0].id
