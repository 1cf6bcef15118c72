"""Tests for the dream ISA definition and parser (reference grammar plus our strictness rules)."""

from __future__ import annotations

import msgspec
import pytest
from evolog.dream.isa._opcodes import (
    EDGE_TYPES,
    FAILURE_CLASSES,
    LAST_PARENT,
    MAX_INDEX,
    SIGNATURES,
    Opcode,
    OpcodeGroup,
    last_parent_positions,
)
from evolog.dream.isa._parser import (
    DEFAULT_MAX_INSTRUCTIONS,
    TokenizerMode,
    constraint_fields,
    parse_program,
    tokenize_line,
)
from evolog.dream.isa._program import (
    ISA_REGISTRY,
    ISA_VERSION,
    Diagnostic,
    DiagnosticCode,
    Instruction,
    IsaRegistry,
    Program,
)
from evolog.dream.isa._serializer import serialize_program
from hypothesis import example, given
from hypothesis import strategies as st

Code = DiagnosticCode


def ops(program: Program) -> list[tuple[Opcode, tuple[str, ...]]]:
    return [(inst.opcode, inst.args) for inst in program.instructions]


def codes(program: Program) -> list[tuple[int, DiagnosticCode]]:
    return [(d.line, d.code) for d in program.diagnostics]


def only_diagnostic(text: str) -> Diagnostic:
    program = parse_program(text)
    assert program.instructions == ()
    assert len(program.diagnostics) == 1, program.diagnostics
    return program.diagnostics[0]


def rejected(text: str) -> DiagnosticCode:
    return only_diagnostic(text).code


def accepted(text: str) -> tuple[str, ...]:
    program = parse_program(text)
    assert program.diagnostics == (), program.diagnostics
    (inst,) = program.instructions
    return inst.args


# --- ISA definition (spec section 1) ------------------------------------------------------


CODES = {
    "MEM_PTR": (0x10, 0),
    "MEM_READ": (0x11, 1),
    "MEM_NEXT": (0x12, 1),
    "MEM_PREV": (0x13, 1),
    "MEM_PARENT": (0x14, 1),
    "MEM_JMP": (0x15, 1),
    "EXTRACT_CONSTRAINT": (0x20, 2),
    "MARK_CRITICAL": (0x21, 2),
    "MARK_NOISE": (0x22, 2),
    "BUILD_PARENT": (0x23, 3),
    "BUILD_CHILD": (0x24, 5),
    "LNK_NODE": (0x25, 3),
    "GRP_NODE": (0x26, 2),
    "PRN_NODE": (0x27, 1),
    "NOP": (0xF0, 0),
    "YIELD": (0xF1, 0),
    "HALT": (0xF2, 0),
}


def test_seventeen_opcodes_with_codes_groups_and_min_args() -> None:
    assert [op.value for op in Opcode] == list(CODES)
    groups = {0x1: OpcodeGroup.MEMORY, 0x2: OpcodeGroup.DREAM, 0xF: OpcodeGroup.SYSTEM}
    for op in Opcode:
        code, min_args = CODES[op.value]
        assert op.code == code
        assert op.group is groups[code >> 4]
        assert SIGNATURES[op].min_args == min_args


def test_only_prose_opcodes_are_variadic() -> None:
    variadic = {op for op in Opcode if SIGNATURES[op].max_args is None}
    assert variadic == {Opcode.MEM_PTR, Opcode.YIELD, Opcode.EXTRACT_CONSTRAINT}


def test_vocabularies() -> None:
    assert len(FAILURE_CLASSES) == len(set(FAILURE_CLASSES)) == 14
    assert {"logic_error", "unknown_failure", "tool_error", "permission_denied"} <= set(
        FAILURE_CLASSES
    )
    assert all(c == c.lower() for c in FAILURE_CLASSES)
    assert set(EDGE_TYPES) == {
        "IS_CHILD_OF",
        "NEXT_STEP",
        "PREVIOUS_STEP",
        "CAUSAL",
        "CONTEXT_JUMP",
        "SIMILAR_TO",
        "MERGED_INTO",
    }


def test_last_parent_positions() -> None:
    assert last_parent_positions(Opcode.BUILD_CHILD) == {0}
    assert last_parent_positions(Opcode.LNK_NODE) == {0, 1}
    others = set(Opcode) - {Opcode.BUILD_CHILD, Opcode.LNK_NODE}
    assert all(last_parent_positions(op) == frozenset() for op in others)


def test_program_structs_are_frozen_and_encodable() -> None:
    program = parse_program("BUILD_PARENT g s 0.5\nbogus\n")
    with pytest.raises(AttributeError):
        program.instructions[0].line = 3  # type: ignore[misc]
    decoded = msgspec.json.decode(msgspec.json.encode(program), type=Program)
    assert decoded == program
    assert b'"opcode":"BUILD_PARENT"' in msgspec.json.encode(program)


# --- Lines (spec section 2.1) -------------------------------------------------------------


@pytest.mark.parametrize("brk", ["\n", "\r\n", "\r", "\x0b", "\x0c", "\x1c", "\x85", "\u2028"])
def test_line_numbers_follow_splitlines(brk: str) -> None:
    program = parse_program(brk.join(["NOP", "", "# c", "bogus", "HALT"]))
    assert [i.line for i in program.instructions] == [1, 5]
    assert codes(program) == [(4, Code.UNKNOWN_OPCODE)]


def test_blank_and_comment_lines_are_skipped() -> None:
    text = "  \n\t# note\n   // also\n\u00a0\nNOP\n;x\n--x\n/* x */"
    program = parse_program(text)
    assert ops(program) == [(Opcode.NOP, ())]
    assert [d.line for d in program.diagnostics] == [6, 7, 8]


def test_raw_is_the_stripped_line_and_unicode_space_is_stripped() -> None:
    (inst,) = parse_program("\u00a0\u2003 MEM_READ n1 \u00a0\n").instructions
    assert inst.raw == "MEM_READ n1"
    assert inst.args == ("n1",)


def test_bom_and_zero_width_space_are_not_whitespace() -> None:
    assert rejected("\ufeffHALT") is Code.UNKNOWN_OPCODE
    assert rejected("\u200bHALT") is Code.UNKNOWN_OPCODE


def test_no_inline_comments() -> None:
    assert accepted("YIELD done ; # not a comment") == ("done", ";", "#", "not", "a", "comment")


# --- Tokenizer (spec section 2.2) ---------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "tokens"),
    [
        ('"foo"bar baz', ["foobar", "baz"]),
        ('a "" b', ["a", "", "b"]),
        ("a\\ b", ["a b"]),
        ('"say \\"hi\\" \\\\"', ['say "hi" \\']),
        ("'single  quoted' x", ["single  quoted", "x"]),
        ("$HOME *.py `cmd`", ["$HOME", "*.py", "`cmd`"]),
        ("a\u00a0b c", ["a\u00a0b", "c"]),
        ("a\tb", ["a", "b"]),
    ],
)
def test_shlex_mode(line: str, tokens: list[str]) -> None:
    assert tokenize_line(line) == (tokens, TokenizerMode.SHLEX)


@pytest.mark.parametrize(
    ("line", "tokens"),
    [
        ('BUILD_PARENT "goal" "summary 1.0', ["BUILD_PARENT", "goal", '"summary', "1.0"]),
        ("MARK_NOISE it's 3", ["MARK_NOISE", "it's", "3"]),
        ('a "" "x y" z"', ["a", "", "x y", 'z"']),
        ("abc\"def 'g h", ['abc"def', "'g", "h"]),
        ("a\u00a0b 'c", ["a", "b", "'c"]),
        ("trailing\\", ["trailing\\"]),
    ],
)
def test_regex_fallback_on_shlex_errors(line: str, tokens: list[str]) -> None:
    assert tokenize_line(line) == (tokens, TokenizerMode.REGEX)


def test_unbalanced_quote_line_still_parses_through_regex_fallback() -> None:
    assert accepted('BUILD_PARENT "fix the bug" "don\'t retry" 0.5') == (
        "fix the bug",
        "don't retry",
        "0.5",
    )
    assert accepted("PRN_NODE node'1") == ("node'1",)


def test_nbsp_is_part_of_the_opcode_token_in_shlex_mode() -> None:
    assert rejected("MARK_CRITICAL\u00a0t1 0") is Code.UNKNOWN_OPCODE


# --- Opcode resolution (spec section 2.3) -------------------------------------------------


def test_opcodes_fold_ascii_case_but_args_do_not() -> None:
    program = parse_program("build_parent Goal SUMMARY 0.5\nHaLt")
    assert ops(program) == [(Opcode.BUILD_PARENT, ("Goal", "SUMMARY", "0.5")), (Opcode.HALT, ())]


def test_quoted_opcode_is_accepted_but_a_quoted_line_is_one_token() -> None:
    assert ops(parse_program('"HALT"')) == [(Opcode.HALT, ())]
    assert rejected('"PRN_NODE n1"') is Code.UNKNOWN_OPCODE


@pytest.mark.parametrize(
    "line",
    [
        "bu\u0131ld_parent g s 0.5",  # dotless i: Unicode upper() folds it to I
        "EXTRACT_CON\u017fTRAINT t d",  # long s: Unicode upper() folds it to S
        "\uff28\uff21\uff2c\uff34",  # fullwidth HALT
        "H\u0410LT",  # Cyrillic A
    ],
)
def test_non_ascii_lookalike_opcodes_are_rejected(line: str) -> None:
    diagnostic = only_diagnostic(line)
    assert diagnostic.code is Code.UNKNOWN_OPCODE


def test_lookalike_hint() -> None:
    assert "non-ASCII" in only_diagnostic("bu\u0131ld_parent g s 0.5").message


def test_unknown_opcode_diagnostic_and_later_lines_still_parse() -> None:
    program = parse_program("NOP\nSure! Here is the program:\nHALT")
    assert ops(program) == [(Opcode.NOP, ()), (Opcode.HALT, ())]
    assert program.diagnostics == (
        Diagnostic(
            2,
            Code.UNKNOWN_OPCODE,
            "L2: unknown opcode 'Sure!'",
            None,
            "Sure! Here is the program:",
        ),
    )
    assert not program.ok


def test_markdown_from_an_llm_gives_diagnostics_and_keeps_instructions() -> None:
    text = "Here you go:\n\n```isa\nMARK_CRITICAL t1 0\n- MARK_NOISE t1 1\n1. HALT\n```\n"
    program = parse_program(text)
    assert ops(program) == [(Opcode.MARK_CRITICAL, ("t1", "0"))]
    assert codes(program) == [(n, Code.UNKNOWN_OPCODE) for n in (1, 3, 5, 6, 7)]
    messages = [d.message for d in program.diagnostics]
    assert "Markdown code fence" in messages[1]
    assert "list marker" in messages[2]
    assert "list marker" in messages[3]


# --- Arity --------------------------------------------------------------------------------


@pytest.mark.parametrize("op", [op for op in Opcode if SIGNATURES[op].min_args > 0])
def test_too_few_args_is_an_arity_diagnostic(op: Opcode) -> None:
    args = " ".join(["x"] * (SIGNATURES[op].min_args - 1))
    assert rejected(f"{op} {args}") is Code.ARITY


@pytest.mark.parametrize("op", [op for op in Opcode if SIGNATURES[op].max_args is not None])
def test_extra_args_on_fixed_arity_opcodes_are_rejected(op: Opcode) -> None:
    valid = {
        Opcode.MARK_CRITICAL: "t 1",
        Opcode.MARK_NOISE: "t 1",
        Opcode.BUILD_PARENT: "g s 1",
        Opcode.BUILD_CHILD: "p 1 r a x",
        Opcode.LNK_NODE: "a b CAUSAL",
    }.get(op, " ".join(["n"] * SIGNATURES[op].min_args))
    assert accepted(f"{op} {valid}") == tuple(valid.split())
    assert rejected(f"{op} {valid} extra") is Code.ARITY


def test_arity_message_names_the_parameters() -> None:
    message = only_diagnostic("BUILD_PARENT 'fix the build' 0.9").message
    assert message == (
        "L1: BUILD_PARENT takes exactly 3 argument(s) (goal summary confidence), got 2"
    )


def test_variadic_opcodes_accept_any_number_of_words() -> None:
    assert accepted("MEM_PTR") == ()
    assert accepted("MEM_PTR how to fix flaky tests") == ("how", "to", "fix", "flaky", "tests")
    assert accepted("YIELD") == ()
    assert accepted("YIELD all   done") == ("all", "done")


# --- Indices ------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["0", "7", "007", str(MAX_INDEX)])
def test_valid_indices(value: str) -> None:
    assert accepted(f"MARK_CRITICAL t1 {value}") == ("t1", value)
    assert accepted(f"BUILD_CHILD p {value} r a x")[1] == value


@pytest.mark.parametrize(
    "value",
    ["-1", "+1", "1_0", "3.0", "1e3", "0x10", "NaN", "''", "' 3'", "\u0663", "\uff11\uff12", "one"],
)
def test_bad_indices(value: str) -> None:
    assert rejected(f"MARK_NOISE t1 {value}") is Code.BAD_INT


@pytest.mark.parametrize("value", [str(MAX_INDEX + 1), "9" * 5000, "1" + "0" * 30])
def test_huge_indices_are_out_of_range(value: str) -> None:
    assert rejected(f"MARK_CRITICAL t1 {value}") is Code.OUT_OF_RANGE


def test_negative_index_message() -> None:
    program = parse_program("MARK_CRITICAL t1 -1\nMARK_CRITICAL t1 2")
    assert ops(program) == [(Opcode.MARK_CRITICAL, ("t1", "2"))]
    (diagnostic,) = program.diagnostics
    assert diagnostic.message == (
        "L1: MARK_CRITICAL action_index must be a non-negative integer in ASCII digits, got '-1'"
    )
    assert diagnostic.arg_index == 1


# --- Confidence ---------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["0", "1", "0.5", ".5", "1.", "1e-3", "1.0e0", "0.000", "1e-400"])
def test_valid_confidences(value: str) -> None:
    assert accepted(f'BUILD_PARENT "g" "s" {value}')[2] == value


@pytest.mark.parametrize(
    "value",
    ["inf", "nan", "-0.5", "+0.5", "1_0", "' 0.5'", "''", "0x1p-2", "high", "1,5", "\u0660"],
)
def test_bad_confidences(value: str) -> None:
    assert rejected(f"BUILD_PARENT g s {value}") is Code.BAD_FLOAT


@pytest.mark.parametrize("value", ["1.5", "1.0000001", "2", "1e999", "11e-1"])
def test_out_of_range_confidences(value: str) -> None:
    assert rejected(f"BUILD_PARENT g s {value}") is Code.OUT_OF_RANGE


def test_confidence_message() -> None:
    diagnostic = only_diagnostic('\n\nBUILD_PARENT "g" "s" 1.5')
    assert diagnostic.message == "L3: BUILD_PARENT confidence must be a number in [0, 1], got '1.5'"
    assert (diagnostic.line, diagnostic.arg_index) == (3, 2)


# --- Edge types ---------------------------------------------------------------------------


def test_edge_types_are_case_insensitive_and_normalised() -> None:
    assert accepted("LNK_NODE a b causal") == ("a", "b", "CAUSAL")
    assert accepted("LNK_NODE a b Similar_To") == ("a", "b", "SIMILAR_TO")


def test_unknown_edge_type_rejects_only_its_line() -> None:
    program = parse_program("LNK_NODE a b FRIEND\nLNK_NODE a b NEXT_STEP")
    assert ops(program) == [(Opcode.LNK_NODE, ("a", "b", "NEXT_STEP"))]
    assert codes(program) == [(1, Code.UNKNOWN_EDGE_TYPE)]
    assert program.diagnostics[0].arg_index == 2


def test_edge_type_lookalike_is_rejected() -> None:
    assert rejected("LNK_NODE a b c\u0430usal") is Code.UNKNOWN_EDGE_TYPE


# --- EXTRACT_CONSTRAINT and failure classes -----------------------------------------------


def constraint(text: str) -> tuple[str, str, str]:
    (inst,) = parse_program(text).instructions
    return constraint_fields(inst)


def test_constraint_with_known_class_any_case() -> None:
    assert constraint('EXTRACT_CONSTRAINT t1 "never retry" LOGIC_ERROR') == (
        "t1",
        "never retry",
        "logic_error",
    )
    assert accepted("EXTRACT_CONSTRAINT t1 d Tool_Error") == ("t1", "d", "tool_error")


def test_unquoted_description_words_are_joined() -> None:
    assert constraint("EXTRACT_CONSTRAINT t1 do  not retry timeout") == (
        "t1",
        "do not retry",
        "timeout",
    )
    assert constraint("EXTRACT_CONSTRAINT t1 the test is flaky") == (
        "t1",
        "the test is flaky",
        "",
    )


def test_two_args_means_the_second_is_the_description() -> None:
    assert constraint("EXTRACT_CONSTRAINT t logic_error") == ("t", "logic_error", "")
    assert constraint("EXTRACT_CONSTRAINT t network_error") == ("t", "network_error", "")


def test_class_like_unknown_last_arg_is_rejected_not_folded_into_description() -> None:
    program = parse_program(
        "EXTRACT_CONSTRAINT t1 do not retry network_error\n"
        "EXTRACT_CONSTRAINT t1 'do not retry network_error'"
    )
    assert [constraint_fields(i) for i in program.instructions] == [
        ("t1", "do not retry network_error", "")
    ]
    (diagnostic,) = program.diagnostics
    assert (diagnostic.line, diagnostic.code, diagnostic.arg_index) == (
        1,
        Code.UNKNOWN_FAILURE_CLASS,
        4,
    )
    assert diagnostic.message.startswith("L1: EXTRACT_CONSTRAINT failure_class must be one of")
    assert diagnostic.message.endswith(
        "got 'network_error'; if it belongs to the description, quote the whole description"
    )


def test_blank_description_is_rejected() -> None:
    assert rejected("EXTRACT_CONSTRAINT t1 ''") is Code.EMPTY_ARG
    assert rejected("EXTRACT_CONSTRAINT t1 ' ' timeout") is Code.EMPTY_ARG


def test_constraint_fields_requires_extract_constraint() -> None:
    with pytest.raises(ValueError, match="EXTRACT_CONSTRAINT"):
        constraint_fields(Instruction(Opcode.NOP))


# --- Ids and $LAST_PARENT -----------------------------------------------------------------


def test_last_parent_is_kept_as_a_token_where_it_resolves() -> None:
    program = parse_program(
        'BUILD_CHILD $LAST_PARENT 0 r a x\nLNK_NODE "$LAST_PARENT" $LAST_PARENT CAUSAL'
    )
    assert [inst.args[:2] for inst in program.instructions] == [
        (LAST_PARENT, "0"),
        (LAST_PARENT, LAST_PARENT),
    ]


@pytest.mark.parametrize(
    "line",
    [
        "GRP_NODE $LAST_PARENT n2",
        "PRN_NODE $LAST_PARENT",
        "MEM_READ $LAST_PARENT",
        "BUILD_CHILD $last_parent 0 r a x",
        "LNK_NODE a $LAST_PARENT_X CAUSAL",
    ],
)
def test_misplaced_or_misspelt_references_are_rejected(line: str) -> None:
    assert rejected(line) is Code.BAD_REFERENCE


def test_last_parent_in_text_positions_is_plain_text() -> None:
    assert accepted("YIELD $LAST_PARENT") == (LAST_PARENT,)
    assert accepted("BUILD_PARENT $LAST_PARENT s 1") == (LAST_PARENT, "s", "1")


@pytest.mark.parametrize(
    "line", ["PRN_NODE ''", "MARK_CRITICAL ' ' 1", "LNK_NODE '' b CAUSAL", "MEM_NEXT '\t'"]
)
def test_blank_ids_are_rejected(line: str) -> None:
    assert rejected(line) is Code.EMPTY_ARG


def test_every_bad_argument_of_a_line_is_reported() -> None:
    program = parse_program("BUILD_CHILD $nope -2 r a x\nLNK_NODE '' b FRIEND")
    assert [(d.line, d.code, d.arg_index) for d in program.diagnostics] == [
        (1, Code.BAD_REFERENCE, 0),
        (1, Code.BAD_INT, 1),
        (2, Code.EMPTY_ARG, 0),
        (2, Code.UNKNOWN_EDGE_TYPE, 2),
    ]


# --- HALT ---------------------------------------------------------------------------------


def test_halt_ends_the_effective_program_and_later_lines_get_diagnostics() -> None:
    program = parse_program("NOP\nHALT\nPRN_NODE n1\nbogus\nMARK_NOISE t x\nHALT")
    assert ops(program) == [(Opcode.NOP, ()), (Opcode.HALT, ())]
    assert codes(program) == [
        (3, Code.AFTER_HALT),
        (4, Code.UNKNOWN_OPCODE),
        (5, Code.BAD_INT),
        (6, Code.AFTER_HALT),
    ]
    assert program.diagnostics[0].message == "L3: PRN_NODE comes after HALT on L2 and is ignored"


def test_halt_with_a_trailing_comment_is_rejected_but_still_halts() -> None:
    program = parse_program("MARK_CRITICAL t1 0\nHALT # done\nMARK_CRITICAL t1 1")
    assert ops(program) == [(Opcode.MARK_CRITICAL, ("t1", "0"))]
    assert codes(program) == [(2, Code.ARITY), (3, Code.AFTER_HALT)]
    assert program.diagnostics[0].message == (
        "L2: HALT takes no arguments, got 2; the program still halts here"
    )


# --- Instruction limit --------------------------------------------------------------------


def test_default_limit_is_500() -> None:
    assert DEFAULT_MAX_INSTRUCTIONS == 500
    program = parse_program("NOP\n" * 500)
    assert len(program.instructions) == 500
    assert program.ok
    program = parse_program("NOP\n" * 501 + "HALT\n")
    assert len(program.instructions) == 500
    assert codes(program) == [(501, Code.TOO_MANY_INSTRUCTIONS)]


def test_limit_counts_halt_and_emits_one_diagnostic_in_line_order() -> None:
    text = "NOP\nNOP\nbogus\nNOP\nMEM_READ\nNOP\nHALT\nNOP"
    program = parse_program(text, max_instructions=2)
    assert [i.line for i in program.instructions] == [1, 2]
    assert codes(program) == [
        (3, Code.UNKNOWN_OPCODE),
        (4, Code.TOO_MANY_INSTRUCTIONS),
        (5, Code.ARITY),
        (8, Code.AFTER_HALT),
    ]
    assert program.diagnostics[1].message == (
        "L4: program exceeds max_instructions=2; 3 instruction(s) from this line on were dropped"
    )


def test_limit_with_halt_exactly_at_the_limit() -> None:
    program = parse_program("NOP\nHALT", max_instructions=2)
    assert program.ok
    assert ops(parse_program("NOP", max_instructions=0)) == []
    with pytest.raises(ValueError, match="max_instructions"):
        parse_program("NOP", max_instructions=-1)


# --- Unicode validity ---------------------------------------------------------------------


def test_unpaired_surrogates_are_rejected_so_programs_stay_encodable() -> None:
    program = parse_program("YIELD a\ud800\nYIELD ok\n# comment \udfff")
    assert ops(program) == [(Opcode.YIELD, ("ok",))]
    (diagnostic,) = program.diagnostics
    assert diagnostic.code is Code.INVALID_UNICODE
    assert diagnostic.raw == "YIELD a\\ud800"
    msgspec.json.encode(program)


# --- ISA versions -------------------------------------------------------------------------


def test_registry_holds_version_1_0_with_all_opcodes() -> None:
    assert ISA_VERSION == "1.0"
    assert ISA_REGISTRY.versions() == ("1.0",)
    assert ISA_REGISTRY.opcodes("1.0") == frozenset(Opcode)
    assert ISA_REGISTRY.supports("1.0", Opcode.HALT)
    assert not ISA_REGISTRY.supports("9.9", Opcode.HALT)
    assert parse_program("NOP").isa_version == "1.0"


def test_unknown_version_is_a_caller_error() -> None:
    with pytest.raises(ValueError, match=r"unknown ISA version '2\.0'"):
        parse_program("NOP", isa_version="2.0")


def small_registry() -> IsaRegistry:
    registry = IsaRegistry()
    registry.register("0.9", {Opcode.NOP, Opcode.YIELD, Opcode.HALT})

    def rename_yield(inst: Instruction) -> tuple[Instruction, ...]:
        if inst.opcode is Opcode.YIELD:
            return (msgspec.structs.replace(inst, opcode=Opcode.MEM_PTR),)
        return () if inst.opcode is Opcode.NOP else (inst,)

    registry.register("1.0", {Opcode.MEM_PTR, Opcode.HALT}, previous="0.9", upgrade=rename_yield)
    return registry


def test_version_opcode_sets_are_enforced_without_fallback() -> None:
    program = parse_program("YIELD hi\nMEM_PTR q", isa_version="0.9", registry=small_registry())
    assert ops(program) == [(Opcode.YIELD, ("hi",))]
    assert program.diagnostics[0].message == "L2: unknown opcode 'MEM_PTR' (not part of ISA 0.9)"
    assert program.isa_version == "0.9"


def test_upgrade_transforms_chain_between_versions() -> None:
    registry = small_registry()
    old = parse_program("NOP\nYIELD hi\nbogus\nHALT", isa_version="0.9", registry=registry)
    new = registry.upgrade(old, "1.0")
    assert new.isa_version == "1.0"
    assert ops(new) == [(Opcode.MEM_PTR, ("hi",)), (Opcode.HALT, ())]
    assert new.diagnostics == old.diagnostics
    assert registry.upgrade(new, "1.0") == new
    with pytest.raises(ValueError, match="no upgrade path"):
        registry.upgrade(new, "0.9")


def test_registry_rejects_inconsistent_registrations() -> None:
    registry = small_registry()
    with pytest.raises(ValueError, match="already registered"):
        registry.register("1.0", Opcode)
    with pytest.raises(ValueError, match="together"):
        registry.register("2.0", Opcode, previous="1.0")
    with pytest.raises(ValueError, match="unknown ISA version"):
        registry.register("2.0", Opcode, previous="1.5", upgrade=lambda i: (i,))
    registry.register("2.0", {Opcode.HALT}, previous="1.0", upgrade=lambda i: (i,))
    with pytest.raises(ValueError, match="foreign opcodes"):
        registry.upgrade(Program((Instruction(Opcode.MEM_PTR),), (), "1.0"), "2.0")


# --- Fuzzing ------------------------------------------------------------------------------

ANY_CHAR = st.characters(exclude_categories=())  # includes surrogates and line breakers


def check_invariants(text: str, program: Program, limit: int = DEFAULT_MAX_INSTRUCTIONS) -> None:
    n_lines = len(text.splitlines())
    lines = [inst.line for inst in program.instructions]
    assert lines == sorted(set(lines))
    assert all(1 <= n <= n_lines for n in lines)
    diagnostic_lines = [d.line for d in program.diagnostics]
    assert diagnostic_lines == sorted(diagnostic_lines)
    assert all(1 <= n <= n_lines for n in diagnostic_lines)
    assert not set(lines) & set(diagnostic_lines)
    assert len(program.instructions) <= limit
    assert all(inst.opcode is not Opcode.HALT for inst in program.instructions[:-1])
    assert sum(d.code is Code.TOO_MANY_INSTRUCTIONS for d in program.diagnostics) <= 1
    assert all(d.message.startswith(f"L{d.line}: ") for d in program.diagnostics)
    msgspec.msgpack.encode(program)
    # Everything the parser accepts is accepted again, unchanged, after serialization.
    again = parse_program(serialize_program(program))
    assert again.ok
    assert ops(again) == ops(program)


@given(st.text(ANY_CHAR))
def test_parser_never_raises_on_any_text(text: str) -> None:
    check_invariants(text, parse_program(text))


WORDS = st.sampled_from(
    [
        *(op.value for op in Opcode),
        *(op.value.lower() for op in Opcode),
        *EDGE_TYPES,
        *FAILURE_CLASSES,
        "causal",
        "FRIEND",
        "net_error",
        LAST_PARENT,
        "$last_parent",
        "0",
        "1",
        "-1",
        "0.5",
        "1.5",
        "nan",
        "1_0",
        "t1",
        "n1",
        '"',
        "'",
        '""',
        "''",
        "\\",
        "#",
        "//",
        "```",
        "-",
        "1.",
        '"two words"',
        "'it''s'",
        "\u0663",
        "bu\u0131ld_parent",
    ]
)
SEPARATORS = st.sampled_from([" ", "  ", "\t", "\u00a0", ""])
BREAKS = st.sampled_from(["\n", "\r\n", "\r", "\x0b", "\u2028", "\n\n"])


@st.composite
def near_valid_lines(draw: st.DrawFn) -> str:
    """An opcode in any case with about the right number of plausible or hostile args."""
    op = draw(st.sampled_from(list(Opcode)))
    head = draw(st.sampled_from([op.value, op.value.lower(), op.value.title()]))
    count = max(0, SIGNATURES[op].min_args + draw(st.integers(-1, 2)))
    args = draw(
        st.lists(st.one_of(WORDS, st.text(ANY_CHAR, max_size=4)), min_size=count, max_size=count)
    )
    line = head
    for arg in args:
        line += draw(SEPARATORS) or " "
        line += draw(st.sampled_from(["{}", '"{}"', "'{}'"])).format(arg)
    return line


@st.composite
def near_valid_programs(draw: st.DrawFn) -> str:
    word_soup = st.lists(st.one_of(WORDS, st.text(ANY_CHAR, max_size=4)), max_size=7).map(" ".join)
    lines = draw(st.lists(st.one_of(near_valid_lines(), word_soup), max_size=12))
    breaks = draw(st.lists(BREAKS, min_size=len(lines), max_size=len(lines)))
    return "".join(line + brk for line, brk in zip(lines, breaks, strict=True))


@given(near_valid_programs(), st.integers(0, 6))
# An unquoted description whose word the serializer must quote, then a bare non-class word:
# read back, it was a quoted description followed by an unknown failure class.
@example("EXTRACT_CONSTRAINT MEM_PTR MEM_PTR\u00a0MEM_PTR causal", 6)
def test_parser_never_raises_on_near_valid_programs(text: str, limit: int) -> None:
    check_invariants(text, parse_program(text, max_instructions=limit), limit)
