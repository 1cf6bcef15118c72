"""A strategy node's successes and failures: the traces it was dreamed from and the outcomes
naming it, each try once, whatever the order of outcomes and dreams (issue 17, item 6)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import msgspec
from evolog.dream import HeuristicDreamer, dream, undo_cycle
from evolog.eventlog import Attempt, Event, EventLog, Merge, Node, Outcome, Prune
from evolog.projections.graph._cache import cached_memgraph, graph_views
from evolog.projections.graph._checkpoint import read_head
from evolog.projections.graph._embed import HashingEmbedder
from evolog.projections.graph._memgraph import MemGraph, load_memgraph
from hypothesis import given
from strategies import GRAPH_NODES, tried_dreams


def _try(tid: str, status: str, **kw: object) -> list[Event]:
    return [Attempt(id=tid, action_id=tid, task="x"), Outcome(action_id=tid, status=status, **kw)]  # type: ignore[arg-type]


def _node(node: str, traces: Sequence[str], cycle: str = "c1") -> Node:
    return Node(cycle=cycle, node=node, goal=f"goal {node}", traces=list(traces))


def _counts(log: EventLog, nodes: Sequence[str]) -> dict[str, tuple[int, int]]:
    """The counts of a fresh fold, checked against the checkpoint's graph and views."""
    full = load_memgraph(log)
    counts = {n: full.outcomes(n) for n in nodes}
    assert {n: cached_memgraph(log).outcomes(n) for n in nodes} == counts
    assert {n: graph_views(log).outcomes(n) for n in nodes} == counts
    return counts


def test_a_node_counts_the_traces_it_was_dreamed_from(tmp_path: Path) -> None:
    with EventLog(tmp_path / "s", create=True, durability="none") as log:
        log.append_many([*_try("t1", "success"), *_try("t2", "failed"), *_try("t3", "partial")])
        log.append_many([_node("a", ["t1"]), _node("b", ["t2", "t3"]), _node("c", ["t9"])])
        # Before: every node showed 0 and 0, as no outcome named it.
        assert _counts(log, "abc") == {"a": (1, 0), "b": (0, 1), "c": (0, 0)}


def test_an_outcome_after_the_dream_counts_as_one_before_it(tmp_path: Path) -> None:
    with EventLog(tmp_path / "s", create=True, durability="none") as log:
        log.append(_node("a", ["t1", "t2"]))
        graph_views(log)  # the checkpoint, then the tries arrive
        log.append_many([*_try("t1", "success"), *_try("t2", "failed")])
        log.append(Attempt(id="t9", action_id="nobody", task="x"))  # names no node's trace
        log.append(Outcome(action_id="nobody", status="success"))
        assert _counts(log, "a") == {"a": (1, 1)}


def test_an_outcome_naming_one_of_its_own_traces_counts_once(tmp_path: Path) -> None:
    with EventLog(tmp_path / "s", create=True, durability="none") as log:
        log.append_many([*_try("t1", "success"), _node("a", ["t1"]), _node("b", [])])
        graph_views(log)
        # The node's own trace, re-graded and named by its outcome: one try, as last graded.
        log.append(Outcome(action_id="t1", status="failed", decided_by=["a", "b"]))
        assert _counts(log, "ab") == {"a": (0, 1), "b": (0, 1)}
        log.append(Outcome(action_id="t1", status="success", decided_by=["a"]))
        # A try of its own (no attempt), named twice by one outcome.
        log.append(Outcome(action_id="loose", status="success", decided_by=["a"],
                           supported_by=["a"]))  # fmt: skip
        assert _counts(log, "ab") == {"a": (2, 0), "b": (1, 0)}


def test_merges_pool_tries_once_and_prunes_keep_theirs(tmp_path: Path) -> None:
    with EventLog(tmp_path / "s", create=True, durability="none") as log:
        log.append_many([*_try("t1", "success"), *_try("t2", "failed"), *_try("t3", "success")])
        log.append_many([_node("a", ["t1", "t2"]), _node("b", ["t2", "t3"]), _node("c", ["t1"])])
        log.append(Outcome(action_id="t3", status="success", decided_by=["a"]))  # re-grade
        assert _counts(log, "abc") == {"a": (2, 1), "b": (1, 1), "c": (1, 0)}
        log.append_many(
            [
                Merge(cycle="c1", node="a", merged="b"),
                Merge(cycle="c1", node="a", merged="c"),
                Prune(cycle="c1", node="a"),
            ]
        )
        # t1..t3 once each, not t1 and t2 twice; the merged nodes keep their own counts.
        assert _counts(log, "abc") == {"a": (2, 1), "b": (1, 1), "c": (1, 0)}


def test_undoing_a_dream_gives_its_traces_to_the_next_one(tmp_path: Path) -> None:
    with EventLog(tmp_path / "s", create=True, durability="none") as log:
        log.append_many(_try("t1", "success"))
        embedder = HashingEmbedder()
        first = dream(log, dreamer=HeuristicDreamer(), embedder=embedder).cycles[0]
        [node] = [n.id for n in load_memgraph(log).nodes()]
        assert _counts(log, [node]) == {node: (1, 0)}
        graph_views(log)
        undo_cycle(log, first.cycle)
        assert _counts(log, [node]) == {node: (0, 0)}  # gone with its cycle
        dream(log, dreamer=HeuristicDreamer(), embedder=embedder)
        [again] = [n.id for n in load_memgraph(log).nodes()]
        assert _counts(log, [again]) == {again: (1, 0)}


def test_a_checkpoint_of_the_old_format_is_rebuilt_not_trusted(tmp_path: Path) -> None:
    with EventLog(tmp_path / "s", create=True, durability="none") as log:
        log.append_many([*_try("t1", "success"), _node("a", ["t1"])])
        directory = os.path.join(log.paths.cache, "graph")
        head = read_head(directory)
        assert graph_views(log).outcomes("a") == (1, 0) and head is None
        head = read_head(directory)
        assert head is not None
        # As the last format-1 writer left it; its views held counts without the traces.
        old = msgspec.structs.replace(head, format=1)
        with open(os.path.join(directory, "head.msgpack"), "wb") as f:
            f.write(msgspec.msgpack.encode(old))
        assert read_head(directory) is None
        views = graph_views(log)
        assert views.outcomes("a") == (1, 0) and views.generation != head.generation


def _fold(events: Sequence[Event]) -> MemGraph:
    # Seqs as the log would give them in this order.
    return MemGraph().apply_all(
        msgspec.structs.replace(e, seq=i + 1)  # type: ignore[misc]
        for i, e in enumerate(events)
    )


def _oracle(dreams: Sequence[Event], tries: Sequence[Event]) -> dict[str, tuple[int, int]]:
    """Each node's group counts its distinct tries (its traces, and the attempts of outcomes
    naming a member), every try by its attempt's last outcome."""
    graph = _fold(dreams)
    actions: dict[str, str] = {}
    last: dict[str, str] = {}
    named: dict[str, set[str]] = {}
    for e in tries:
        if isinstance(e, Attempt):
            actions[e.action_id] = e.id
        elif isinstance(e, Outcome):
            last[actions[e.action_id]] = e.status
            for ref in e.decided_by:
                if graph.node(ref) is not None:
                    named.setdefault(ref, set()).add(actions[e.action_id])
    out = {}
    for node in GRAPH_NODES:
        if graph.node(node) is None:
            continue
        group: set[str] = set()
        for member in graph.group(node):
            record = graph.node(member)
            group |= set(record.traces if record is not None else ()) | named.get(member, set())
        statuses = [last.get(t) for t in group]
        out[node] = (statuses.count("success"), statuses.count("failed"))
    return out


def _counted(graph: MemGraph) -> dict[str, tuple[int, int]]:
    return {n: graph.outcomes(n) for n in GRAPH_NODES if graph.node(n) is not None}


@given(tried_dreams())
def test_counts_do_not_depend_on_whether_outcomes_come_before_the_dream(
    streams: tuple[list[Event], list[Event], list[bool]],
) -> None:
    dreams, tries, order = streams
    expected = _oracle(dreams, tries)
    assert _counted(_fold([*dreams, *tries])) == expected
    # An outcome naming a node that does not exist yet is not credited to it, so outcomes
    # that come first name none; their attempts still count for the nodes dreamed from them.
    anonymous = [msgspec.structs.replace(e, decided_by=[]) if isinstance(e, Outcome) else e
                 for e in tries]  # fmt: skip
    unnamed = _oracle(dreams, anonymous)
    left, right = iter(dreams), iter(anonymous)
    mixed = [next(left) if take else next(right) for take in order]
    for events in ([*dreams, *anonymous], [*anonymous, *dreams], mixed):
        assert _counted(_fold(events)) == unnamed


def test_tries_are_added_in_place_and_an_overlay_never_changes_its_base() -> None:
    """A node named by n outcomes costs n appends, not n copies of a growing tuple (40,000
    outcomes took 16 s that way); the overlay a dream stages into copies a node's tries on
    its first write and leaves the graph under it as it was."""
    events: list[Event] = [_node("s1", [])]
    for i in range(300):
        events += _try(f"a{i}", "success" if i % 3 else "failed", decided_by=["s1"])
    base = MemGraph(frozenset(), frozenset())
    for seq, e in enumerate(events, 1):
        base.apply(msgspec.structs.replace(e, seq=seq))
    held = base._credits["s1"]
    base.apply(msgspec.structs.replace(_try("b", "success", decided_by=["s1"])[0], seq=1001))
    base.apply(msgspec.structs.replace(_try("b", "success", decided_by=["s1"])[1], seq=1002))
    assert base._credits["s1"] is held and base.outcomes("s1") == (201, 100)
    view = base.overlay()
    for seq, e in enumerate(_try("c", "failed", decided_by=["s1"]), 2000):
        view.apply(msgspec.structs.replace(e, seq=seq))
    assert view.outcomes("s1") == (201, 101) and base.outcomes("s1") == (201, 100)
    assert base._credits["s1"] is held and len(held) == 301
