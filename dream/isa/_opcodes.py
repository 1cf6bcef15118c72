"""The dream ISA vocabulary: opcodes, their argument signatures, edge types and failure classes.

Everything the parser validates against lives here, so that the parser, the serializer, the
VM and the prompts share one definition of the language.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

import msgspec

__all__ = [
    "EDGE_TYPES",
    "FAILURE_CLASSES",
    "LAST_PARENT",
    "MAX_INDEX",
    "PHASE_OPCODES",
    "SIGNATURES",
    "ArgKind",
    "Opcode",
    "OpcodeGroup",
    "Param",
    "Signature",
    "last_parent_positions",
]

LAST_PARENT: Final = "$LAST_PARENT"
"""Symbolic node reference resolved by the VM to the most recent successful BUILD_PARENT."""

# Indices end up in 32-bit integer columns of the projections; anything larger is certainly a
# hallucination, and bounding the digit count also keeps int() far from CPython's
# 4300-digit conversion limit, which would otherwise raise on adversarial input.
MAX_INDEX: Final = 2**31 - 1

EDGE_TYPES: Final[tuple[str, ...]] = (
    "IS_CHILD_OF",
    "NEXT_STEP",
    "PREVIOUS_STEP",
    "CAUSAL",
    "CONTEXT_JUMP",
    "SIMILAR_TO",
    "MERGED_INTO",
)
"""Edge types LNK_NODE may create, in their canonical (upper-case) spelling."""

FAILURE_CLASSES: Final[tuple[str, ...]] = (
    # evolving-memory's nine classes.
    "physical_slip",
    "mechanical_stall",
    "vlm_hallucination",
    "lighting_glare",
    "command_lost",
    "sensor_occlusion",
    "timeout",
    "logic_error",
    "unknown_failure",
    # Classes for software agents.
    "tool_error",
    "test_failure",
    "wrong_assumption",
    "environment",
    "permission_denied",
)
"""Failure classes EXTRACT_CONSTRAINT may carry, in their canonical (lower-case) spelling."""


class OpcodeGroup(enum.StrEnum):
    """Functional group of an opcode; it is the high nibble of the opcode's code."""

    MEMORY = "memory"
    DREAM = "dream"
    SYSTEM = "system"


class Opcode(enum.StrEnum):
    """The ISA 1.0 opcodes.

    The value is the mnemonic rather than the numeric code so that events and logs stay
    readable and do not depend on a code assignment; the code is available as ``.code``.
    """

    MEM_PTR = "MEM_PTR"
    MEM_READ = "MEM_READ"
    MEM_NEXT = "MEM_NEXT"
    MEM_PREV = "MEM_PREV"
    MEM_PARENT = "MEM_PARENT"
    MEM_JMP = "MEM_JMP"
    EXTRACT_CONSTRAINT = "EXTRACT_CONSTRAINT"
    MARK_CRITICAL = "MARK_CRITICAL"
    MARK_NOISE = "MARK_NOISE"
    BUILD_PARENT = "BUILD_PARENT"
    BUILD_CHILD = "BUILD_CHILD"
    LNK_NODE = "LNK_NODE"
    GRP_NODE = "GRP_NODE"
    PRN_NODE = "PRN_NODE"
    NOP = "NOP"
    YIELD = "YIELD"
    HALT = "HALT"

    @property
    def code(self) -> int:
        """The one-byte numeric code; its high nibble is the group."""
        return _CODES[self]

    @property
    def group(self) -> OpcodeGroup:
        """The functional group, derived from the code's high nibble."""
        return _GROUPS_BY_NIBBLE[self.code >> 4]


_CODES: Final[Mapping[Opcode, int]] = MappingProxyType(
    {
        Opcode.MEM_PTR: 0x10,
        Opcode.MEM_READ: 0x11,
        Opcode.MEM_NEXT: 0x12,
        Opcode.MEM_PREV: 0x13,
        Opcode.MEM_PARENT: 0x14,
        Opcode.MEM_JMP: 0x15,
        Opcode.EXTRACT_CONSTRAINT: 0x20,
        Opcode.MARK_CRITICAL: 0x21,
        Opcode.MARK_NOISE: 0x22,
        Opcode.BUILD_PARENT: 0x23,
        Opcode.BUILD_CHILD: 0x24,
        Opcode.LNK_NODE: 0x25,
        Opcode.GRP_NODE: 0x26,
        Opcode.PRN_NODE: 0x27,
        Opcode.NOP: 0xF0,
        Opcode.YIELD: 0xF1,
        Opcode.HALT: 0xF2,
    }
)

_GROUPS_BY_NIBBLE: Final[Mapping[int, OpcodeGroup]] = MappingProxyType(
    {0x1: OpcodeGroup.MEMORY, 0x2: OpcodeGroup.DREAM, 0xF: OpcodeGroup.SYSTEM}
)


class ArgKind(enum.StrEnum):
    """What an argument position may hold; each kind has one validation rule in the parser."""

    TEXT = "text"
    """Free text, possibly empty."""
    TRACE_ID = "trace-id"
    """A non-blank trace identifier."""
    NODE_ID = "node-id"
    """A non-blank literal node id; ids starting with ``$`` are reserved for references."""
    NODE_REF = "node-ref"
    """A literal node id or the symbolic reference ``$LAST_PARENT``."""
    INDEX = "index"
    """A plain ASCII decimal integer in ``[0, MAX_INDEX]``."""
    CONFIDENCE = "confidence"
    """A finite unsigned decimal number in ``[0, 1]``."""
    EDGE_TYPE = "edge-type"
    """One of EDGE_TYPES, any ASCII case; normalised to upper case."""


class Param(msgspec.Struct, frozen=True):
    """One named argument position of an opcode."""

    name: str
    kind: ArgKind


class Signature(msgspec.Struct, frozen=True):
    """Argument grammar of an opcode: fixed positions, then an optional variadic tail.

    ``trailing_failure_class`` marks EXTRACT_CONSTRAINT, whose last argument is a failure
    class when it names one (see the parser for the exact rule).
    """

    params: tuple[Param, ...] = ()
    rest: Param | None = None
    trailing_failure_class: bool = False

    @property
    def min_args(self) -> int:
        """Fewest arguments accepted: every fixed position is required."""
        return len(self.params)

    @property
    def max_args(self) -> int | None:
        """Most arguments accepted, or None when a variadic tail takes any number."""
        return None if self.rest is not None else len(self.params)


def _sig(*params: tuple[str, ArgKind], rest: tuple[str, ArgKind] | None = None) -> Signature:
    tail = Param(*rest) if rest is not None else None
    return Signature(tuple(Param(name, kind) for name, kind in params), tail)


_TEXT, _INDEX = ArgKind.TEXT, ArgKind.INDEX
_NODE_ID, _NODE_REF, _TRACE_ID = ArgKind.NODE_ID, ArgKind.NODE_REF, ArgKind.TRACE_ID

# Opcodes that take exactly N arguments reject extras: evolving-memory silently ignores them,
# which hides a dreamer that misunderstood the grammar (e.g. an unquoted multi-word goal).
# Only MEM_PTR, YIELD and EXTRACT_CONSTRAINT are variadic, because evolving-memory joins their
# trailing words, so unquoted prose there is part of the language.
SIGNATURES: Final[Mapping[Opcode, Signature]] = MappingProxyType(
    {
        Opcode.MEM_PTR: _sig(rest=("query", _TEXT)),
        Opcode.MEM_READ: _sig(("node_id", _NODE_ID)),
        Opcode.MEM_NEXT: _sig(("child_id", _NODE_ID)),
        Opcode.MEM_PREV: _sig(("child_id", _NODE_ID)),
        Opcode.MEM_PARENT: _sig(("child_id", _NODE_ID)),
        Opcode.MEM_JMP: _sig(("node_id", _NODE_ID)),
        Opcode.EXTRACT_CONSTRAINT: Signature(
            (Param("trace_id", _TRACE_ID), Param("description", _TEXT)),
            rest=Param("description", _TEXT),
            trailing_failure_class=True,
        ),
        Opcode.MARK_CRITICAL: _sig(("trace_id", _TRACE_ID), ("action_index", _INDEX)),
        Opcode.MARK_NOISE: _sig(("trace_id", _TRACE_ID), ("action_index", _INDEX)),
        Opcode.BUILD_PARENT: _sig(
            ("goal", _TEXT), ("summary", _TEXT), ("confidence", ArgKind.CONFIDENCE)
        ),
        Opcode.BUILD_CHILD: _sig(
            ("parent", _NODE_REF),
            ("step_index", _INDEX),
            ("reasoning", _TEXT),
            ("action", _TEXT),
            ("result", _TEXT),
        ),
        Opcode.LNK_NODE: _sig(
            ("source", _NODE_REF), ("target", _NODE_REF), ("edge_type", ArgKind.EDGE_TYPE)
        ),
        Opcode.GRP_NODE: _sig(("node_a", _NODE_ID), ("node_b", _NODE_ID)),
        Opcode.PRN_NODE: _sig(("node_id", _NODE_ID)),
        Opcode.NOP: _sig(),
        Opcode.YIELD: _sig(rest=("message", _TEXT)),
        Opcode.HALT: _sig(),
    }
)


def last_parent_positions(opcode: Opcode) -> frozenset[int]:
    """Return the argument positions of ``opcode`` where ``$LAST_PARENT`` is resolved.

    In ISA 1.0 that is BUILD_CHILD arg 0 and LNK_NODE args 0 and 1; elsewhere the token is
    rejected in id positions and is plain text in text positions.
    """
    params = SIGNATURES[opcode].params
    return frozenset(i for i, p in enumerate(params) if p.kind is ArgKind.NODE_REF)


_SYSTEM: Final = frozenset({Opcode.NOP, Opcode.HALT})

PHASE_OPCODES: Final[Mapping[str, frozenset[Opcode]]] = MappingProxyType(
    {
        # SWS + REM, one program per trace: what the trace prompt offers. LNK_NODE stays
        # (the grammar lists it) but, like BUILD_CHILD, may only name the program's own nodes.
        "trace": _SYSTEM
        | {
            Opcode.EXTRACT_CONSTRAINT,
            Opcode.MARK_CRITICAL,
            Opcode.MARK_NOISE,
            Opcode.BUILD_PARENT,
            Opcode.BUILD_CHILD,
            Opcode.LNK_NODE,
        },
        "links": _SYSTEM | {Opcode.LNK_NODE},
        "compaction": _SYSTEM | {Opcode.BUILD_PARENT},
        "reconsolidation": _SYSTEM | {Opcode.BUILD_PARENT, Opcode.BUILD_CHILD},
        "consolidation": _SYSTEM | {Opcode.GRP_NODE},
    }
)
"""The opcodes each dream phase may run; no phase prunes (PRN_NODE is for people only).

A dreamer's text is model output, and a model can be steered by the traces it reads: a
phase that accepts more than it needs lets a tool result rewrite or delete memory.
"""
