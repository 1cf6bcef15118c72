"""Validating instructions a dreamer hands over directly, by the parser's rules.

A dreamer written in Python (the heuristic) need not print ISA text for the parser to read
back: its instructions are checked argument by argument exactly as parsed lines are
(opcode in the ISA version, arity, argument grammar, canonical spelling), and each must be
writable as one ISA line, so ``serialize_program`` of the result parses to the same program.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from ._arguments import arity_expectation, arity_ok, check_args, param_name
from ._opcodes import Opcode
from ._parser import DEFAULT_MAX_INSTRUCTIONS
from ._program import (
    ISA_REGISTRY,
    ISA_VERSION,
    Diagnostic,
    DiagnosticCode,
    Instruction,
    IsaRegistry,
    Program,
)
from ._serializer import SerializationError, serialize_instruction

__all__ = ["checked_program"]


def checked_program(
    instructions: Iterable[Instruction],
    isa_version: str = ISA_VERSION,
    registry: IsaRegistry = ISA_REGISTRY,
    max_instructions: int = DEFAULT_MAX_INSTRUCTIONS,
) -> Program:
    """A Program of the valid instructions (up to the first HALT) with a diagnostic per bad one.

    An instruction's ``line`` is its 1-based position unless it carries one.
    """
    allowed = registry.opcodes(isa_version)
    kept: list[Instruction] = []
    diagnostics: list[Diagnostic] = []
    for position, inst in enumerate(instructions, start=1):
        line = inst.line or position
        problem = _problem(inst, line, allowed, isa_version)
        if isinstance(problem, Diagnostic):
            diagnostics.append(problem)
        elif len(kept) >= max_instructions:
            message = f"L{line}: program exceeds max_instructions={max_instructions}"
            diagnostics.append(Diagnostic(line, DiagnosticCode.TOO_MANY_INSTRUCTIONS, message))
            break
        else:
            kept.append(problem)
        if inst.opcode is Opcode.HALT:
            break
    return Program(tuple(kept), tuple(diagnostics), isa_version)


def _problem(
    inst: Instruction, line: int, allowed: frozenset[Opcode], isa_version: str
) -> Instruction | Diagnostic:
    if inst.opcode not in allowed:
        message = f"L{line}: opcode {inst.opcode} is not part of ISA {isa_version}"
        return Diagnostic(line, DiagnosticCode.UNKNOWN_OPCODE, message)
    if not arity_ok(inst.opcode, len(inst.args)):
        expected = arity_expectation(inst.opcode)
        message = f"L{line}: {inst.opcode} takes {expected}, got {len(inst.args)}"
        return Diagnostic(line, DiagnosticCode.ARITY, message)
    canonical, problems = check_args(inst.opcode, inst.args)
    if problems:
        p = problems[0]
        name = p.param or param_name(inst.opcode, p.arg_index)
        message = f"L{line}: {inst.opcode} {name} {p.expected}, got {inst.args[p.arg_index]!r}"
        return Diagnostic(line, p.code, message, p.arg_index)
    checked = msgspec.structs.replace(inst, args=canonical, line=line)
    try:
        raw = serialize_instruction(checked)
    except SerializationError as exc:
        return Diagnostic(line, DiagnosticCode.INVALID_UNICODE, f"L{line}: {exc}")
    return msgspec.structs.replace(checked, raw=raw)
