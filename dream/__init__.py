"""Dream cycles: the opcode ISA, its parser and VM, dreamers and the memory graph.

A dreamer writes a program in a small text ISA; the parser turns it into typed
instructions with line-numbered diagnostics; the VM stages its effects; the cycle appends
every effect as an event, so a replay rebuilds the memory graph without a model.

Errors::

    SerializationError   an instruction cannot be written as one ISA line
"""

from ._opcodes import (
    EDGE_TYPES,
    FAILURE_CLASSES,
    LAST_PARENT,
    MAX_INDEX,
    SIGNATURES,
    ArgKind,
    Opcode,
    OpcodeGroup,
    Param,
    Signature,
    last_parent_positions,
)
from ._parser import (
    DEFAULT_MAX_INSTRUCTIONS,
    TokenizerMode,
    constraint_fields,
    parse_program,
    tokenize_line,
)
from ._program import (
    ISA_REGISTRY,
    ISA_VERSION,
    Diagnostic,
    DiagnosticCode,
    Instruction,
    IsaRegistry,
    IsaVersion,
    Program,
    UpgradeTransform,
)
from ._serializer import (
    LINE_BREAKS,
    SerializationError,
    quote_arg,
    serialize_instruction,
    serialize_program,
)

__all__ = [
    "DEFAULT_MAX_INSTRUCTIONS",
    "EDGE_TYPES",
    "FAILURE_CLASSES",
    "ISA_REGISTRY",
    "ISA_VERSION",
    "LAST_PARENT",
    "LINE_BREAKS",
    "MAX_INDEX",
    "SIGNATURES",
    "ArgKind",
    "Diagnostic",
    "DiagnosticCode",
    "Instruction",
    "IsaRegistry",
    "IsaVersion",
    "Opcode",
    "OpcodeGroup",
    "Param",
    "Program",
    "SerializationError",
    "Signature",
    "TokenizerMode",
    "UpgradeTransform",
    "constraint_fields",
    "last_parent_positions",
    "parse_program",
    "quote_arg",
    "serialize_instruction",
    "serialize_program",
    "tokenize_line",
]
