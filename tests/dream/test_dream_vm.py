"""The VM: opcode events staged on an overlay, checked references, fail-fast programs."""

from __future__ import annotations

import pytest
from evolog.dream import parse_program
from evolog.dream._traces import Trace, TraceStep
from evolog.dream.isa._vm import VMContext, VMResult, run_program
from evolog.eventlog import ChildStep, Constraint, Link, Mark, Merge, Node, Prune
from evolog.projections.graph._memgraph import MemGraph

TRACE = Trace(
    id="t1",
    task="fix import",
    status="failed",
    steps=(TraceStep(0, action="read"), TraceStep(1, action="pin"), TraceStep(2, action="test")),
)


def run(text: str, **kw: object) -> VMResult:
    program = parse_program(text)
    assert program.ok, program.diagnostics
    return run_program(program, VMContext(**kw))  # type: ignore[arg-type]


def test_a_full_program_becomes_events_in_order() -> None:
    result = run(
        """
        EXTRACT_CONSTRAINT t1 "never pip install as root" permission_denied
        MARK_NOISE t1 0
        MARK_CRITICAL t1 1
        BUILD_PARENT "fix import" "pin the dependency" 0.75
        BUILD_CHILD $LAST_PARENT 0 "it was missing" "pin" "ok"
        BUILD_CHILD $LAST_PARENT 1 "check" "test" "green"
        LNK_NODE node-run-1#0 node-run-1#1 CAUSAL
        YIELD all done
        HALT
        """,
        traces={"t1": TRACE},
        trace="t1",
    )
    assert result.success and result.error is None
    kinds = [type(e) for e in result.events]
    assert kinds == [Constraint, Mark, Mark, Node, ChildStep, ChildStep, Link]
    constraint, noise, critical, node = result.events[:4]
    assert isinstance(constraint, Constraint) and constraint.node == "node-run-1"
    assert constraint.failure_class == "permission_denied"
    assert isinstance(noise, Mark) and (noise.label, noise.index) == ("noise", 0)
    assert isinstance(critical, Mark) and critical.label == "critical"
    assert isinstance(node, Node)
    assert (node.node, node.confidence, node.traces) == ("node-run-1", 0.75, ["t1"])
    assert result.output == ("all done",)
    assert result.built == ("node-run-1",)
    assert result.instructions_executed == 9  # HALT counts


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("BUILD_CHILD $LAST_PARENT 0 r a x", "before any BUILD_PARENT"),
        ("BUILD_CHILD nowhere 0 r a x", "'nowhere' does not exist"),
        (
            "BUILD_PARENT g s 0.5\nBUILD_CHILD $LAST_PARENT 0 r a x\n"
            "BUILD_CHILD $LAST_PARENT 0 r b y",
            "already has a step 0",
        ),
        ("MARK_CRITICAL t1 3", "outside trace 't1' (3 steps)"),
        ("MARK_NOISE t9 0", "'t9' is not a trace of this cycle"),
        ('EXTRACT_CONSTRAINT t9 "x"', "'t9' is not a trace"),
        ("BUILD_PARENT g s 0.5\nLNK_NODE $LAST_PARENT node-run-1 CAUSAL", "cannot link to itself"),
        ("BUILD_PARENT g s 0.5\nLNK_NODE $LAST_PARENT node-run-1#4 CAUSAL", "does not exist"),
        ("BUILD_PARENT g s 0.5\nGRP_NODE node-run-1 node-run-1", "already one node"),
        ("PRN_NODE ghost", "'ghost' does not exist"),
    ],
)
def test_bad_references_fail_the_whole_program(text: str, message: str) -> None:
    result = run(text, traces={"t1": TRACE})
    assert not result.success
    assert result.error is not None and message in result.error
    assert result.error.startswith(f"L{result.error_line}: ")
    assert result.events == ()


def test_unchecked_traces_for_isa_run() -> None:
    result = run("MARK_CRITICAL anything 99\nEXTRACT_CONSTRAINT other never")
    assert result.success
    assert [type(e) for e in result.events] == [Mark, Constraint]


def test_merge_prune_and_reads_on_an_existing_graph() -> None:
    graph = MemGraph().apply_all(
        [
            Node(cycle="c0", node="a", goal="g", summary="strategy a", confidence=0.6),
            ChildStep(cycle="c0", node="a", index=0, action="first"),
            ChildStep(cycle="c0", node="a", index=1, action="second"),
            Node(cycle="c0", node="b", goal="g", confidence=0.7),
            Node(cycle="c0", node="c", goal="h", confidence=0.2),
        ]
    )
    before = graph.state()
    result = run(
        "GRP_NODE a b\nGRP_NODE b c\nMEM_READ a\nMEM_NEXT a#0\nMEM_PREV a#0\nMEM_PARENT a#1\n"
        "MEM_JMP a#1\nPRN_NODE a",
        graph=graph,
        fidelity=lambda node: 0.5,
    )
    assert result.success, result.error
    merge_ab, merge_ac, prune = result.events
    # Counts pooled (merged_confidence): a = 0.6 of 1 trace is 0.8 successes, b = 0.7 is 1
    # (clamped), weighted by fidelity 0.5: (0.8 + 0.5 + 1) / (1 + 0.5 + 2).
    assert isinstance(merge_ab, Merge) and merge_ab.confidence == pytest.approx(2.3 / 3.5, 1e-5)
    # "b" was merged into "a", so GRP_NODE b c merges c into the survivor; c's low
    # confidence (no successes) is contradicting evidence and lowers the survivor's.
    assert isinstance(merge_ac, Merge) and (merge_ac.node, merge_ac.merged) == ("a", "c")
    s_a = merge_ab.confidence * 3 - 1
    assert merge_ac.confidence == pytest.approx((s_a + 1) / 3.5, 1e-5)
    assert merge_ac.confidence < merge_ab.confidence
    assert isinstance(prune, Prune) and prune.node == "a"
    assert result.accumulator == "a"
    assert "MEM_JMP: jumped to a#1" in result.side_effects
    assert graph.state() == before  # the VM only staged


def test_mem_queries_return_values() -> None:
    graph = MemGraph().apply_all(
        [
            Node(cycle="c0", node="a", summary="strategy a"),
            ChildStep(cycle="c0", node="a", index=0, action="first"),
            ChildStep(cycle="c0", node="a", index=5, action="second"),
        ]
    )
    values = [
        run(text, graph=graph, search=lambda q: "a" if "fix" in q else None).accumulator
        for text in (
            "MEM_READ a", "MEM_READ a#5", "MEM_READ nope", "MEM_NEXT a#0", "MEM_NEXT a#5",
            "MEM_PREV a#5", "MEM_PARENT a#5", "MEM_PARENT a", "MEM_PTR fix the import",
            "MEM_PTR cake",
        )
    ]  # fmt: skip
    assert values == ["strategy a", "second", None, "a#5", None, "a#0", "a", None, "a", None]


def test_rebind_restates_an_existing_node() -> None:
    graph = MemGraph().apply_all(
        [
            Node(cycle="c0", node="a", goal="g", summary="long"),
            ChildStep(cycle="c0", node="a", index=0, action="x"),
        ]
    )
    result = run(
        'BUILD_PARENT g short 0.9\nBUILD_CHILD $LAST_PARENT 0 r "x (v2)" ok',
        graph=graph,
        rebind="a",
    )
    assert result.success, result.error
    node, step = result.events
    assert isinstance(node, Node) and node.node == "a"
    assert isinstance(step, ChildStep) and step.node == "a"
    twice = run("BUILD_PARENT g s 0.1\nBUILD_PARENT g t 0.2", graph=graph, rebind="a")
    assert twice.error is not None and "only one BUILD_PARENT" in twice.error


def test_instruction_limit() -> None:
    program = parse_program("NOP\nNOP\nNOP")
    result = run_program(program, VMContext(max_instructions=2))
    assert not result.success and result.error is not None
    assert "max_instructions=2" in result.error
