"""Parser for dream programs: text in, a Program with per-line diagnostics out.

Rules beyond evolving-memory's grammar (docs/reference/dream-isa.md §3), each decided to
keep a dreamer's mistakes visible:

* Rejection is per line: a bad line yields diagnostics and no instruction, and every other
  line is still parsed. ``parse_program`` never raises on any ``str``.
* A line holding an unpaired surrogate is rejected (``invalid-unicode``), so every Program
  can be encoded as UTF-8 by msgspec.
* Opcodes fold ASCII case only (``BUILD_PARENT`` spelt with a dotless i, U+0131, is
  rejected; evolving-memory accepts it through Unicode ``upper()``), and resolve only against
  the opcode set of the requested ISA version (evolving-memory falls back to every opcode).
* The first line whose opcode is HALT ends the effective program even when its arguments
  make it invalid (``HALT # done``): a dreamer that meant to stop must not have later lines
  run. Later lines are still checked; valid ones get an ``after-halt`` diagnostic.
* After a quoted EXTRACT_CONSTRAINT description only a known failure class may follow: a
  trailing bare word is an invented or misspelt class, not more description (the
  reference folds ``"disk filled up" overheating`` into the text and accepts it).
* At most ``max_instructions`` instructions are kept, HALT included, so a parsed program
  never trips a VM with the same limit; the dropped run gets one ``too-many-instructions``
  diagnostic at its first line.
"""

from __future__ import annotations

import enum
import re
import shlex
from collections.abc import Iterator, Mapping
from typing import Final, NamedTuple

from ._arguments import (
    ArgProblem,
    arity_expectation,
    arity_ok,
    check_args,
    param_name,
    split_constraint_args,
)
from ._opcodes import Opcode
from ._program import (
    ISA_REGISTRY,
    ISA_VERSION,
    Diagnostic,
    DiagnosticCode,
    Instruction,
    IsaRegistry,
    Program,
)

__all__ = [
    "DEFAULT_MAX_INSTRUCTIONS",
    "TokenizerMode",
    "constraint_fields",
    "parse_program",
    "tokenize_line",
]

DEFAULT_MAX_INSTRUCTIONS: Final = 500

_REGEX_TOKEN: Final = re.compile(r'"([^"]*)"|(\S+)')
_FENCE_PREFIXES: Final = ("```", "~~~")
_LIST_MARKER: Final = re.compile(r"[-*+]|[0-9]+[.)]")
_SHOW_LIMIT: Final = 60
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


class TokenizerMode(enum.StrEnum):
    """Which of the three tokenizers produced a line's tokens."""

    SHLEX = "shlex"
    REGEX = "regex"
    SPLIT = "split"


def tokenize_line(line: str) -> tuple[list[str], TokenizerMode]:
    """Split a stripped source line into tokens, as evolving-memory's grammar does.

    POSIX ``shlex`` first; if it rejects the line (unbalanced quote, trailing backslash),
    a regex where double-quoted runs are one token and quotes are dropped, and single quotes
    mean nothing; finally ``str.split``.
    """
    try:
        return shlex.split(line), TokenizerMode.SHLEX
    except ValueError:
        pass
    tokens = [quoted or bare for quoted, bare in _REGEX_TOKEN.findall(line)]
    if tokens:
        return tokens, TokenizerMode.REGEX
    # Kept for fidelity to the grammar; a stripped non-empty line always has a regex match.
    return line.split(), TokenizerMode.SPLIT


def constraint_fields(instruction: Instruction) -> tuple[str, str, str]:
    """Return (trace_id, description, failure_class) of a parsed EXTRACT_CONSTRAINT.

    This is the single definition of how the optional trailing failure class is told apart
    from the description; the VM should use it rather than re-deriving the rule.
    """
    if instruction.opcode is not Opcode.EXTRACT_CONSTRAINT:
        raise ValueError(f"expected EXTRACT_CONSTRAINT, got {instruction.opcode}")
    return split_constraint_args(instruction.args)


def parse_program(
    text: str,
    *,
    isa_version: str = ISA_VERSION,
    max_instructions: int = DEFAULT_MAX_INSTRUCTIONS,
    registry: IsaRegistry = ISA_REGISTRY,
) -> Program:
    """Parse dream-program text into a Program; never raises for any ``text``.

    Raises ValueError only for caller errors: an unregistered ``isa_version`` or a negative
    ``max_instructions``.
    """
    if max_instructions < 0:
        raise ValueError(f"max_instructions must be >= 0, got {max_instructions}")
    table = {op.value: op for op in registry.opcodes(isa_version)}
    builder = _ProgramBuilder(max_instructions)
    for number, raw in _source_lines(text):
        builder.feed(_analyse_line(number, raw, table, isa_version))
    return builder.build(isa_version)


def _source_lines(text: str) -> Iterator[tuple[int, str]]:
    # splitlines() also breaks on VT, FF, FS/GS/RS, NEL, LS and PS; line numbers follow it
    # so that diagnostics agree with any editor that uses the same definition.
    for number, physical in enumerate(text.splitlines(), start=1):
        line = physical.strip()
        if line and not line.startswith(("#", "//")):
            yield number, line


class _LineResult(NamedTuple):
    number: int
    raw: str
    opcode: Opcode | None
    instruction: Instruction | None
    diagnostics: tuple[Diagnostic, ...]


def _analyse_line(
    number: int, raw: str, table: Mapping[str, Opcode], isa_version: str
) -> _LineResult:
    surrogate = _SURROGATE.search(raw)
    if surrogate is not None:
        return _LineResult(number, raw, None, None, (_invalid_unicode(number, raw, surrogate),))
    tokens, mode = tokenize_line(raw)
    head = tokens[0] if tokens else ""
    # ASCII-only folding: Unicode upper() maps dotless i and long s to I and S, which would
    # accept lookalike spellings while fullwidth and Cyrillic lookalikes are rejected anyway.
    opcode = table.get(head.upper()) if head.isascii() else None
    if opcode is None:
        message = _unknown_opcode_message(number, head, isa_version)
        diagnostic = Diagnostic(number, DiagnosticCode.UNKNOWN_OPCODE, message, None, raw)
        return _LineResult(number, raw, None, None, (diagnostic,))
    quoted = _quoted_flags(raw, mode, len(tokens))
    args = tuple(tokens[1:])
    canonical, diagnostics = _check_line_args(number, raw, opcode, args, quoted)
    instruction = None if diagnostics else Instruction(opcode, canonical, number, raw)
    return _LineResult(number, raw, opcode, instruction, diagnostics)


def _quoted_flags(raw: str, mode: TokenizerMode, count: int) -> tuple[bool, ...] | None:
    """Which tokens of the line were written quoted (None: not known for this line).

    The tokenizers drop the quotes; EXTRACT_CONSTRAINT needs to know whether its
    description was one quoted argument (then a trailing word can only be a class).
    """
    if mode is TokenizerMode.REGEX:
        flags = tuple(m.group(1) is not None for m in _REGEX_TOKEN.finditer(raw))
    elif mode is TokenizerMode.SHLEX:
        lexer = shlex.shlex(raw, posix=False)
        lexer.whitespace_split = True
        try:
            flags = tuple(token[:1] in ("'", '"') for token in lexer)
        except ValueError:
            return None
    else:
        return None
    return flags if len(flags) == count else None


def _check_line_args(
    number: int,
    raw: str,
    opcode: Opcode,
    args: tuple[str, ...],
    quoted: tuple[bool, ...] | None = None,
) -> tuple[tuple[str, ...], tuple[Diagnostic, ...]]:
    """Return the canonical arguments and the line's diagnostics (none if it is valid)."""
    if not arity_ok(opcode, len(args)):
        message = f"L{number}: {opcode} takes {arity_expectation(opcode)}, got {len(args)}"
        if opcode is Opcode.HALT:
            message += "; the program still halts here"
        return args, (Diagnostic(number, DiagnosticCode.ARITY, message, None, raw),)
    canonical, problems = check_args(opcode, args, quoted[1:] if quoted else None)
    return canonical, tuple(_arg_diagnostic(number, raw, opcode, args, p) for p in problems)


def _arg_diagnostic(
    number: int, raw: str, opcode: Opcode, args: tuple[str, ...], problem: ArgProblem
) -> Diagnostic:
    name = problem.param or param_name(opcode, problem.arg_index)
    message = f"L{number}: {opcode} {name} {problem.expected}, got {_show(args[problem.arg_index])}"
    if problem.hint:
        message += f"; {problem.hint}"
    return Diagnostic(number, problem.code, message, problem.arg_index, raw)


def _invalid_unicode(number: int, raw: str, surrogate: re.Match[str]) -> Diagnostic:
    # Lone surrogates reach us through JSON "\udXXX" escapes in LLM replies. They cannot be
    # encoded as UTF-8, so an instruction holding one would make the event log fail to
    # write; the raw text is kept with the surrogates escaped for the same reason.
    code_point = ord(surrogate.group())
    message = f"L{number}: unpaired surrogate U+{code_point:04X}; text must be valid Unicode"
    escaped = raw.encode("utf-8", "backslashreplace").decode("utf-8")
    return Diagnostic(number, DiagnosticCode.INVALID_UNICODE, message, None, escaped)


def _unknown_opcode_message(number: int, head: str, isa_version: str) -> str:
    message = f"L{number}: unknown opcode {_show(head)}"
    folded = head.upper()
    if head.startswith(_FENCE_PREFIXES):
        return message + " (a Markdown code fence; emit bare ISA lines only)"
    if _LIST_MARKER.fullmatch(head):
        return message + " (a list marker; write one bare instruction per line)"
    if folded in Opcode.__members__ and not head.isascii():
        return message + " (opcodes are ASCII; non-ASCII lookalike letters are not folded)"
    if folded in Opcode.__members__:
        return message + f" (not part of ISA {isa_version})"
    return message


def _show(value: str) -> str:
    """Quote a token for a message, bounded so hostile input cannot bloat diagnostics."""
    if len(value) <= _SHOW_LIMIT:
        return repr(value)
    return repr(value[:_SHOW_LIMIT]) + "..."


class _ProgramBuilder:
    """Accumulates line results, applying the HALT and instruction-limit rules."""

    def __init__(self, max_instructions: int) -> None:
        self._max = max_instructions
        self._kept: list[Instruction] = []
        self._diagnostics: list[Diagnostic] = []
        self._halt_line: int | None = None
        self._dropped = 0
        self._first_dropped: tuple[int, Instruction] | None = None

    def feed(self, result: _LineResult) -> None:
        """Record one non-blank, non-comment line."""
        if result.instruction is None:
            self._diagnostics.extend(result.diagnostics)
        elif self._halt_line is not None:
            self._diagnostics.append(self._after_halt(result.instruction, self._halt_line))
        else:
            self._keep(result.instruction)
        if result.opcode is Opcode.HALT and self._halt_line is None:
            self._halt_line = result.number

    def build(self, isa_version: str) -> Program:
        """Return the Program, inserting the instruction-limit diagnostic where it applies."""
        diagnostics = list(self._diagnostics)
        if self._first_dropped is not None:
            position, first = self._first_dropped
            diagnostics.insert(position, self._too_many(first))
        return Program(tuple(self._kept), tuple(diagnostics), isa_version)

    def _keep(self, instruction: Instruction) -> None:
        if len(self._kept) < self._max:
            self._kept.append(instruction)
            return
        if self._first_dropped is None:
            self._first_dropped = (len(self._diagnostics), instruction)
        self._dropped += 1

    def _too_many(self, first: Instruction) -> Diagnostic:
        message = (
            f"L{first.line}: program exceeds max_instructions={self._max};"
            f" {self._dropped} instruction(s) from this line on were dropped"
        )
        code = DiagnosticCode.TOO_MANY_INSTRUCTIONS
        return Diagnostic(first.line, code, message, None, first.raw)

    @staticmethod
    def _after_halt(instruction: Instruction, halt_line: int) -> Diagnostic:
        message = (
            f"L{instruction.line}: {instruction.opcode} comes after HALT on L{halt_line}"
            " and is ignored"
        )
        code = DiagnosticCode.AFTER_HALT
        return Diagnostic(instruction.line, code, message, None, instruction.raw)
