"""ISA strictness: failure classes, unknown ISA versions, phase opcodes and node scope."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import pytest
from evolog.dream import CycleError, DreamConfig, Trace, dream, parse_program
from evolog.dream._dreamer import DreamProgram, LinkCandidate
from evolog.dream.isa._opcodes import PHASE_OPCODES, Opcode
from evolog.dream.isa._program import DiagnosticCode
from evolog.dream.isa._vm import VMContext, run_program
from evolog.eventlog import EventLog
from evolog.projections.graph._memgraph import MemGraph, StepRecord, StrategyNode, load_memgraph

from evolog.cli._main import main
from tests.dream.test_dream_cycle import EMBEDDER, trace_events

# -- failure classes ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        'EXTRACT_CONSTRAINT t1 "disk filled up" overheating',
        'EXTRACT_CONSTRAINT t1 "disk filled up" Overheating',
        'EXTRACT_CONSTRAINT t1 "disk filled" up timeout',
        "EXTRACT_CONSTRAINT t1 'disk filled up' overheating",
        'EXTRACT_CONSTRAINT t1 "disk filled up" overheating "x',  # the regex tokenizer
    ],
)
def test_a_bare_word_after_a_quoted_description_must_be_a_known_class(line: str) -> None:
    program = parse_program(line)
    assert not program.instructions
    (d,) = program.diagnostics
    assert d.code is DiagnosticCode.UNKNOWN_FAILURE_CLASS and d.message.startswith("L1:")
    assert "timeout" in d.message  # the known classes are listed


@pytest.mark.parametrize(
    ("line", "description", "cls"),
    [
        ('EXTRACT_CONSTRAINT t1 "disk filled up" timeout', "disk filled up", "timeout"),
        ('EXTRACT_CONSTRAINT t1 "disk filled up" LOGIC_ERROR', "disk filled up", "logic_error"),
        ('EXTRACT_CONSTRAINT t1 "disk filled up"', "disk filled up", ""),
        ("EXTRACT_CONSTRAINT t1 disk filled up", "disk filled up", ""),
        ("EXTRACT_CONSTRAINT t1 disk filled up timeout", "disk filled up", "timeout"),
    ],
)
def test_valid_constraints_still_parse(line: str, description: str, cls: str) -> None:
    program = parse_program(line)
    assert program.ok, program.diagnostics
    result = run_program(program)
    assert result.success
    (event,) = result.events
    assert (event.description, event.failure_class) == (description, cls)  # type: ignore[attr-defined]


# -- ISA versions ------------------------------------------------------------------------


@pytest.mark.parametrize("action", ["parse", "run"])
def test_an_unknown_isa_version_is_one_line(
    action: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("HALT\n"))
    code = main(["isa", action, "--isa-version", "0.9", "-"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("evolog: error: ")
    assert "0.9" in err and "1.0" in err


# -- phases and node scope ---------------------------------------------------------------


def _graph_with_two_nodes() -> MemGraph:
    """A graph holding old-1 and old-2, built by an earlier, unrestricted run."""
    text = 'BUILD_PARENT "old goal" "old summary" 0.9\nBUILD_PARENT "other" "summary" 0.9'
    ctx = VMContext(mint=iter(["old-1", "old-2"]).__next__)
    seeded = run_program(parse_program(text), ctx)
    assert seeded.built == ("old-1", "old-2")
    graph = MemGraph()
    graph.apply_all(seeded.events)  # type: ignore[arg-type]
    return graph


def _trace_ctx(graph: MemGraph) -> VMContext:
    return VMContext(
        graph=graph,
        phase="SWS/REM",
        allowed=PHASE_OPCODES["trace"],
        scope=frozenset(),
        mint=iter(["new-1", "new-2"]).__next__,
    )


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("NOP\nPRN_NODE old-1\nHALT", ["L2", "PRN_NODE", "not allowed", "SWS/REM"]),
        ("GRP_NODE old-1 old-2", ["L1", "GRP_NODE", "not allowed"]),
        ("MEM_JMP old-1", ["L1", "MEM_JMP", "not allowed"]),
        ("LNK_NODE old-1 old-2 CAUSAL", ["L1", "old-1", "not built"]),
        ('BUILD_PARENT "g" "s" 0.5\nLNK_NODE $LAST_PARENT old-1 CAUSAL', ["L2", "not built"]),
        ('BUILD_CHILD old-1 5 "r" "a" "x"', ["L1", "old-1", "not built"]),
    ],
)
def test_a_per_trace_program_may_not_touch_other_nodes(text: str, words: list[str]) -> None:
    graph = _graph_with_two_nodes()
    program = parse_program(text)
    assert program.ok, program.diagnostics
    result = run_program(program, _trace_ctx(graph))
    assert not result.success and result.events == ()
    for w in words:
        assert w in (result.error or "")
    # Unrestricted (``evolog isa run``), the same programs run.
    assert run_program(program, VMContext(graph=graph, mint=lambda: "new-1")).success


def test_a_per_trace_program_builds_and_links_its_own_nodes() -> None:
    graph = _graph_with_two_nodes()
    text = (
        'EXTRACT_CONSTRAINT t1 "never force-push" logic_error\n'
        'BUILD_PARENT "g" "s" 0.5\nBUILD_CHILD $LAST_PARENT 0 "r" "a" "x"\n'
        'BUILD_PARENT "g2" "s2" 0.5\nLNK_NODE $LAST_PARENT new-1 CAUSAL\nHALT'
    )
    result = run_program(parse_program(text), _trace_ctx(graph))
    assert result.success, result.error


def test_each_phase_allows_only_what_it_needs() -> None:
    assert Opcode.PRN_NODE not in set().union(*PHASE_OPCODES.values())
    assert PHASE_OPCODES["links"] == {Opcode.LNK_NODE, Opcode.NOP, Opcode.HALT}
    assert Opcode.GRP_NODE in PHASE_OPCODES["consolidation"]
    assert Opcode.GRP_NODE not in PHASE_OPCODES["trace"]


class _InjectedDreamer:
    """A model that obeyed a tool result saying "your program must be: PRN_NODE ..."."""

    name = "injected"
    model = None
    records_text = True
    batch_size = 50

    def __init__(self, victim: str, old: str) -> None:
        self.prune = DreamProgram(f"PRN_NODE {victim}\nHALT\n")
        self.link_old = f'BUILD_PARENT "g" "s" 0.5\nLNK_NODE $LAST_PARENT {old} CAUSAL\nHALT\n'

    def dream_trace(self, trace: Trace) -> DreamProgram:
        text = self.prune.text if trace.id == "t1" else self.link_old
        return DreamProgram(text, trace.id)

    def link(self, candidates: Sequence[LinkCandidate]) -> DreamProgram:
        return self.prune

    def compact(self, node: StrategyNode, steps: Sequence[StepRecord]) -> DreamProgram:
        return self.prune


def test_an_injected_prune_through_the_dreamer_deletes_nothing(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "s", create=True, durability="none")
    log.append_many(trace_events("t0", "deploy the web app", ["build", "push"]))
    log.append_many(trace_events("tx", "rotate the api keys", ["revoke", "issue"]))
    dream(log, embedder=EMBEDDER)
    victim, old = sorted(n.id for n in load_memgraph(log).nodes())
    log.append_many(trace_events("t1", "deploy the web app again", ["build", "push"]))
    log.append_many(trace_events("t2", "rotate the keys again", ["revoke", "issue"]))
    before = {e.src for e in load_memgraph(log).edges()}
    events = log.stats()["events"]
    with pytest.raises(CycleError, match=r"trace t1.*PRN_NODE: not allowed"):
        dream(log, dreamer=_InjectedDreamer(victim, old), embedder=EMBEDDER)
    assert log.stats()["events"] == events  # a failing dreamer appends nothing
    config = DreamConfig(fallback=True)
    report = dream(log, dreamer=_InjectedDreamer(victim, old), embedder=EMBEDDER, config=config)
    log_lines = "\n".join(report.cycles[0].phase_log)
    assert "fallback to heuristic for trace t1" in log_lines and "not allowed" in log_lines
    assert "fallback to heuristic for trace t2" in log_lines and "not built" in log_lines
    graph = load_memgraph(log)
    node = graph.node(victim)
    assert node is not None and not node.pruned
    after = {e.src for e in graph.edges() if e.edge_type == "CAUSAL"}
    assert not after - before


def test_isa_run_can_check_a_program_as_a_phase_runs_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("PRN_NODE node-x\nHALT\n"))
    code = main(["isa", "run", "--phase", "trace", "-"])
    out, _ = capsys.readouterr()
    assert code == 1 and "not allowed in the SWS/REM phase" in out
