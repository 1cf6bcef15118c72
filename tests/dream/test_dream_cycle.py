"""Dream cycles over a real store: batches, atomicity, determinism, merges, undo, upgrades."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import msgspec
import pytest
from evolog.dream import (
    CycleError,
    DreamConfig,
    HeuristicDreamer,
    IsaRegistry,
    Opcode,
    Trace,
    TraceStep,
    UndoError,
    classify_failure,
    confidence_of,
    dream,
    load_traces,
    parse_program,
    serialize_program,
    undo_cycle,
)
from evolog.dream._cycle import _run_batches
from evolog.dream._dreamer import DreamProgram
from evolog.dream.isa._checked import checked_program
from evolog.dream.isa._program import Instruction
from evolog.eventlog import Attempt, DreamEnd, Event, EventLog, Outcome, Step
from evolog.projections.graph._embed import HashingEmbedder, get_embedder
from evolog.projections.graph._memgraph import load_memgraph
from evolog.projections.graph._vectors import VectorIndex

EMBEDDER = HashingEmbedder()


def trace_events(
    tid: str,
    task: str,
    actions: Sequence[str],
    *,
    status: str = "success",
    failing: Sequence[int] = (),
    error: str | None = None,
    source: str = "real",
) -> list[Event]:
    env = {"agent": "agent-1", "source": source}
    events: list[Event] = [Attempt(id=tid, action_id=tid, task=task, **env)]  # type: ignore[arg-type]
    for i, action in enumerate(actions):
        bad = i in failing
        events.append(
            Step(
                id=f"{tid}.s{i}",
                action_id=tid,
                index=i,
                action=action,
                ok=not bad,
                result="failed" if bad else "done",
                error=error if bad else None,
                **env,
            )  # type: ignore[arg-type]
        )
    events.append(Outcome(id=f"{tid}.o", action_id=tid, status=status, **env))  # type: ignore[arg-type]
    return events


@pytest.fixture
def log(store: Path) -> EventLog:
    return EventLog(store, create=True, durability="none")


def test_traces_become_strategies_with_constraints(log: EventLog) -> None:
    log.append_many(
        trace_events("t1", "fix the yaml import", ["read traceback", "pin pyyaml", "run tests"])
    )
    log.append_many(
        trace_events(
            "t2",
            "deploy the web service",
            ["build image", "push image", "apply manifest"],
            status="failed",
            failing=[2],
            error="timed out waiting for rollout",
        )
    )
    report = dream(log, embedder=EMBEDDER)
    (cycle,) = report.cycles
    assert (report.traces_dreamed, report.remaining, cycle.nodes_created) == (2, 0, 2)
    graph = load_memgraph(log)
    by_goal = {n.goal: n for n in graph.nodes()}
    ok, bad = by_goal["fix the yaml import"], by_goal["deploy the web service"]
    assert [s.action for s in graph.steps(ok.id)] == ["read traceback", "pin pyyaml", "run tests"]
    assert [s.action for s in graph.steps(bad.id)] == ["build image", "push image"]
    assert ok.confidence > bad.confidence
    (constraint,) = graph.constraints(bad.id)
    assert constraint.failure_class == "timeout" and "apply manifest" in constraint.description
    assert graph.constraints(ok.id) == ()
    assert [(m.index, m.label) for m in graph.marks("t2")] == [
        (2, "noise"),
        (0, "critical"),
        (1, "critical"),
    ]
    dreamed = list(log.replay(kinds=["dream_begin", "node", "dream_end"]))
    assert {e.source for e in dreamed} == {"dreamed"}
    assert dreamed[0].id == f"{cycle.cycle}.begin"
    end = dreamed[-1]
    assert isinstance(end, DreamEnd) and sorted(end.consumed) == ["t1", "t2"]
    assert end.isa_text is None  # the heuristic's programs are reproducible; not kept


def test_batches_never_drop_a_trace(log: EventLog) -> None:
    for i in range(23):
        log.append_many(trace_events(f"t{i}", f"task number {i} about topic {i * 7}", ["a", "b"]))
    first = dream(log, embedder=EMBEDDER, config=DreamConfig(batch_size=5, max_traces=7))
    assert [c.traces for c in first.cycles] == [5, 2]
    assert (first.traces_dreamed, first.remaining) == (7, 16)
    rest = dream(log, embedder=EMBEDDER, config=DreamConfig(batch_size=5))
    assert [c.traces for c in rest.cycles] == [5, 5, 5, 1]
    assert load_memgraph(log).consumed() == {f"t{i}" for i in range(23)}
    assert dream(log, embedder=EMBEDDER).cycles == ()


def test_a_selective_dream_leaves_the_other_traces_undreamed(log: EventLog) -> None:
    for i in range(9):
        log.append_many(trace_events(f"t{i}", f"task number {i} about topic {i * 7}", ["a", "b"]))
    even = DreamConfig(select=lambda t: int(t.id[1:]) % 2 == 0, max_traces=3)
    first = dream(log, embedder=EMBEDDER, config=even)
    assert (first.traces_dreamed, first.remaining) == (3, 6)
    assert load_memgraph(log).consumed() == {"t0", "t2", "t4"}
    again = dream(log, embedder=EMBEDDER, config=DreamConfig(select=even.select))
    assert (again.traces_dreamed, again.remaining) == (2, 4)
    rest = dream(log, embedder=EMBEDDER)  # the watermark kept the odd ones for later
    assert (rest.traces_dreamed, rest.remaining) == (4, 0)
    assert load_memgraph(log).consumed() == {f"t{i}" for i in range(9)}


def test_cycle_ids_and_events_are_deterministic(tmp_path: Path) -> None:
    logs = []
    for name in ("a", "b"):
        log = EventLog(tmp_path / name, create=True, durability="none")
        log.append_many(trace_events("t1", "rotate the tls certificate", ["renew", "install"]))
        log.append_many(trace_events("t2", "rotate the tls certificate", ["renew", "install"]))
        dream(log, embedder=EMBEDDER)
        logs.append(log)
    kinds = ["dream_begin", "node", "merge", "dream_end"]
    a, b = ([(e.id, type(e).__name__) for e in lg.replay(kinds=kinds)] for lg in logs)
    assert a == b
    assert load_memgraph(logs[0]).state()["nodes"] == load_memgraph(logs[1]).state()["nodes"]


def test_the_dreamed_graph_equals_a_replay(log: EventLog) -> None:
    for i in range(6):
        status = "failed" if i % 3 == 0 else "success"
        log.append_many(
            trace_events(
                f"t{i}",
                "speed up the orders query",
                ["explain", "index"],
                status=status,
                failing=[1] if status == "failed" else [],
            )
        )
    graph = load_memgraph(log)
    traces = sorted(load_traces(log).values(), key=lambda t: t.seq)
    index = VectorIndex(EMBEDDER)
    _run_batches(log, graph, traces, HeuristicDreamer(), index, DreamConfig(batch_size=4), None)
    assert graph.state() == load_memgraph(log).state()
    (node,) = list(graph.nodes())  # same task, same approach: one strategy
    assert len(node.traces) == 6 and graph.constraints(node.id)[0].count == 2


def test_different_approaches_stay_separate_and_get_linked(log: EventLog) -> None:
    log.append_many(trace_events("t1", "speed up the orders query", ["explain", "add index"]))
    log.append_many(trace_events("t2", "speed up the orders query", ["add cache", "warm cache"]))
    report = dream(log, embedder=EMBEDDER)
    graph = load_memgraph(log)
    assert len(list(graph.nodes())) == 2 and report.cycles[0].links == 1
    (edge,) = [e for e in graph.edges() if e.edge_type == "SIMILAR_TO"]
    assert {edge.src, edge.dst} == {n.id for n in graph.nodes()}


class _BrokenDreamer(HeuristicDreamer):
    """Writes a program naming a node that does not exist for one trace."""

    def dream_trace(self, trace: Trace) -> DreamProgram:
        if trace.id == "t3":
            return DreamProgram("BUILD_CHILD node-missing 0 r a x\nHALT\n", trace.id)
        return super().dream_trace(trace)


def test_a_failing_cycle_appends_nothing(log: EventLog) -> None:
    for i in range(5):
        log.append_many(trace_events(f"t{i}", f"task {i}", ["a"]))
    before = log.stats()["events"]
    with pytest.raises(CycleError, match=r"t3.*'node-missing' does not exist"):
        dream(log, dreamer=_BrokenDreamer(), embedder=EMBEDDER)
    assert log.stats()["events"] == before
    assert load_memgraph(log).consumed() == frozenset()


def test_undo_makes_traces_undreamed_and_cascades(log: EventLog) -> None:
    log.append_many(trace_events("t1", "renew the tls certificate", ["renew", "install"]))
    first = dream(log, embedder=EMBEDDER).cycles[0].cycle
    log.append_many(trace_events("t2", "renew the tls certificate", ["renew", "install"]))
    second = dream(log, embedder=EMBEDDER).cycles[0].cycle
    assert len(list(load_memgraph(log).nodes())) == 1  # t2 merged into t1's node
    with pytest.raises(UndoError, match="1 later cycle"):
        undo_cycle(log, first)
    undone = undo_cycle(log, first, cascade=True, reason="bad dream")
    assert [r.target_cycle for r in undone] == [first, second]
    graph = load_memgraph(log)
    assert list(graph.nodes()) == [] and graph.consumed() == frozenset()
    with pytest.raises(UndoError, match="already undone"):
        undo_cycle(log, first)
    with pytest.raises(UndoError, match="expected the id of a dream cycle"):
        undo_cycle(log, "dream-nope")
    again = dream(log, embedder=EMBEDDER)
    assert again.traces_dreamed == 2 and again.cycles[0].cycle not in (first, second)
    assert len(list(load_memgraph(log).nodes())) == 1


def _registry(fail: bool = False) -> IsaRegistry:
    registry = IsaRegistry()
    registry.register("1.0", Opcode)

    def upgrade(inst: Instruction) -> list[Instruction]:
        if fail:
            raise RuntimeError("transform broke")
        if inst.opcode is Opcode.BUILD_PARENT:
            goal, summary, conf = inst.args
            return [Instruction(inst.opcode, (goal, "[risk: low] " + summary, conf))]
        return [inst]

    registry.register("1.1", Opcode, previous="1.0", upgrade=upgrade)
    return registry


def test_reconsolidation_upgrades_old_nodes_and_retries_failures(log: EventLog) -> None:
    log.append_many(trace_events("t1", "back up the database", ["dump", "upload"]))
    dream(log, embedder=EMBEDDER, config=DreamConfig(registry=_registry()))
    failed = dream(
        log, embedder=EMBEDDER, config=DreamConfig(registry=_registry(fail=True), isa_version="1.1")
    )
    assert "transform broke" in " ".join(failed.cycles[0].phase_log)
    (node,) = load_memgraph(log).nodes()
    assert node.isa_version == "1.0"
    done = dream(
        log, embedder=EMBEDDER, config=DreamConfig(registry=_registry(), isa_version="1.1")
    )
    assert done.traces_dreamed == 0 and len(done.cycles) == 1
    graph = load_memgraph(log)
    (node,) = graph.nodes()
    assert (node.isa_version, node.version) == ("1.1", 2)
    assert node.summary.startswith("[risk: low] ")
    assert [s.action for s in graph.steps(node.id)] == ["dump", "upload"]


def test_compaction_shortens_long_summaries(log: EventLog) -> None:
    actions = [f"carefully perform the elaborate preparation step number {i}" for i in range(6)]
    log.append_many(trace_events("t1", "prepare the release", actions))
    dream(log, embedder=EMBEDDER)
    (node,) = load_memgraph(log).nodes()
    assert len(node.summary) > 200
    report = dream(log, embedder=EMBEDDER, config=DreamConfig(compaction=True))
    assert "compaction: 1 node(s) compacted" in report.cycles[0].phase_log
    (node,) = load_memgraph(log).nodes()
    assert len(node.summary) <= 200 and node.version == 2


def test_heuristic_marks_retries_as_noise() -> None:
    trace = Trace(
        id="t",
        task="install deps",
        status="success",
        steps=tuple(
            msgspec.convert(s, type=TraceStep)
            for s in (
                {
                    "index": 0,
                    "action": "pip install",
                    "tool": "bash",
                    "ok": False,
                    "error": "EACCES",
                },
                {"index": 1, "action": "pip install", "tool": "bash"},
                {"index": 2, "action": "run tests"},
            )
        ),
    )
    program = HeuristicDreamer().dream_trace(trace)
    assert program.instructions is not None
    text = serialize_program(program.instructions)
    assert parse_program(text).instructions == checked_program(program.instructions).instructions
    assert "MARK_NOISE t 0" in text and "MARK_CRITICAL t 1" in text
    assert "EXTRACT_CONSTRAINT" not in text  # the outcome succeeded


@pytest.mark.parametrize(
    ("text", "cls"),
    [
        ("Timed out after 30s", "timeout"),
        ("Permission denied: /etc", "permission_denied"),
        ("AssertionError in test_io", "test_failure"),
        ("ModuleNotFoundError: yaml", "environment"),
        ("TypeError: 'NoneType'", "logic_error"),
        ("weird", "unknown_failure"),
    ],
)
def test_failure_classes(text: str, cls: str) -> None:
    assert classify_failure(text) == cls


def test_confidence_comes_from_the_outcome() -> None:
    # Laplace after one outcome; the agent's own score does not move it (issue 17.6).
    assert confidence_of(Trace(id="a", status="success")) == 0.667
    assert confidence_of(Trace(id="a", status="failed")) == 0.333
    assert confidence_of(Trace(id="a", status="success", score=0.4)) == 0.667
    assert confidence_of(Trace(id="a", status="partial")) == 0.5


def test_default_embedder_dreams_offline(log: EventLog) -> None:
    log.append_many(trace_events("t1", "fix the flaky login test", ["rerun", "add wait"]))
    assert dream(log, embedder=get_embedder()).traces_dreamed == 1


def test_handed_over_instructions_are_checked_like_parsed_lines() -> None:
    program = checked_program(
        [
            Instruction(Opcode.BUILD_PARENT, ("g", "s", "1.5")),
            Instruction(Opcode.MARK_CRITICAL, ("t", "-1")),
            Instruction(Opcode.LNK_NODE, ("a", "b", "causal")),
            Instruction(Opcode.BUILD_CHILD, ("$LAST_PARENT", "0", "a\nb", "x", "y")),
            Instruction(Opcode.NOP, ("extra",)),
            Instruction(Opcode.HALT),
            Instruction(Opcode.NOP),
        ]
    )
    assert [d.code.value for d in program.diagnostics] == [
        "out-of-range", "bad-int", "invalid-unicode", "arity",
    ]  # fmt: skip
    assert [(i.opcode, i.args, i.line) for i in program.instructions] == [
        (Opcode.LNK_NODE, ("a", "b", "CAUSAL"), 3),
        (Opcode.HALT, (), 6),
    ]


def test_a_retried_cycle_appends_nothing_twice(log: EventLog) -> None:
    from evolog.dream._cycle import _append_cycle, _build_cycle

    log.append_many(trace_events("t1", "renew the tls certificate", ["renew", "install"]))
    traces = list(load_traces(log).values())
    graph = load_memgraph(log)
    config = DreamConfig()
    builds = [
        _build_cycle(graph, traces, HeuristicDreamer(), VectorIndex(EMBEDDER), config,
                     True, True, lambda n: None)
        for _ in range(2)
    ]  # fmt: skip
    assert builds[0].cycle == builds[1].cycle
    first = _append_cycle(log, graph, builds[0], traces, HeuristicDreamer())
    size = log.stats()["events"]
    again = _append_cycle(log, load_memgraph(log), builds[1], traces, HeuristicDreamer())
    assert not first.duplicate and again.duplicate
    assert log.stats()["events"] == size


def _dream_twins(stores: Sequence[EventLog], events: Sequence[Event], **kw: object) -> None:
    """Append to both stores and dream both; the second dreams with its caches deleted."""
    import shutil

    for i, store in enumerate(stores):
        if events:
            store.append_many(events)
        if i:
            shutil.rmtree(store.paths.cache, ignore_errors=True)
        dream(store, embedder=EMBEDDER, config=DreamConfig(**kw))  # type: ignore[arg-type]


def test_dreams_that_read_only_new_traces_equal_dreams_that_read_all(tmp_path: Path) -> None:
    twins = [EventLog(tmp_path / n, create=True, durability="none") for n in ("inc", "full")]
    open_attempt = trace_events("t4", "speed up the orders query", ["add an index"])
    _dream_twins(twins, trace_events("t1", "fix the yaml import", ["pin pyyaml", "run tests"]))
    _dream_twins(
        twins,
        [
            *trace_events("t2", "repair the yaml import", ["pin pyyaml", "run tests"]),
            *trace_events("t3", "a flaky test", ["retry", "quarantine"], status="failed"),
            *open_attempt[:-1],  # no outcome yet
        ],
        max_traces=1,
    )
    _dream_twins(twins, [open_attempt[-1]])  # the open attempt completes; t3 still waits
    cycle = load_memgraph(twins[0]).cycles()[-1].cycle
    for store in twins:
        undo_cycle(store, cycle)
    _dream_twins(twins, trace_events("t5", "rotate the tls certificate", ["renew", "reload"]))
    _dream_twins(twins, [])
    graphs = [load_memgraph(store) for store in twins]
    assert msgspec.json.encode(graphs[0].state()) == msgspec.json.encode(graphs[1].state())
    assert graphs[0].consumed() == {"t1", "t2", "t3", "t4", "t5"}
    events = [[(type(e), e.id) for e in store.replay()] for store in twins]
    assert events[0] == events[1]
