"""The memory graph fold: nodes, steps, links, constraints, merges, prunes, retractions."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from evolog.eventlog import (
    ChildStep,
    Constraint,
    DreamBegin,
    DreamEnd,
    EventLog,
    Link,
    Mark,
    Merge,
    Node,
    Outcome,
    Prune,
    Retraction,
)
from evolog.projections.graph._memgraph import MemGraph, load_memgraph
from hypothesis import given
from hypothesis import strategies as st


def _node(node: str, cycle: str = "c1", **kw: object) -> Node:
    return Node(cycle=cycle, node=node, goal=kw.pop("goal", f"goal {node}"), **kw)  # type: ignore[arg-type]


def _step(node: str, index: int, action: str, cycle: str = "c1") -> ChildStep:
    return ChildStep(cycle=cycle, node=node, index=index, action=action)


def test_nodes_steps_and_structural_edges() -> None:
    g = MemGraph().apply_all(
        [_node("a", summary="s"), _step("a", 1, "second"), _step("a", 0, "first")]
    )
    assert [s.action for s in g.steps("a")] == ["first", "second"]
    edges = {(e.src, e.dst, e.edge_type) for e in g.edges("a")}
    assert edges == {
        ("a#0", "a", "IS_CHILD_OF"),
        ("a#1", "a", "IS_CHILD_OF"),
        ("a#0", "a#1", "NEXT_STEP"),
        ("a#1", "a#0", "PREVIOUS_STEP"),
    }


def test_restating_a_node_replaces_fields_and_bumps_version() -> None:
    g = MemGraph().apply_all(
        [
            _node("a", summary="old", confidence=0.4),
            _step("a", 0, "x"),
            _node("a", cycle="c2", summary="new", confidence=0.6, isa_version="1.1"),
            _step("a", 0, "y", cycle="c2"),
        ]
    )
    node = g.node("a")
    assert node is not None
    assert (node.summary, node.confidence, node.isa_version, node.version) == (
        "new",
        0.6,
        "1.1",
        2,
    )
    assert [s.action for s in g.steps("a")] == ["y"]


def test_dangling_effects_are_ignored() -> None:
    g = MemGraph().apply_all(
        [
            _node("a"),
            _step("ghost", 0, "x"),
            Link(cycle="c1", src="a", dst="ghost", edge_type="CAUSAL"),
            Link(cycle="c1", src="a", dst="a#3", edge_type="CAUSAL"),
            Merge(cycle="c1", node="ghost", merged="a"),
            Prune(cycle="c1", node="ghost"),
        ]
    )
    assert g.steps("ghost") == ()
    assert g.edges("a") == []
    node = g.node("a")
    assert node is not None and node.live


def test_merge_pools_goals_traces_constraints_and_outcomes() -> None:
    g = MemGraph().apply_all(
        [
            _node("a", goal="fix import", traces=["t1"], confidence=0.5),
            _node("b", goal="repair the import", traces=["t2"], confidence=0.8),
            Constraint(cycle="c1", node="a", trace="t1", description="no sudo"),
            Constraint(cycle="c1", trace="t2", description="no sudo"),
            Constraint(cycle="c1", node="b", trace="t2", description="pin versions"),
            Outcome(action_id="x", status="success", decided_by=["b"], seq=6),
            Merge(cycle="c1", node="a", merged="b", confidence=0.9),
            Outcome(action_id="y", status="failed", supported_by=["a"], seq=8),
        ]
    )
    a, b = g.node("a"), g.node("b")
    assert a is not None and b is not None
    assert (a.confidence, a.version, b.merged_into, b.live) == (0.9, 2, "a", False)
    assert a.trigger_goals == ("fix import", "repair the import")
    assert a.traces == ("t1", "t2")
    views = {(c.description, c.count) for c in g.constraints("a")}
    assert views == {("no sudo", 2), ("pin versions", 1)}
    assert g.outcomes("a") == (1, 1)
    assert g.resolve("b") == "a"
    assert [n.id for n in g.nodes()] == ["a"]


def test_merge_without_confidence_raises_it_and_prune_hides() -> None:
    g = MemGraph().apply_all(
        [
            _node("a", confidence=0.5),
            _node("b", confidence=0.7),
            Merge(cycle="c", node="a", merged="b"),
        ]
    )
    node = g.node("a")
    assert node is not None and node.confidence == pytest.approx(0.8)
    g.apply(Prune(cycle="c", node="a", reason="obsolete"))
    assert list(g.nodes()) == []
    pruned = g.node("a")
    assert pruned is not None and pruned.prune_reason == "obsolete"


def test_cycles_and_consumption() -> None:
    g = MemGraph().apply_all(
        [
            DreamBegin(cycle="c1", dreamer="heuristic", traces=["t1", "t2"]),
            Mark(cycle="c1", trace="t1", index=0, label="noise"),
            DreamEnd(cycle="c1", consumed=["t1", "t2"], phase_log=["x"]),
        ]
    )
    assert g.consumed() == {"t1", "t2"}
    assert g.consumed_by("t2") == "c1"
    (cycle,) = g.cycles()
    assert cycle.ended and cycle.consumed == ("t1", "t2") and cycle.phase_log == ("x",)
    assert [m.label for m in g.marks("t1")] == ["noise"]


def test_overlay_is_copy_on_write() -> None:
    base = MemGraph().apply_all([_node("a", confidence=0.5), _step("a", 0, "x")])
    before = base.state()
    view = base.overlay()
    view.apply_all([_node("b"), _step("a", 1, "y"), Merge(cycle="c", node="a", merged="b")])
    assert base.state() == before
    assert [s.action for s in view.steps("a")] == ["x", "y"]
    assert view.resolve("b") == "a" and base.node("b") is None


def test_retraction_after_load_marks_the_graph_stale() -> None:
    g = MemGraph().apply_all([DreamBegin(cycle="c1"), _node("a")])
    g.apply(Retraction(target_cycle="other"))
    assert not g.stale
    g.apply(Retraction(target_cycle="c1"))
    assert g.stale


def test_load_reads_retractions_first(tmp_path: Path) -> None:
    with EventLog(tmp_path / "s", create=True) as log:
        log.append_many([DreamBegin(cycle="c1"), _node("a"), DreamEnd(cycle="c1", consumed=["t"])])
        log.append_many(
            [
                DreamBegin(cycle="c2"),
                _node("b", cycle="c2"),
                Merge(cycle="c2", node="a", merged="b"),
                DreamEnd(cycle="c2", consumed=["u"]),
            ]
        )
        log.append(Retraction(target_cycle="c1"))
        g = load_memgraph(log)
        # c2's merge into the retracted node is ignored: b stays a live node of its own.
        assert [n.id for n in g.nodes()] == ["b"]
        assert g.consumed() == {"u"}
        assert [c.cycle for c in g.cycles()] == ["c2"]
        # As of before the retraction, the graph had both cycles.
        assert load_memgraph(log, as_of=7).consumed() == {"t", "u"}


_ids = st.sampled_from(["a", "b", "c", "d"])
_events = st.one_of(
    st.builds(lambda n, c: _node(n, confidence=c), _ids, st.floats(0, 1)),
    st.builds(lambda n, i: _step(n, i, f"act{i}"), _ids, st.integers(0, 3)),
    st.builds(lambda a, b: Link(cycle="c1", src=a, dst=b, edge_type="CAUSAL"), _ids, _ids),
    st.builds(lambda a, b: Merge(cycle="c1", node=a, merged=b), _ids, _ids),
    st.builds(lambda a: Prune(cycle="c1", node=a), _ids),
    st.builds(lambda a: Constraint(cycle="c1", node=a, trace="t", description="d"), _ids),
    st.builds(lambda a: Outcome(action_id="x", status="success", decided_by=[a]), _ids),
)


@given(st.lists(_events, max_size=30), st.integers(0, 30))
def test_staging_then_commit_equals_one_fold(events: list[Node], split: int) -> None:
    """Folding a prefix, staging the rest on an overlay, then committing == one fold."""
    whole = MemGraph().apply_all(events)
    base = MemGraph().apply_all(events[:split])
    staged = base.overlay().apply_all(events[split:])
    base.apply_all(events[split:])
    assert base.state() == whole.state()
    assert staged.state() == whole.state()


def test_state_is_plain_data() -> None:
    g = MemGraph().apply_all([_node("a"), _step("a", 0, "x")])
    assert msgspec.json.decode(msgspec.json.encode(g.state())) == g.state()
