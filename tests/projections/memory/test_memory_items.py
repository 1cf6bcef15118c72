"""Memory items: remember (dedup, compression, undo), archive, feedback, recall ranking."""

from __future__ import annotations

import os
import shutil

import pytest
from evolog.eventlog import Attempt, Constraint, Feedback, Note, Outcome, Recall, Retraction
from evolog.projections._errors import InvalidParameterError
from evolog.projections.memory import BACKBONE, MemoryConfig

from evolog import Memory

WORD_TEXT = """alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike
november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu"""
WORDS = WORD_TEXT.split()


def distinct(i: int) -> str:
    """A note that shares no content word with ``distinct(j)`` for j != i."""
    return f"{WORDS[i % 26]}{i} {WORDS[(i + 7) % 26]}{i} {WORDS[(i + 13) % 26]}{i} procedure"


@pytest.fixture
def mem(tmp_path: object) -> Memory:
    m = Memory(os.path.join(str(tmp_path), "store"))
    yield m
    m.close()


def test_remember_dedups_within_a_branch_by_superseding(mem: Memory) -> None:
    a = mem.remember("deploy", "Deploy the web service with the blue green script.")
    b = mem.remember("deploy", "deploy the web service with the blue-green script!", ["ops"])
    c = mem.remember("other", "Deploy the web service with the blue green script.")
    assert b.superseded and b.item == a.item
    assert not c.superseded and c.item != a.item
    notes = [e for e in mem.replay(kinds=["note"]) if isinstance(e, Note)]
    assert [n.item for n in notes] == ["", a.item, ""]  # history kept: two events, one item
    res = mem.recall("deploy the web service", record=False, branches=["deploy"])
    assert [i.id for i in res.items] == [a.item]
    assert res.items[0].text == "deploy the web service with the blue-green script!"
    assert res.items[0].tags == ["ops"]


def test_bad_input_is_one_line_and_writes_nothing(mem: Memory) -> None:
    mem.remember("b", "something worth keeping")
    before = mem.log.snapshot().head_seq
    for call in (
        lambda: mem.remember("", "x"),
        lambda: mem.remember("b", "   "),
        lambda: mem.remember("b", "x", tags="notalist"),
        lambda: mem.feedback("no-such-item", "helpful"),
        lambda: mem.feedback("x", "great"),
        lambda: mem.recall("q", budget_chars=-1),
        lambda: mem.recall("q", top_n=1.5),  # type: ignore[arg-type]
        lambda: mem.recall("q", threshold="high"),  # type: ignore[arg-type]
        lambda: mem.recall("q", threshold=float("nan")),
        lambda: mem.recall("q", branches="ops"),
        lambda: mem.compress(undo="nope"),
    ):
        with pytest.raises(InvalidParameterError) as info:
            call()
        assert "\n" not in str(info.value) and "expected" in str(info.value)
    assert mem.log.snapshot().head_seq == before


def test_branch_compression_fires_past_phi_times_the_mean_and_is_undoable(mem: Memory) -> None:
    mem.remember("small", distinct(100))
    results = [mem.remember("big", distinct(i)) for i in range(4)]
    # sizes big=4, small=1: mean 2.5, 4 <= 1.618 * 2.5 = 4.05; the fifth write fires
    # (5 > 1.618 * 3 = 4.85).
    assert all(r.compressed is None for r in results)
    sixth = mem.remember("big", distinct(5))
    assert sixth.compressed is not None
    assert sixth.compressed_sources == [r.item for r in results] + [sixth.item]
    res = mem.recall(distinct(3), record=False)
    assert [i.id for i in res.items] == [sixth.compressed]
    assert WORDS[3] + "3" in res.items[0].text and WORDS[5] + "5" in res.items[0].text
    undo = mem.compress(undo=sixth.compressed)
    assert undo.restored == sixth.compressed_sources
    res = mem.recall(distinct(3), record=False)
    assert [i.id for i in res.items] == [results[3].item]
    assert any(isinstance(e, Retraction) for e in mem.replay(kinds=["retraction"]))


def test_a_lone_branch_compresses_past_phi_times_top_n(mem: Memory) -> None:
    """The reference compares a branch with a mean that includes itself: alone, never."""
    cfg = MemoryConfig(top_n=2)  # phi * 2 = 3.24: the fourth note fires
    out = [mem.remember("only", distinct(i), config=cfg) for i in range(4)]
    assert [r.compressed is not None for r in out] == [False, False, False, True]


def test_backbone_is_never_compressed_nor_decays(mem: Memory) -> None:
    for i in range(30):
        assert mem.remember(BACKBONE, distinct(i)).compressed is None
    mem.remember("other", "kubernetes pods restart in a crash loop")
    for _ in range(20):
        mem.recall("kubernetes pods restart crash loop")
    res = mem.recall(distinct(0), record=False)
    assert res.items[0].branch == BACKBONE and res.items[0].decay == 1.0


def test_decay_is_activity_relative(mem: Memory) -> None:
    a = mem.remember("a", "postgres migration lock timeout").item
    mem.remember("b", "kubernetes pods restart in a crash loop")
    first = mem.recall("postgres migration lock timeout", record=False).items[0]
    for _ in range(10):  # other items are accessed: the postgres note grows inactive
        assert mem.recall("kubernetes pods restart crash loop").recorded is not None
    later = mem.recall("postgres migration lock timeout", record=False).items[0]
    assert later.id == first.id == a
    assert later.decay < first.decay
    # Its own recall (recorded) resets its inactivity.
    mem.recall("postgres migration lock timeout")
    assert mem.recall("postgres migration lock timeout", record=False).items[0].decay == 1.0


def test_each_injected_recall_appends_one_event_counting_each_access_once(mem: Memory) -> None:
    ids = [
        mem.remember("ops", f"restart the {w} service after upgrading it").item
        for w in ("nginx", "redis")
    ]
    res = mem.recall("restart the nginx service after an upgrade", action_id="act-1")
    events = [e for e in mem.replay(kinds=["recall"]) if isinstance(e, Recall)]
    assert len(events) == 1 and events[0].seq == res.recorded
    assert events[0].items == [i.id for i in res.items] and ids[0] in events[0].items
    assert events[0].action_id == "act-1" and events[0].chars == len(res.text)
    mem.recall("anything", record=False)  # brings the index to the head
    assert mem._items().fold.state.accesses[ids[0]] == 1


def test_unrelated_queries_inject_nothing(mem: Memory) -> None:
    mem.remember("deploy", "Deploy the web service with the blue green script.")
    mem.remember("tests", "Flaky integration tests need a retry around the network fixture.")
    for query in ("bake bread at home", "plan a weekend trip to the coast", "hello"):
        res = mem.recall(query)
        assert res.text == "" and res.items == [] and res.recorded is None


def test_feedback_counts_and_credits_the_ledger(mem: Memory) -> None:
    item = mem.remember("ops", "restart nginx after changing its config").item
    other = mem.remember("ops2", "restart nginx after editing the config file").item
    mem.feedback(item, "harmful", "it broke the site")
    mem.feedback(item, "harmful")
    mem.feedback(other, "helpful")
    events = list(mem.replay(kinds=["feedback", "outcome"]))
    assert [type(e).__name__ for e in events] == ["Feedback", "Outcome"] * 3
    fb, credit = events[0], events[1]
    assert isinstance(fb, Feedback) and fb.rating == -1.0 and fb.text == "it broke the site"
    assert isinstance(credit, Outcome) and credit.decided_by == [item] and credit.delta == -1.0
    res = mem.recall("restart nginx after changing the config", record=False)
    assert [i.id for i in res.items] == [other, item]  # helpful ranks above harmful
    assert (res.items[0].helpful, res.items[1].harmful) == (1, 2)
    assert res.items[0].quality == 1.5 and res.items[1].quality == 0.5


def test_outcomes_naming_items_are_evidence(mem: Memory) -> None:
    item = mem.remember("ops", "restart nginx after changing its config").item
    mem.append(Outcome(action_id="x", status="success", supported_by=[item]))
    mem.append(Outcome(action_id="y", status="failed", decided_by=[item]))
    mem.append(Outcome(action_id="z", status="interrupted", decided_by=[item]))
    got = mem.recall("restart nginx config", record=False).items[0]
    assert (got.helpful, got.harmful, got.neutral) == (1, 1, 0)


def test_feedback_on_an_attempt_replaces_its_outcomes_verdict(mem: Memory) -> None:
    item = mem.remember("ops", "restart nginx after changing its config").item

    def counters(m: Memory = mem) -> tuple[int, int, int]:
        got = m.recall("restart nginx config", record=False, include_dead=True).items[0]
        return got.helpful, got.harmful, got.neutral

    mem.append(Outcome(action_id="x", status="success", supported_by=[item]))
    assert counters() == (1, 0, 0)
    mem.feedback(item, "harmful", "it misled me on x", action_id="x")
    assert counters() == (0, 1, 0)  # replaced, not added
    mem.append(Outcome(action_id="x", status="success", decided_by=[item]))
    assert counters() == (0, 1, 0)  # a person's verdict stands over a later outcome
    mem.feedback(item, "neutral", action_id="x")
    assert counters() == (0, 0, 1)  # the last feedback on the pair wins
    mem.feedback(item, "helpful", action_id="y")  # before the attempt's outcome
    mem.append(Outcome(action_id="y", status="failed", supported_by=[item]))
    assert counters() == (1, 0, 1)
    mem.append(Outcome(action_id="z", status="failed", supported_by=[item]))
    mem.append(Outcome(action_id="z", status="success", supported_by=[item]))
    assert counters() == (2, 0, 1)  # one verdict per attempt: its latest outcome's
    mem.feedback(item, "harmful")  # about the item as a whole: evidence of its own
    assert counters() == (2, 1, 1)
    shutil.rmtree(os.path.join(mem.path, "cache"))
    with Memory(mem.path) as rebuilt:
        assert counters(rebuilt) == (2, 1, 1)  # a rebuild from the log agrees


def test_dead_items_are_skipped_unless_asked(mem: Memory) -> None:
    item = mem.remember("ops", "restart nginx after changing its config").item
    for _ in range(4):
        mem.feedback(item, "harmful")
    mem.tick()
    assert item in mem.ledger().dead_ids()
    assert mem.recall("restart nginx config", record=False).items == []
    assert mem.recall("restart nginx config", record=False, include_dead=True).items


def test_note_constraints_and_strategy_items(mem: Memory) -> None:
    item = mem.remember("ops", "restart nginx after changing its config").item
    mem.append(Constraint(node=item, trace="t", description="do not use kill -9 on nginx"))
    got = mem.recall("restart nginx config", record=False)
    assert got.items[0].constraints == ["do not use kill -9 on nginx"]
    assert 'Do not: "do not use kill -9 on nginx"' in got.text


def test_archive_cold_branches(mem: Memory) -> None:
    for i in range(3):
        mem.remember("cold", distinct(i))
    for i in range(3, 6):
        mem.remember("hot", distinct(i))
    for _ in range(3):
        mem.recall(distinct(3))
        mem.recall(distinct(4))
    out = mem.compress()
    assert len(out.archived) == 1
    ((archive, sources),) = out.archived.items()
    assert len(sources) == 3
    res = mem.recall(distinct(1), record=False)
    assert res.items[0].id == archive and "archived" in res.items[0].tags
    assert "was:cold" in res.items[0].tags
    assert mem.compress().archived == {}  # nothing cold is left with three items


def test_recall_with_signals_ends_with_gene_advice(mem: Memory) -> None:
    mem.remember("ops", "restart nginx after changing its config")
    for i in range(4):
        mem.append_many(
            [
                Attempt(id=f"g{i}", action_id=f"g{i}", signals=["log_error"], gene="gene_good"),
                Outcome(action_id=f"g{i}", status="success"),
                Attempt(id=f"b{i}", action_id=f"b{i}", signals=["log_error"], gene="gene_bad"),
                Outcome(action_id=f"b{i}", status="failed"),
            ]
        )
    genes = [{"type": "Gene", "id": "gene_good"}, {"type": "Gene", "id": "gene_bad"}]
    res = mem.recall("restart nginx config", signals=["log_error"], genes=genes, record=False)
    assert res.advice is not None and res.advice["preferredGeneId"] == "gene_good"
    assert "prefer gene gene_good" in res.text and "Avoid genes" in res.text
    assert res.text.index("restart nginx") < res.text.index("prefer gene")
    plain = mem.recall("restart nginx config", record=False)
    assert plain.advice is None and "gene" not in plain.text
