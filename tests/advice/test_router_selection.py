"""Selection pressure on routing: a strategy the survival ledger buried is skipped."""

from __future__ import annotations

from pathlib import Path

from evolog.advice.routing._router import Router, RouterPath
from evolog.dream._cycle import dream
from evolog.eventlog import Attempt, EventLog, Lifecycle, Outcome, Step


def _store(tmp_path: Path) -> EventLog:
    log = EventLog(tmp_path / "s", create=True)
    for i in range(3):
        aid = f"a{i}"
        log.append_many(
            [
                Attempt(id=aid, task="resolve a flaky integration test", gene="g_retry"),
                Step(action_id=aid, index=0, action="wrap the call in a retry", ok=True),
                Step(action_id=aid, index=1, action="run the test suite", ok=True),
                Outcome(action_id=aid, status="success", delta=1.0),
            ]
        )
    dream(log)
    return log


def test_buried_strategy_is_skipped_and_explained(tmp_path: Path) -> None:
    log = _store(tmp_path)
    task = "a flaky integration test needs resolving"
    alive = Router.from_log(log).route(task)
    assert alive.path is RouterPath.MEMORY_TRAVERSAL and alive.entry is not None
    node = alive.entry.node
    log.append(Lifecycle(entry=node, op="forget"))
    skipped = Router.from_log(log).route(task)
    assert skipped.path is RouterPath.ZERO_SHOT
    assert f"ledger_skip:{node}:forgotten" in skipped.reasoning
    included = Router.from_log(log, include_dead=True).route(task)
    assert included.entry is not None and included.entry.node == node
    log.close()


def test_advice_skips_buried_genes(tmp_path: Path) -> None:
    from evolog.advice import AdviceEngine

    log = EventLog(tmp_path / "a", create=True)
    for i in range(4):
        log.append_many(
            [
                Attempt(id=f"x{i}", signals=["log_error"], gene="g_good"),
                Outcome(action_id=f"x{i}", status="success", delta=1.0),
            ]
        )
    genes = [{"type": "Gene", "id": "g_good"}, {"type": "Gene", "id": "g_other"}]
    assert AdviceEngine(log).advise(["log_error"], genes).preferred_gene_id == "g_good"
    log.append(Lifecycle(entry="g_good", op="forget"))
    advice = AdviceEngine(log).advise(["log_error"], genes)
    assert advice.preferred_gene_id != "g_good"
    assert "ledger_skip:g_good:forgotten" in advice.explanation
    kept = AdviceEngine(log).advise(["log_error"], genes, include_dead=True)
    assert kept.preferred_gene_id == "g_good"
    compat = AdviceEngine(log).advise(["log_error"], genes, policy="evolver")
    assert compat.preferred_gene_id == "g_good"  # evolver has no ledger: identical decisions
    log.close()
