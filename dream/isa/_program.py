"""Typed results of parsing a dream program, and the registry of ISA versions."""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Final

import msgspec

from ._opcodes import Opcode

__all__ = [
    "ISA_REGISTRY",
    "ISA_VERSION",
    "Diagnostic",
    "DiagnosticCode",
    "Instruction",
    "IsaRegistry",
    "IsaVersion",
    "Program",
    "UpgradeTransform",
]

ISA_VERSION: Final = "1.0"
"""The current ISA version; programs are parsed against it unless told otherwise."""


class DiagnosticCode(enum.StrEnum):
    """Why a line produced no instruction."""

    INVALID_UNICODE = "invalid-unicode"
    UNKNOWN_OPCODE = "unknown-opcode"
    ARITY = "arity"
    BAD_INT = "bad-int"
    BAD_FLOAT = "bad-float"
    OUT_OF_RANGE = "out-of-range"
    UNKNOWN_EDGE_TYPE = "unknown-edge-type"
    UNKNOWN_FAILURE_CLASS = "unknown-failure-class"
    EMPTY_ARG = "empty-arg"
    BAD_REFERENCE = "bad-reference"
    TOO_MANY_INSTRUCTIONS = "too-many-instructions"
    AFTER_HALT = "after-halt"


class Diagnostic(msgspec.Struct, frozen=True):
    """One rejected line (or, for ``too-many-instructions``, the first of a dropped run).

    ``arg_index`` (0-based, counting arguments after the opcode) locates argument errors;
    it is more precise than a column because quoting changes where a token's text sits.
    ``message`` is self-contained and starts with ``L<line>:``.
    """

    line: int
    code: DiagnosticCode
    message: str
    arg_index: int | None = None
    raw: str = ""


class Instruction(msgspec.Struct, frozen=True):
    """One accepted instruction; ``line`` is 1-based and ``raw`` is the stripped source line.

    Arguments are strings exactly as tokenized, except that edge types are upper-cased and
    failure classes lower-cased to their canonical spelling.
    """

    opcode: Opcode
    args: tuple[str, ...] = ()
    line: int = 0
    raw: str = ""


class Program(msgspec.Struct, frozen=True):
    """A parsed program: the effective instructions and a diagnostic for every rejected line."""

    instructions: tuple[Instruction, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = ()
    isa_version: str = ISA_VERSION

    @property
    def ok(self) -> bool:
        """True when no line was rejected."""
        return not self.diagnostics


UpgradeTransform = Callable[[Instruction], Sequence[Instruction]]
"""Rewrites one instruction of the previous ISA version into zero or more of the next one."""


@dataclass(frozen=True, slots=True)
class IsaVersion:
    """A registered ISA version and, except for the first, how to upgrade from its predecessor."""

    version: str
    opcodes: frozenset[Opcode]
    previous: str | None = None
    upgrade: UpgradeTransform | None = None


class IsaRegistry:
    """Maps ISA versions to their opcode sets and chains upgrade transforms between them."""

    def __init__(self) -> None:
        self._versions: dict[str, IsaVersion] = {}

    def register(
        self,
        version: str,
        opcodes: Iterable[Opcode],
        *,
        previous: str | None = None,
        upgrade: UpgradeTransform | None = None,
    ) -> IsaVersion:
        """Register ``version``; a successor must name its predecessor and an upgrade."""
        if version in self._versions:
            raise ValueError(f"ISA version {version!r} is already registered")
        if (previous is None) != (upgrade is None):
            raise ValueError("'previous' and 'upgrade' must be given together")
        if previous is not None:
            self.get(previous)
        entry = IsaVersion(version, frozenset(opcodes), previous, upgrade)
        self._versions[version] = entry
        return entry

    def get(self, version: str) -> IsaVersion:
        """Return the registered version, or raise ValueError naming the known ones."""
        try:
            return self._versions[version]
        except KeyError:
            known = ", ".join(self._versions) or "none"
            raise ValueError(f"unknown ISA version {version!r} (known: {known})") from None

    def opcodes(self, version: str) -> frozenset[Opcode]:
        """Return the opcode set of ``version``."""
        return self.get(version).opcodes

    def supports(self, version: str, opcode: Opcode) -> bool:
        """Tell whether ``opcode`` belongs to ``version`` (False for unknown versions)."""
        entry = self._versions.get(version)
        return entry is not None and opcode in entry.opcodes

    def versions(self) -> tuple[str, ...]:
        """Registered versions in registration order."""
        return tuple(self._versions)

    def upgrade(self, program: Program, to_version: str) -> Program:
        """Rewrite ``program`` into ``to_version`` by applying each intermediate upgrade.

        Diagnostics are kept as they are: they describe the source text, not the rewrite.
        """
        instructions = program.instructions
        for step in self._chain(program.isa_version, to_version):
            instructions = _apply_upgrade(step, instructions)
        return msgspec.structs.replace(program, instructions=instructions, isa_version=to_version)

    def _chain(self, from_version: str, to_version: str) -> list[IsaVersion]:
        self.get(from_version)
        steps: list[IsaVersion] = []
        current = self.get(to_version)
        while current.version != from_version:
            if current.previous is None:
                raise ValueError(f"no upgrade path from ISA {from_version} to {to_version}")
            steps.append(current)
            current = self.get(current.previous)
        return steps[::-1]


def _apply_upgrade(
    step: IsaVersion, instructions: tuple[Instruction, ...]
) -> tuple[Instruction, ...]:
    transform = step.upgrade
    if transform is None:  # register() makes every successor carry a transform
        raise ValueError(f"ISA {step.version} has no upgrade transform")
    out = tuple(new for inst in instructions for new in transform(inst))
    stray = sorted({inst.opcode for inst in out} - step.opcodes)
    if stray:
        raise ValueError(f"upgrade to ISA {step.version} produced foreign opcodes: {stray}")
    return out


ISA_REGISTRY: Final = IsaRegistry()
"""The process-wide registry; ISA 1.0 holds all seventeen opcodes."""
ISA_REGISTRY.register(ISA_VERSION, Opcode)
