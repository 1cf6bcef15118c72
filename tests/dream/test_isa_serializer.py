"""Tests for the dream ISA serializer: quoting, rejection of unwritable args, round trips."""

from __future__ import annotations

import shlex

import pytest
from evolog.dream.isa._opcodes import (
    EDGE_TYPES,
    FAILURE_CLASSES,
    LAST_PARENT,
    MAX_INDEX,
    SIGNATURES,
    ArgKind,
    Opcode,
)
from evolog.dream.isa._parser import TokenizerMode, parse_program, tokenize_line
from evolog.dream.isa._program import DiagnosticCode, Instruction, Program
from evolog.dream.isa._serializer import (
    LINE_BREAKS,
    SerializationError,
    quote_arg,
    serialize_instruction,
    serialize_program,
)
from hypothesis import given
from hypothesis import strategies as st


def ops(program: Program) -> list[tuple[Opcode, tuple[str, ...]]]:
    return [(inst.opcode, inst.args) for inst in program.instructions]


def round_trip(instructions: list[Instruction]) -> Program:
    program = parse_program(serialize_program(instructions))
    assert program.diagnostics == ()
    return program


TRICKY_ARGS = [
    "",
    " ",
    "two words",
    "  leading and trailing  ",
    'say "hi" twice',
    "it's",
    "''",
    '""',
    "back\\slash",
    "trailing\\",
    "tab\there",
    "nbsp\u00a0inside",
    "\u00a0",
    "#not a comment",
    "//nor this",
    "$LAST_PARENT",
    "$HOME",
    "`cmd`",
    "*.py",
    "a;b|c&d",
    "\x00nul",
    "\ufeffbom",
    "\u200bzwsp",
    "emoji \U0001f600",
    "HALT",
]


@pytest.mark.parametrize("arg", TRICKY_ARGS)
def test_tricky_args_round_trip_through_shlex_mode(arg: str) -> None:
    line = serialize_instruction(Instruction(Opcode.YIELD, (arg, arg)))
    # Quotes always balance, so our output never drops into the regex fallback.
    assert tokenize_line(line) == (["YIELD", arg, arg], TokenizerMode.SHLEX)
    assert ops(round_trip([Instruction(Opcode.YIELD, (arg,))])) == [(Opcode.YIELD, (arg,))]


@pytest.mark.parametrize(
    ("arg", "quoted"),
    [
        ("abc", "abc"),
        ("0.5", "0.5"),
        ("$LAST_PARENT", "$LAST_PARENT"),
        ("a-b_c/d.e:f@g%h+i=j,k", "a-b_c/d.e:f@g%h+i=j,k"),
        ("", "''"),
        ("a b", "'a b'"),
        ("it's", "'it'\"'\"'s'"),
        ("#x", "'#x'"),
        ("x\\y", "'x\\y'"),
    ],
)
def test_quote_arg(arg: str, quoted: str) -> None:
    assert quote_arg(arg) == quoted
    assert shlex.split(quoted) == [arg]


def test_reference_lossy_example_now_round_trips() -> None:
    inst = Instruction(Opcode.BUILD_PARENT, ('say "hi" twice', "don't", "0.5"))
    assert serialize_instruction(inst) == ("BUILD_PARENT 'say \"hi\" twice' 'don'\"'\"'t' 0.5")
    assert ops(round_trip([inst])) == [(inst.opcode, inst.args)]


def test_line_breaks_are_exactly_the_splitlines_breakers() -> None:
    breakers = {chr(c) for c in range(0x110000) if len(f"a{chr(c)}b".splitlines()) > 1}
    assert breakers == LINE_BREAKS


@pytest.mark.parametrize("brk", sorted(LINE_BREAKS))
def test_args_with_line_breaks_are_rejected(brk: str) -> None:
    inst = Instruction(Opcode.BUILD_CHILD, ("p", "0", "r", f"a{brk}b", "x"), line=7)
    with pytest.raises(SerializationError, match=r"BUILD_CHILD \(L7\) arg 3: .*line break"):
        serialize_instruction(inst)


def test_unpaired_surrogates_are_rejected() -> None:
    with pytest.raises(SerializationError, match="unpaired surrogate U\\+D800"):
        serialize_instruction(Instruction(Opcode.YIELD, ("a\ud800",)))


def test_serialize_program_accepts_programs_and_iterables() -> None:
    instructions = (Instruction(Opcode.NOP), Instruction(Opcode.HALT))
    assert serialize_program(Program(instructions)) == "NOP\nHALT\n"
    assert serialize_program(iter(instructions)) == "NOP\nHALT\n"
    assert serialize_program(()) == ""


def test_serialization_is_syntax_only() -> None:
    line = serialize_instruction(Instruction(Opcode.MARK_CRITICAL, ("t1", "-1")))
    assert line == "MARK_CRITICAL t1 -1"
    assert parse_program(line).diagnostics[0].code is DiagnosticCode.BAD_INT


def test_parsed_program_round_trips_with_canonical_spellings() -> None:
    text = (
        'build_parent \'Fix CI\' "pin the \\"tool\\" version" .75\n'
        "BUILD_CHILD $LAST_PARENT 0 'read logs' \"run 'make'\" ''\n"
        "lnk_node $LAST_PARENT n2 similar_to\n"
        "EXTRACT_CONSTRAINT t1 never  upgrade blindly Wrong_Assumption\n"
        "HALT\n"
    )
    program = parse_program(text)
    assert program.ok
    assert ops(round_trip(list(program.instructions))) == ops(program)
    assert program.instructions[2].args[2] == "SIMILAR_TO"
    assert program.instructions[3].args[-1] == "wrong_assumption"


# --- Property: random valid instructions round trip -------------------------------------

# Every character the parser can return in an argument: no line breakers, no surrogates.
TEXT = st.text(
    st.characters(exclude_categories=["Cs"], exclude_characters=LINE_BREAKS), max_size=12
)
NON_BLANK = TEXT.filter(lambda s: bool(s.strip()))
ARG_STRATEGIES: dict[ArgKind, st.SearchStrategy[str]] = {
    ArgKind.TEXT: TEXT,
    ArgKind.TRACE_ID: NON_BLANK,
    ArgKind.NODE_ID: NON_BLANK.filter(lambda s: not s.startswith("$")),
    ArgKind.NODE_REF: st.one_of(
        st.just(LAST_PARENT), NON_BLANK.filter(lambda s: not s.startswith("$"))
    ),
    ArgKind.INDEX: st.one_of(st.integers(0, MAX_INDEX).map(str), st.just("007")),
    ArgKind.CONFIDENCE: st.one_of(
        st.floats(0.0, 1.0).map(repr), st.sampled_from(["0", "1", ".5", "1.", "5e-1"])
    ),
    ArgKind.EDGE_TYPE: st.sampled_from(EDGE_TYPES),
}


@st.composite
def valid_instructions(draw: st.DrawFn, opcode: Opcode | None = None) -> Instruction:
    """A valid instruction in canonical form, as the parser would return it."""
    op = opcode or draw(st.sampled_from([op for op in Opcode if op is not Opcode.HALT]))
    if op is Opcode.EXTRACT_CONSTRAINT:
        tail = draw(st.lists(st.sampled_from(FAILURE_CLASSES), max_size=1))
        return Instruction(op, (draw(NON_BLANK), draw(NON_BLANK), *tail))
    signature = SIGNATURES[op]
    args = [draw(ARG_STRATEGIES[param.kind]) for param in signature.params]
    if signature.rest is not None:
        args += draw(st.lists(ARG_STRATEGIES[signature.rest.kind], max_size=4))
    return Instruction(op, tuple(args))


@st.composite
def valid_programs(draw: st.DrawFn) -> list[Instruction]:
    """Valid instructions, optionally ending in HALT (HALT anywhere else would cut them)."""
    body = draw(st.lists(valid_instructions(), max_size=10))
    halt = draw(st.lists(st.just(Instruction(Opcode.HALT)), max_size=1))
    return body + halt


@given(valid_programs())
def test_valid_programs_round_trip(instructions: list[Instruction]) -> None:
    program = round_trip(instructions)
    assert ops(program) == [(inst.opcode, inst.args) for inst in instructions]
    assert [inst.line for inst in program.instructions] == list(range(1, len(instructions) + 1))


@given(st.lists(TEXT, max_size=6))
def test_any_parser_producible_args_round_trip(args: list[str]) -> None:
    inst = Instruction(Opcode.YIELD, tuple(args))
    assert ops(round_trip([inst])) == [(Opcode.YIELD, tuple(args))]
