"""Dream cycles: the opcode ISA, its parser and VM, dreamers and the memory graph.

A dreamer writes a program in a small text ISA; the parser turns it into typed
instructions with line-numbered diagnostics; the VM stages its effects on an overlay of the
memory graph; the cycle appends every effect as an event in one atomic batch, so a replay
rebuilds the memory graph without a model, and a retraction undoes a cycle.

Errors::

    DreamError                    base of the errors below
    ├── ProgramError              a program failed in the VM (a dangling node, a bad index)
    ├── CycleError                a dream cycle failed; nothing of it was appended
    ├── UndoError                 unknown or already undone cycle, or later cycles depend on it
    ├── EvolveError               a memory-evolution run failed; nothing of it was appended
    │   ├── StrategyError         a strategy raised or returned something other than items
    │   ├── SettingError          a strategy setting out of its range (ValueError)
    │   └── ExpressionError       a pipeline expression did not parse (ValueError)
    └── DreamerError              a dreamer could not produce a program
        ├── DreamerConfigError    missing API key or SDK, a bad option
        ├── DreamerConnectionError the API could not be reached (after retries)
        ├── DreamerOutputError    the reply was not a valid program (after a repair turn)
        └── DreamerAPIError       the API answered with an error status (after retries)
            └── DreamerRateLimitError  rate limited (429) or overloaded (529)
    SerializationError            an instruction cannot be written as one ISA line
"""

from ._claude import DEFAULT_MODEL as CLAUDE_DEFAULT_MODEL
from ._claude import ClaudeDreamer
from ._cycle import CycleReport, DreamConfig, DreamReport, Progress, dream
from ._dreamer import Dreamer, DreamProgram, LinkCandidate
from ._errors import (
    CycleError,
    DreamerAPIError,
    DreamerConfigError,
    DreamerConnectionError,
    DreamerError,
    DreamerOutputError,
    DreamerRateLimitError,
    DreamError,
    EvolveError,
    ExpressionError,
    ProgramError,
    SettingError,
    StrategyError,
    UndoError,
)
from ._heuristic import HeuristicDreamer, classify_failure, confidence_of
from ._phases import FIDELITY
from ._traces import Trace, TraceStep, load_traces
from ._undo import dependent_cycles, undo_cycle
from .isa._opcodes import (
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
from .isa._parser import (
    DEFAULT_MAX_INSTRUCTIONS,
    TokenizerMode,
    constraint_fields,
    parse_program,
    tokenize_line,
)
from .isa._program import (
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
from .isa._serializer import (
    LINE_BREAKS,
    SerializationError,
    serialize_instruction,
    serialize_program,
)
from .isa._vm import VMContext, VMResult, run_program

__all__ = [
    "CLAUDE_DEFAULT_MODEL",
    "DEFAULT_MAX_INSTRUCTIONS",
    "EDGE_TYPES",
    "FAILURE_CLASSES",
    "FIDELITY",
    "ISA_REGISTRY",
    "ISA_VERSION",
    "LAST_PARENT",
    "LINE_BREAKS",
    "MAX_INDEX",
    "SIGNATURES",
    "ArgKind",
    "ClaudeDreamer",
    "CycleError",
    "CycleReport",
    "Diagnostic",
    "DiagnosticCode",
    "DreamConfig",
    "DreamError",
    "DreamProgram",
    "DreamReport",
    "Dreamer",
    "DreamerAPIError",
    "DreamerConfigError",
    "DreamerConnectionError",
    "DreamerError",
    "DreamerOutputError",
    "DreamerRateLimitError",
    "EvolveError",
    "ExpressionError",
    "HeuristicDreamer",
    "Instruction",
    "IsaRegistry",
    "IsaVersion",
    "LinkCandidate",
    "Opcode",
    "OpcodeGroup",
    "Param",
    "Program",
    "ProgramError",
    "Progress",
    "SerializationError",
    "SettingError",
    "Signature",
    "StrategyError",
    "TokenizerMode",
    "Trace",
    "TraceStep",
    "UndoError",
    "UpgradeTransform",
    "VMContext",
    "VMResult",
    "classify_failure",
    "confidence_of",
    "constraint_fields",
    "dependent_cycles",
    "dream",
    "last_parent_positions",
    "load_traces",
    "parse_program",
    "run_program",
    "serialize_instruction",
    "serialize_program",
    "tokenize_line",
    "undo_cycle",
]
