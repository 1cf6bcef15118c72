"""Applicability: a memory is claimed only when the task is about it, not when words overlap."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from evolog.advice.routing._applicability import (
    ApplicabilityRule,
    NullSample,
    judge,
    null_sample,
    rule_for,
)
from evolog.advice.routing._lexical import LexicalEvidence, terms
from evolog.advice.routing._router import Router, RouterPath
from evolog.dream import dream
from evolog.eventlog import EventLog
from evolog.projections.graph._embed import HashingEmbedder, get_embedder

from bench.bench_router_holdout import build_router, collect, decide, halves, load_holdout, rates
from tests.dream.test_dream_cycle import trace_events

I18N = (
    "extract translatable strings from the Django app into .po files",
    ["wrap user-facing strings in gettext_lazy", "run makemessages -l fr", "commit the .po files"],
)
FASTLANE = (
    "automate TestFlight uploads with fastlane",
    ["create a Fastfile lane calling build_app", "upload_to_testflight with an API key"],
)


def i18n_fastlane_router(path: Path) -> Router:
    """The issue's reproduction: a store of the two traces, dreamed, and its router."""
    with EventLog(path, create=True, durability="none") as log:
        log.append_many(trace_events("i18n", *I18N))
        log.append_many(trace_events("fastlane", *FASTLANE))
        dream(log, embedder=get_embedder())
        return Router.from_log(log)


@pytest.fixture(scope="module")
def router(tmp_path_factory: pytest.TempPathFactory) -> Router:
    return i18n_fastlane_router(tmp_path_factory.mktemp("applicability") / "store")


def _node_of(router: Router, trace: str) -> str:
    return next(n.id for n in router.graph.nodes() if trace in n.traces)


@pytest.mark.parametrize(
    "task",
    [
        "upgrade the Django project from 3.2 to 4.2",  # shares "Django", another job
        "add a REST endpoint to the Django app",
        "write unit tests for the Django models",  # reached the i18n node before the lexical margin
        "implement a trie for fast prefix autocomplete",  # reached the fastlane node (0.38)
    ],
)
def test_shared_vocabulary_does_not_claim_a_memory(router: Router, task: str) -> None:
    # The minimal reproduction: the first went to the i18n node at similarity 0.47,
    # the trie to the fastlane node at 0.38 (its nearest generic task is far, but none of its
    # rare words is the node's: the lexical margin is negative).
    decision = router.route(task)
    assert decision.path is RouterPath.ZERO_SHOT, decision.reasoning
    assert decision.entry is None
    assert "generic task" in decision.reasoning or "floor" in decision.reasoning


@pytest.mark.parametrize(
    ("task", "trace"),
    [
        ("mark the strings in the Django templates for translation into .po files", "i18n"),
        ("upload the iOS beta build to TestFlight with a fastlane lane", "fastlane"),
    ],
)
def test_tasks_about_a_memory_still_reach_it(router: Router, task: str, trace: str) -> None:
    decision = router.route(task)
    assert decision.path is RouterPath.MEMORY_TRAVERSAL, decision.reasoning
    assert decision.entry is not None and decision.entry.node == _node_of(router, trace)
    assert "applies" in decision.reasoning and "generic task" in decision.reasoning


def test_a_rare_domain_term_brings_a_related_task_to_its_node(router: Router) -> None:
    # "makemessages" is in no generic task: its weight carries the task to the i18n node,
    # which the similarity margin alone (0.24 / 0.06 over the best text) turned away.
    decision = router.route("run makemessages for the Spanish locale")
    assert decision.path is RouterPath.MEMORY_TRAVERSAL, decision.reasoning
    assert decision.entry is not None and decision.entry.node == _node_of(router, "i18n")
    assert "lexical +" in decision.reasoning


def test_the_lexical_margin_weighs_rare_terms() -> None:
    lexical = LexicalEvidence(("add a test", "fix a slow test", "add logging"))
    assert terms("Run makemessages; the .po files!") == ("run", "makemessage", "po", "file")
    assert lexical.weight("makemessage") > lexical.weight("test") > 0.0
    task = "add a test for makemessages"
    assert lexical.coverage(task, ["run makemessages -l fr"]) > 0.5
    assert lexical.generic_coverage(task) < 0.5  # "add" and "test" are generic words
    assert lexical.margin(task, ["run makemessages"]) > 0.0
    # A node covering only what a generic task covers gets no lexical credit.
    assert lexical.margin(task, ["add tests"]) == pytest.approx(0.0)
    assert lexical.coverage("the a of", ["anything"]) == 0.0  # no terms at all


def test_judge_takes_the_summary_and_the_lexical_margin() -> None:
    rule = ApplicabilityRule(0.2, 0.05, 0.4, lexical_weight=0.5, summary_margin=True)
    # The margin starts from the summary's similarity (0.30), not the best text's (0.45).
    low = judge(0.45, (0.28, "g"), rule, summary=0.30)
    assert not low.applies and low.margin == pytest.approx(0.02)
    ok = judge(0.45, (0.28, "g"), rule, summary=0.30, lexical=0.2)
    assert ok.applies and ok.margin == pytest.approx(0.12) and ok.lexical == pytest.approx(0.2)
    assert judge(0.45, (0.28, "g"), rule).margin == pytest.approx(0.17)  # no summary: the best


def test_judge_needs_both_the_floor_and_the_margin() -> None:
    rule = ApplicabilityRule(0.3, 0.05)
    assert not judge(0.25, (0.0, ""), rule).applies  # below the floor
    low = judge(0.45, (0.42, "some generic job"), rule)
    assert not low.applies and "'some generic job'" in low.why
    assert low.margin == pytest.approx(0.03)
    ok = judge(0.45, (0.30, "x"), rule)
    assert ok.applies and ok.null_similarity == pytest.approx(0.30)


def test_a_generic_task_about_the_node_is_left_out_of_its_null() -> None:
    emb = HashingEmbedder()
    sample = NullSample(emb, ("add an index to speed up a query", "bake bread at home"))
    task = emb.embed(["speed up the slow query with an index"])[0]
    node = emb.embed(["speed up a slow sql query by adding an index"])
    everyone, generic = sample.nearest(task)
    assert generic == "add an index to speed up a query"
    mine, generic_for_node = sample.nearest(task, node, radius=0.4)
    assert generic_for_node == "bake bread at home" and mine < everyone
    assert sample.nearest(np.zeros(emb.dim, dtype=np.float32)) == (0.0, "")


def test_rules_exist_for_the_shipped_embedders_and_unknown_ones_are_strict() -> None:
    for name in ("wordllama-l2-256", "hashing-1024"):
        assert rule_for(name).min_margin >= 0.0
    assert rule_for("something-else").min_similarity >= 0.5
    assert null_sample(get_embedder()) is null_sample(get_embedder())  # embedded once


def test_held_out_domains_quick_slice(tmp_path: Path) -> None:
    """Part of bench/routing_holdout: four domains, a dozen unrelated tasks, the shipped rule.

    The bench's offline re-decision must agree with the router itself (the cross-validated
    figures in RESULTS.md are computed with it), and the shipped rule must keep the
    unrelated tasks out of memory far better than the old similarity floor.
    """
    domains, unrelated = load_holdout()
    part, un = halves(domains, unrelated, seed=0)[0]
    part = part[:4]
    un = {"software": un["software"][:12], "everyday": un["everyday"][:6]}
    embedder = get_embedder()
    queries = collect(part, un, embedder)
    shipped = rule_for(embedder.name)
    new, old = rates(queries, shipped), rates(queries, ApplicabilityRule(0.30, -9.0, 2.0))
    assert new["software_to_memory"] < old["software_to_memory"], (new, old)
    assert new["unrelated_to_memory"] <= 0.15, new
    assert new["related_right"] >= 0.4, new
    # The same decisions as a router with the default configuration on the same store.
    router = build_router(part, embedder, str(tmp_path / "store"), config=None)
    graph = router.graph
    domain_of = {
        graph.resolve(n.id): t.split("/")[0] for n in graph.nodes(live_only=False) for t in n.traces
    }
    for q in queries:
        decision = router.route(q.task)
        routed = None if decision.entry is None else domain_of.get(decision.entry.node, "?")
        assert routed == decide(q, shipped), q.task


class _Counting:
    """A hashing embedder that counts the texts it embeds."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder()
        self.name, self.dim, self.texts = self.inner.name, self.inner.dim, 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += len(texts)
        return self.inner.embed(texts)


def test_the_null_sample_is_cached_beside_the_index(tmp_path: Path) -> None:
    emb = _Counting()
    first = NullSample(emb, cache=str(tmp_path))
    assert emb.texts == len(first.texts)
    (cached,) = tmp_path.glob("null-hashing-1024-*.f32")
    again = NullSample(emb, cache=str(tmp_path))
    assert emb.texts == len(first.texts)  # loaded, not embedded again
    assert np.array_equal(again.vectors, first.vectors)
    cached.write_bytes(b"not an array")
    repaired = NullSample(emb, cache=str(tmp_path))
    assert emb.texts == 2 * len(first.texts) and np.array_equal(repaired.vectors, first.vectors)
    other = NullSample(emb, ("one generic task",), cache=str(tmp_path))  # other texts, other file
    assert other.vectors.shape == (1, emb.dim) and len(list(tmp_path.glob("null-*.f32"))) == 2


def test_applicability_is_one_call_for_recall() -> None:
    import evolog.advice as advice

    emb = get_embedder()
    node = emb.embed([I18N[0]])
    related = emb.embed(["mark the strings in the Django templates for translation"])[0]
    other = emb.embed(["upgrade the Django project from 3.2 to 4.2"])[0]
    yes = advice.applicability(emb, related, node)
    assert yes.applies and yes.similarity == pytest.approx(float(node[0] @ related), abs=1e-5)
    no = advice.applicability(emb, other, node)
    assert not no.applies and no.nearest_generic
    strict = advice.ApplicabilityRule(0.99, 0.0)
    assert not advice.applicability(emb, related, node, rule=strict).applies
    # With the texts, the lexical margin counts too (rare terms of the task found in the node).
    task = "run makemessages for the Spanish locale"
    vector = emb.embed([task])[0]
    words = advice.applicability(emb, vector, node, task_text=task, node_texts=[I18N[0], *I18N[1]])
    assert words.lexical > 0.0 and words.margin > advice.applicability(emb, vector, node).margin
