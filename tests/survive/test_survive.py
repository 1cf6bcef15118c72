"""The survival environments measure, the loop is event-sourced, selection kills poison."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from evolog.eventlog import EventLog
from evolog.projections.energy._ledger import ledger

from evolog.survive._env import StorageEnv, TestSuiteEnv, disk_bytes
from evolog.survive._errors import SurvivalError
from evolog.survive._memory import (
    STORAGE_MEMORIES,
    Memory,
    decide,
    decision_polarity,
    retrieve,
    tokenize,
)
from evolog.survive._project import Project
from evolog.survive._pytestenv import PytestRunner
from evolog.survive._report import aggregate, bootstrap, run_metrics, table
from evolog.survive._run import RunResult, run_arm
from evolog.survive._suite import poison_demo, run_suite
from tests.projections.energy.test_ledger_api import cli


def test_storage_env_measures_bytes_on_disk(tmp_path: Path) -> None:
    env = StorageEnv(tmp_path, seed=3)
    tasks = env.tasks(0)
    assert len(tasks) == 12 and len({t.target for t in tasks}) == 12
    safe = next(t for t in tasks if not t.needed)
    needed = next(t for t in tasks if t.needed)
    sandbox = Path(safe.target).parent
    start = disk_bytes(sandbox)
    assert env.verify(safe, "no opinion").delta == 0.0
    assert env.verify(safe, "they must be retained").delta == 0.0
    freed = env.verify(safe, "these are safe to delete")
    assert freed.delta == safe.size and not Path(safe.target).exists()
    restored = env.verify(needed, "redundant")
    assert restored.delta == -3 * needed.size and Path(needed.target).exists()
    assert disk_bytes(sandbox) == start - safe.size
    assert env.tasks(0) == tasks  # the world of a cycle depends on (seed, cycle) only
    env.close()
    assert not sandbox.exists()


def test_decision_polarity_reads_actions() -> None:
    assert decision_polarity("log files are safe to delete") is True
    assert decision_polarity("db files must be retained") is False
    assert decision_polarity("this is not safe to delete") is None
    assert decision_polarity("never delete reports, they are redundant") is False
    assert decision_polarity("yes") is True and decision_polarity("no") is False
    assert decision_polarity("") is None


def test_retrieval_has_a_relevance_floor_and_ignores_energy_but_for_ties() -> None:
    a = Memory("a", "log files are safe to delete")
    b = Memory("b", "log files are safe to delete")
    c = Memory("c", "the cafeteria opens at eight")
    query = "delete the log file log-01.log?"
    assert [m.id for m in retrieve(query, [a, b, c], {"a": 1.0, "b": 2.0})] == ["b", "a"]
    assert retrieve("what time is lunch served downstairs?", [a, b, c], {}) == []
    d = decide(retrieve(query, [a, b, c], {"a": 3.0}))
    assert (d.decider, d.supporters, d.text) == ("a", ("b",), a.text)
    assert decide([]).text == ""
    assert tokenize("Rotated logs, glass") == ["rotated", "log", "glass"]


def test_test_suite_env_counts_passing_tests_with_pytest(tmp_path: Path) -> None:
    with PytestRunner() as runner:
        env = TestSuiteEnv(tmp_path, seed=2, runner=runner)
        tasks = env.tasks(0)
        kinds = sorted(t.patch for t in tasks)
        assert kinds == ["cosmetic", "destructive", "fix", "fix", "fix"]
        by_kind = {t.patch: t for t in tasks}
        assert env.verify(by_kind["cosmetic"], "should be applied").delta == 0
        assert env.verify(by_kind["fix"], "no opinion").delta == 0
        assert env.verify(by_kind["fix"], "should be applied").delta == 1
        broke = env.verify(by_kind["destructive"], "should be applied").delta
        assert broke <= -1
        env.close()


def test_the_worker_and_a_fresh_pytest_agree(tmp_path: Path) -> None:
    project = Project.generate(tmp_path / "p", random.Random(5), 3)
    counts = []
    for mode in ("worker", "subprocess"):
        with PytestRunner(mode) as runner:  # type: ignore[arg-type]
            counts.append(runner.passed(project.directory))
            project.apply("remove:_normalize")
            counts.append(runner.passed(project.directory))
            project.helper = True
            project.write()
    assert counts[:2] == counts[2:]
    assert counts[0] == 7 and counts[1] < 7


def test_a_survival_run_is_event_sourced_and_executes_the_poison(tmp_path: Path) -> None:
    run = run_arm("survival", StorageEnv(tmp_path / "w", seed=1), STORAGE_MEMORIES, seed=1,
                  cycles=4, store=tmp_path / "s")  # fmt: skip
    view = ledger(tmp_path / "s")
    for poisoned in ("forum-db", "forum-report"):
        entry = view.entry(poisoned)
        assert entry is not None and entry.cause == "executed"
    assert [(g[0], g[1]) for g in run.graveyard] == [(e.id, e.cause) for e in view.graveyard()]
    assert run.poison_alive[-1] == 0
    with EventLog(tmp_path / "s") as log:
        kinds = log.stats()["kinds"]
    assert kinds["attempt"] == kinds["outcome"] == 4 * 12 and kinds["tick"] == 4
    assert view.tick == 4


def test_arms_differ_only_in_who_is_evicted(tmp_path: Path) -> None:
    runs = run_suite("storage", ["survival", "random_matched", "keep_everything"], [4], 4,
                     tmp_path)  # fmt: skip
    survival, random_matched, keep = runs
    assert random_matched.evictions == survival.evictions
    assert keep.population == [len(STORAGE_MEMORIES)] * 4
    assert keep.poison_alive == [2] * 4
    assert run_metrics(survival).killed and not run_metrics(keep).killed
    assert random_matched.population[-1] == len(STORAGE_MEMORIES) - sum(survival.evictions)
    with pytest.raises(SurvivalError, match="arms"):
        run_suite("storage", ["nope"], [0], 1, tmp_path / "x")
    with pytest.raises(SurvivalError, match="env"):
        run_suite("moon", ["survival"], [0], 1, tmp_path / "y")


def test_metrics_and_bootstrap() -> None:
    run = RunResult("survival", "storage", 0, "", deltas=[-5.0, 2.0, -1.0, 3.0, 3.0, 3.0],
                    poison_alive=[1, 0, 0, 0, 0, 0], population=[3] * 6)  # fmt: skip
    m = run_metrics(run)
    assert (m.killed, m.kill_cycle, m.damage_before_kill) == (True, 1, -5.0)
    assert m.tail_delta == pytest.approx(2.0) and m.cum_delta == 5.0
    never = run_metrics(RunResult("keep_everything", "storage", 0, "", deltas=[-1.0, -2.0],
                                  poison_alive=[1, 1], population=[3, 3]))  # fmt: skip
    assert never.kill_cycle is None and never.damage_before_kill == -3.0
    est = bootstrap([1.0, 2.0, 3.0, 4.0], lambda xs: sum(xs) / len(xs))
    assert est.value == 2.5 and est.low is not None and est.high is not None
    assert 1.0 <= est.low <= 2.5 <= est.high <= 4.0
    assert bootstrap([1.0, 2.0], max) == bootstrap([1.0, 2.0], max)  # seeded
    text = table(aggregate([m, never]), "bytes")
    assert "| survival | 1.00" in text and "| keep_everything | 0.00" in text and "never" in text


def test_cli_survive_and_the_demo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(tmp_path, "survive", "--seeds", "1", "--cycles", "4", "--json",
                       "--dir", str(tmp_path / "runs"), capsys=capsys)  # fmt: skip
    doc = json.loads(out)
    assert code == 0 and set(doc["arms"]) == {"survival", "random_matched", "keep_everything"}
    assert doc["arms"]["survival"]["kill_rate"]["value"] == 1.0
    code, out, _ = cli(tmp_path, "survive", "--demo", "--cycles", "3",
                       "--dir", str(tmp_path / "demo"), capsys=capsys)  # fmt: skip
    assert code == 0 and "(POISON)" in out and "still alive: 0" in out
    code, _, err = cli(tmp_path, "survive", "--demo", "--dir", str(tmp_path / "demo"),
                       capsys=capsys)  # fmt: skip
    assert code == 1 and "empty directory" in err
    with pytest.raises(SurvivalError):
        poison_demo(tmp_path / "demo")


@pytest.mark.long
def test_the_headline_suite(tmp_path: Path) -> None:
    runs = run_suite("storage", ["survival", "random_matched", "keep_everything"], range(10),
                     30, tmp_path)  # fmt: skip
    agg = aggregate([run_metrics(r) for r in runs])
    assert agg["survival"]["kill_rate"].value == 1.0
    assert agg["keep_everything"]["kill_rate"].value == 0.0
    assert agg["survival"]["tail_delta"].value > 0 > agg["keep_everything"]["tail_delta"].value
    assert agg["survival"]["cum_delta"].value > agg["random_matched"]["cum_delta"].value
