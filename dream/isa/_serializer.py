"""Serializer for dream programs: the inverse of the parser's shlex mode.

An argument made only of unambiguous ASCII characters is written bare; any other argument,
including the empty string, is wrapped in single quotes, with each embedded single quote
written as ``'"'"'`` (close quote, a double-quoted quote, reopen). In POSIX shlex a
single-quoted run is literal up to the next single quote, so backslashes, double quotes,
tabs, NBSP, a leading ``#`` and every other character read back unchanged, and the quotes
always balance, so the parser never falls back to its regex tokenizer for our output.

Line breaks are the exception: the parser splits text with ``str.splitlines()`` before it
tokenizes, and neither tokenizer has an escape for a line break, so an argument holding one
of those characters cannot be written on one physical line. Such arguments are rejected with
SerializationError rather than encoded in some private escape: the parser can never produce
them, so rejecting keeps the serializer's domain equal to the parser's range. Unpaired
surrogates are rejected for the same reason.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable
from typing import Final

from ._program import Instruction, Program

__all__ = [
    "LINE_BREAKS",
    "SerializationError",
    "quote_arg",
    "serialize_instruction",
    "serialize_program",
]

LINE_BREAKS: Final = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
"""Every character on which ``str.splitlines()`` breaks a line."""

_SURROGATE: Final = re.compile("[\ud800-\udfff]")
# "$" is safe because shlex.split does no expansion; it lets $LAST_PARENT stay readable.
_BARE_SAFE: Final = frozenset(string.ascii_letters + string.digits + "@%+=:,./-_$")


class SerializationError(ValueError):
    """An instruction cannot be written as one line of ISA text."""


def quote_arg(arg: str) -> str:
    """Return ``arg`` as a single token that the parser's shlex mode reads back exactly.

    Raises SerializationError if ``arg`` contains a line break (see LINE_BREAKS) or an
    unpaired surrogate (not valid Unicode text, and rejected by the parser).
    """
    breaks = LINE_BREAKS.intersection(arg)
    if breaks:
        shown = ", ".join(f"U+{ord(c):04X}" for c in sorted(breaks))
        raise SerializationError(f"argument {arg[:40]!r} contains line break(s) {shown}")
    surrogate = _SURROGATE.search(arg)
    if surrogate is not None:
        code = f"U+{ord(surrogate.group()):04X}"
        raise SerializationError(f"argument {arg[:40]!r} contains unpaired surrogate {code}")
    if arg and _BARE_SAFE.issuperset(arg):
        return arg
    return "'" + arg.replace("'", "'\"'\"'") + "'"


def serialize_instruction(instruction: Instruction) -> str:
    """Return one line of ISA text for ``instruction`` (opcode, then quoted arguments).

    Only the syntax is produced: whether the arguments are valid for the opcode is the
    parser's concern, so an invalid instruction serializes to a line the parser rejects.
    """
    parts = [instruction.opcode.value]
    for index, arg in enumerate(instruction.args):
        try:
            parts.append(quote_arg(arg))
        except SerializationError as exc:
            where = f" (L{instruction.line})" if instruction.line else ""
            raise SerializationError(f"{instruction.opcode}{where} arg {index}: {exc}") from None
    return " ".join(parts)


def serialize_program(program: Program | Iterable[Instruction]) -> str:
    """Return ISA text for a program: one instruction per line, newline-terminated.

    Diagnostics are not written: rejected lines have no instruction to reproduce.
    """
    instructions = program.instructions if isinstance(program, Program) else program
    return "".join(serialize_instruction(inst) + "\n" for inst in instructions)
