"""Recall's strategy is the router's: one retrieval and applicability path for route,
recall, the hook, the server and MCP, so they cannot disagree (issue 28.1)."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from evolog.advice import RouterPath
from evolog.eventlog import EventLog, Node, Recall
from evolog.projections.memory import STRATEGY
from hypothesis import HealthCheck, given, settings
from strategies import routed_stores

from evolog import Memory


def _store(root: Path, nodes: list[tuple[str, str, float]]) -> None:
    with Memory(root) as mem:
        mem.remember("notes", "The CI runners are shared with the nightly build.")
        mem.append_many([Node(cycle="c1", node=n, goal=goal, confidence=c) for n, goal, c in nodes])


def _routed(mem: Memory, task: str) -> str | None:
    decision = mem.route(task)
    if decision.path is RouterPath.MEMORY_TRAVERSAL and decision.entry is not None:
        return decision.entry.node
    return None


def _recalled_strategy(mem: Memory, task: str) -> str | None:
    found = mem.recall(task, record=False)
    strategies = [i.id for i in found.items if i.kind == STRATEGY]
    assert len(strategies) <= 1, strategies
    return strategies[0] if strategies else None


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=routed_stores())
def test_recall_injects_the_strategy_route_returns(
    case: tuple[list[tuple[str, str, float]], list[str]],
) -> None:
    nodes, tasks = case
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "store"
        _store(root, nodes)
        with Memory(root) as mem:
            for task in tasks:
                assert _recalled_strategy(mem, task) == _routed(mem, task), task


def test_vocabulary_alone_injects_no_strategy(tmp_path: Path) -> None:
    # The case: "sort the import statements" shares words with an import-error
    # strategy; route says it does not apply, and recall now says the same.
    root = tmp_path / "store"
    _store(root, [("n-mod", "ModuleNotFoundError: No module named requests when running", 0.9)])
    with Memory(root) as mem:
        task = "sort the import statements at the top of the python file alphabetically"
        assert _routed(mem, task) is None
        assert _recalled_strategy(mem, task) is None
        same = "ModuleNotFoundError: No module named requests when running the app"
        assert _routed(mem, same) == "n-mod" == _recalled_strategy(mem, same)


def test_the_recall_event_names_the_encoder_that_decided(tmp_path: Path) -> None:
    root = tmp_path / "store"
    _store(root, [("n-ci", "fix the flaky integration test that times out in CI", 0.9)])
    with Memory(root) as mem:
        found = mem.recall("fix the flaky integration test that times out in CI")
        assert [i.id for i in found.items][:1] == ["n-ci"]
        assert found.encoder == "wordllama-l2-256"
    with EventLog(root) as log:
        recalls = [e for e in log.replay() if isinstance(e, Recall)]
    assert recalls and recalls[-1].encoder == "wordllama-l2-256"


def test_a_cold_process_routes_with_the_lean_encoder(tmp_path: Path) -> None:
    # The strong encoder is for a long-lived process that loaded it; a cold one, as the
    # hook is, must not pay for it (nor import onnxruntime).
    root = tmp_path / "store"
    _store(root, [("n-ci", "fix the flaky integration test that times out in CI", 0.9)])
    code = (
        "import sys, json; from evolog import Memory;"
        "m = Memory(sys.argv[1]); r = m.recall('fix the flaky integration test in CI',"
        " record=False); m.close();"
        "print(json.dumps([r.encoder, 'onnxruntime' in sys.modules]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(root)], capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout) == ["wordllama-l2-256", False]


def test_a_process_that_loaded_the_strong_encoder_routes_and_records_with_it(
    tmp_path: Path,
) -> None:
    # As the worker does: prefer_strong() loads minilm when its packages are installed (it
    # answers None, changing nothing, when they are not), and from then on route and recall
    # use it, and the recall event names it, model version included.
    root = tmp_path / "store"
    _store(root, [("n-ci", "fix the flaky integration test that times out in CI", 0.9)])
    code = (
        "import sys, json; from evolog import Memory;"
        "from evolog.projections.graph._embed import prefer_strong;"
        "name = prefer_strong(); m = Memory(sys.argv[1]);"
        "r = m.recall('the integration test in CI is flaky and times out');"
        "d = m.route('the integration test in CI is flaky and times out'); m.close();"
        "print(json.dumps([name, r.encoder, [i.id for i in r.items if i.kind == 'strategy'],"
        " d.entry.node if d.entry else None]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(root)], capture_output=True, text=True, check=True
    )
    name, encoder, recalled, routed = json.loads(out.stdout)
    assert encoder == (name or "wordllama-l2-256")
    assert recalled == ([routed] if routed else [])
    with EventLog(root) as log:
        recalls = [e for e in log.replay() if isinstance(e, Recall)]
    assert not recalls or recalls[-1].encoder == encoder
