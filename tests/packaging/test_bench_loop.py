"""The closed-loop benchmark runs at a small size, and its Living Memory baseline keeps the
reference's rules (defects included: it is the baseline)."""

from __future__ import annotations

import json
from pathlib import Path

from bench._living_memory import LivingMemory
from bench.bench_loop import ARMS, FAMILIES, World, main


def test_living_memory_baseline_rules() -> None:
    lm = LivingMemory()
    lm.remember("deploy", "deploy the payments service with a canary release")
    lm.remember("deploy", "deploy the payments service with a canary release!")  # dedup: update
    assert len(lm.nodes) == 1
    # IDF ln(N / df) is 0 for every word of a one-node store: nothing can be recalled.
    assert lm.recall("deploy the payments service") == []
    lm.remember("queue", "the queue consumers fall behind")
    got = lm.recall("deploy the payments service")
    assert got == ["[deploy] deploy the payments service with a canary release!"]
    assert lm.nodes[0].accesses == 1 + 2  # one for the dedup update, two per retrieval
    assert lm.recall("bake bread at home") == []
    # A lone branch never compresses (its size is compared with a mean that includes it).
    lone = LivingMemory()
    for i in range(12):
        lone.remember("deploy", f"note {i} about {'abcdefghijkl'[i]}x{i} rollout plan {i * 7}")
    assert len(lone.nodes) == 12 and all(n.active for n in lone.nodes)
    lone.remember("other", "the payments api is slow under load")
    lone.remember("deploy", "one more deploy note about blue green switching")
    assert sum(n.active for n in lone.nodes) == 2  # now it fires: deploy merged into one


def test_world_drifts_and_mixes_unrelated_tasks() -> None:
    w = World(3, 400, 100, 0.2)
    assert len(FAMILIES) >= 8
    assert sum(f is None for f, _ in w.tasks) > 40
    assert w.rights[0] != w.rights[-1]
    assert all(w.rights[i] == w.rights[i - 1] for i in range(1, 100))


def test_bench_loop_runs_small(tmp_path: Path) -> None:
    out = tmp_path / "loop.json"
    argv = ["--seeds", "2", "--episodes", "60", "--drift", "30", "--window", "30",
            "--evolve-every", "20"]  # fmt: skip
    assert main([*argv, "--json", str(out)]) == 0
    summary = json.loads(out.read_text())
    assert list(summary["arms"]) == list(ARMS)
    for arm in ("recall", "recall_ledger", "recall_ledger_evolve", "living_memory", "none"):
        assert summary["arms"][arm]["unrelated_injected"]["mean"] == 0.0
    assert summary["arms"]["last_n"]["unrelated_injected"]["mean"] > 0.0
    assert len(summary["arms"]["none"]["windows"]) == 2
    assert "recall_ledger_minus_this" in summary["arms"]["none"]
    evolved = summary["arms"]["recall_ledger_evolve"]["per_evolve_run"]  # runs at 20 and 40
    assert evolved["written"]["mean"] > 0 and evolved["items"]["mean"] > 0
    assert "per_evolve_run" not in summary["arms"]["recall_ledger"]


def test_an_evolved_pitfall_is_avoided_not_followed() -> None:
    from bench.bench_loop import PITFALL, strategy_in

    pitfall = "Title: deploy x\nDescription: A pitfall\nFailed: use canary (the task failed)."
    assert PITFALL.search(pitfall) and strategy_in(pitfall, "deploy") == "canary"
    assert PITFALL.search("When to use: When the task is to ship\nPattern: failure\nAvoid: x")
    assert not PITFALL.search("To the payments test fails randomly in ci: use retry.")


def test_the_evolve_arm_runs_the_pipeline_it_is_given(tmp_path: Path) -> None:
    out = tmp_path / "loop.json"
    argv = ["--seeds", "1", "--episodes", "45", "--drift", "30", "--window", "45",
            "--evolve-every", "20", "--arms", "recall_ledger_evolve"]  # fmt: skip
    argv += ["--pipeline", "ace"]
    assert main([*argv, "--json", str(out)]) == 0
    evolved = json.loads(out.read_text())["arms"]["recall_ledger_evolve"]["per_evolve_run"]
    assert evolved["written"]["mean"] == 0.0  # ACE alone writes no entries, only retires
    assert evolved["items"]["mean"] > 0
