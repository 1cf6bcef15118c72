"""Parse-time validation of instruction arguments against the opcode signatures.

evolving-memory's interpreter converts arguments lazily with Python's ``int()``/``float()`` and
silently does nothing (or substitutes a default) when that fails. Here every argument is
checked when the line is parsed, with a grammar narrower than Python's numeric literals, so a
rejected argument always surfaces as a diagnostic instead of a silent no-op in the VM.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Final, NamedTuple

from ._opcodes import (
    EDGE_TYPES,
    FAILURE_CLASSES,
    LAST_PARENT,
    MAX_INDEX,
    SIGNATURES,
    ArgKind,
    Opcode,
    Param,
    Signature,
)
from ._program import DiagnosticCode

__all__ = [
    "ArgProblem",
    "arity_expectation",
    "arity_ok",
    "check_args",
    "failure_class",
    "param_name",
    "split_constraint_args",
]

# Unsigned on purpose: a sign is never meaningful for an index or a confidence, and accepting
# "-1" is exactly how evolving-memory ends up indexing actions from the end.
_INDEX_RE: Final = re.compile(r"[0-9]+")
_CONFIDENCE_RE: Final = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
# What a dreamer writes when it means a failure class: a snake_case identifier. A single bare
# word is deliberately not class-like, because unquoted descriptions end in ordinary words.
_CLASS_LIKE_RE: Final = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+")

_FAILURE_CLASS_SET: Final = frozenset(FAILURE_CLASSES)
_EDGE_TYPE_SET: Final = frozenset(EDGE_TYPES)
_NUMBER_EXPECTATION: Final = "must be a number in [0, 1]"
_INDEX_EXPECTATION: Final = "must be a non-negative integer in ASCII digits"


class ArgProblem(NamedTuple):
    """Why one argument was rejected.

    ``expected`` completes "<OPCODE> <param> ..."; ``param`` overrides the signature's name
    for the position and ``hint`` is advice to append after the offending value.
    """

    arg_index: int
    code: DiagnosticCode
    expected: str
    param: str | None = None
    hint: str = ""


class _Bad(NamedTuple):
    code: DiagnosticCode
    expected: str


def failure_class(token: str) -> str | None:
    """Return the canonical failure class named by ``token``, or None.

    Matching ignores ASCII case only: Unicode case mapping would let lookalikes such as a
    dotless i or a long s stand in for ASCII letters.
    """
    if not token.isascii():
        return None
    canonical = token.lower()
    return canonical if canonical in _FAILURE_CLASS_SET else None


def _is_blank(value: str) -> bool:
    return not value.strip()


def _check_text(value: str) -> str | _Bad:
    return value


def _check_trace_id(value: str) -> str | _Bad:
    if _is_blank(value):
        return _Bad(DiagnosticCode.EMPTY_ARG, "must not be blank")
    return value


def _check_node_id(value: str) -> str | _Bad:
    if _is_blank(value):
        return _Bad(DiagnosticCode.EMPTY_ARG, "must not be blank")
    if value.startswith("$"):
        # Such a token is never resolved here, so it would become a dangling literal id.
        return _Bad(
            DiagnosticCode.BAD_REFERENCE,
            f"must be a literal node id ('$' starts a reference, and {LAST_PARENT} is only"
            " resolved as BUILD_CHILD parent and LNK_NODE source/target)",
        )
    return value


def _check_node_ref(value: str) -> str | _Bad:
    if value == LAST_PARENT:
        return value
    checked = _check_node_id(value)
    if isinstance(checked, _Bad) and checked.code is DiagnosticCode.BAD_REFERENCE:
        # Catches $last_parent, $LAST_PARENT_X and friends, which evolving-memory keeps as
        # literal ids that can never match a node.
        return _Bad(checked.code, f"must be a node id or exactly {LAST_PARENT}")
    return checked


def _check_index(value: str) -> str | _Bad:
    if not _INDEX_RE.fullmatch(value):
        return _Bad(DiagnosticCode.BAD_INT, _INDEX_EXPECTATION)
    significant = value.lstrip("0")
    if len(significant) > len(str(MAX_INDEX)) or int(significant or "0") > MAX_INDEX:
        return _Bad(DiagnosticCode.OUT_OF_RANGE, f"must be at most {MAX_INDEX}")
    return value


def _check_confidence(value: str) -> str | _Bad:
    if not _CONFIDENCE_RE.fullmatch(value):
        return _Bad(DiagnosticCode.BAD_FLOAT, _NUMBER_EXPECTATION)
    number = float(value)  # cannot raise: the grammar is a subset of float()'s
    if not (math.isfinite(number) and number <= 1.0):
        return _Bad(DiagnosticCode.OUT_OF_RANGE, _NUMBER_EXPECTATION)
    return value


def _check_edge_type(value: str) -> str | _Bad:
    canonical = value.upper() if value.isascii() else value
    if canonical in _EDGE_TYPE_SET:
        return canonical
    return _Bad(DiagnosticCode.UNKNOWN_EDGE_TYPE, f"must be one of {', '.join(EDGE_TYPES)}")


_CHECKS: Final[Mapping[ArgKind, Callable[[str], str | _Bad]]] = MappingProxyType(
    {
        ArgKind.TEXT: _check_text,
        ArgKind.TRACE_ID: _check_trace_id,
        ArgKind.NODE_ID: _check_node_id,
        ArgKind.NODE_REF: _check_node_ref,
        ArgKind.INDEX: _check_index,
        ArgKind.CONFIDENCE: _check_confidence,
        ArgKind.EDGE_TYPE: _check_edge_type,
    }
)


def _param_at(signature: Signature, index: int) -> Param:
    if index < len(signature.params):
        return signature.params[index]
    if signature.rest is None:
        raise IndexError(index)  # unreachable after the arity check
    return signature.rest


def arity_expectation(opcode: Opcode) -> str:
    """Describe the argument counts ``opcode`` accepts, for arity diagnostics."""
    signature = SIGNATURES[opcode]
    names = " ".join(p.name for p in signature.params)
    if signature.max_args is None:
        return f"at least {signature.min_args} argument(s) ({names} ...)"
    if signature.max_args == 0:
        return "no arguments"
    return f"exactly {signature.max_args} argument(s) ({names})"


def arity_ok(opcode: Opcode, count: int) -> bool:
    """Tell whether ``count`` arguments fit the opcode's signature."""
    signature = SIGNATURES[opcode]
    if count < signature.min_args:
        return False
    return signature.max_args is None or count <= signature.max_args


def param_name(opcode: Opcode, index: int) -> str:
    """Name of argument position ``index`` of ``opcode`` (arity must already be checked)."""
    return _param_at(SIGNATURES[opcode], index).name


def check_args(
    opcode: Opcode, args: tuple[str, ...], quoted: tuple[bool, ...] | None = None
) -> tuple[tuple[str, ...], tuple[ArgProblem, ...]]:
    """Validate and canonicalise ``args`` (whose count must fit the signature).

    ``quoted``: which arguments were written in quotes, if known. Returns the canonical
    arguments and every problem found; the line is valid iff there are no problems.
    """
    signature = SIGNATURES[opcode]
    out: list[str] = []
    problems: list[ArgProblem] = []
    for index, value in enumerate(args):
        checked = _CHECKS[_param_at(signature, index).kind](value)
        if isinstance(checked, _Bad):
            problems.append(ArgProblem(index, checked.code, checked.expected))
            out.append(value)
        else:
            out.append(checked)
    canonical = tuple(out)
    if signature.trailing_failure_class:
        canonical, extra = _check_constraint_tail(canonical, quoted)
        problems.extend(extra)
    return canonical, tuple(problems)


def _check_constraint_tail(
    args: tuple[str, ...], quoted: tuple[bool, ...] | None = None
) -> tuple[tuple[str, ...], tuple[ArgProblem, ...]]:
    problems: list[ArgProblem] = []
    single = len(args) == 3 and failure_class(args[2]) is not None
    if quoted and len(quoted) == len(args) and quoted[1] and len(args) >= 3 and not single:
        # The description was given whole, in quotes: what follows can only be the class.
        # A bare word there is an invented class, never more description.
        problems.append(
            ArgProblem(
                2,
                DiagnosticCode.UNKNOWN_FAILURE_CLASS,
                f"must be one of {', '.join(FAILURE_CLASSES)}",
                param="failure_class",
                hint="after a quoted description only one failure class may follow;"
                " put every word of the description inside the quotes",
            )
        )
        description = args[1]
    elif len(args) >= 3 and _CLASS_LIKE_RE.fullmatch(args[-1]) and not failure_class(args[-1]):
        # Folding an unknown class into the description would hide a typo'd or invented
        # class and corrupt the constraint text; quoting the description avoids this.
        problems.append(
            ArgProblem(
                len(args) - 1,
                DiagnosticCode.UNKNOWN_FAILURE_CLASS,
                f"must be one of {', '.join(FAILURE_CLASSES)}",
                param="failure_class",
                hint="if it belongs to the description, quote the whole description",
            )
        )
        description = " ".join(args[1:-1])
    else:
        description, cls = _constraint_parts(args)
        # Canonical form: (trace, description[, class]). Keeping the unquoted words as
        # separate arguments would let a serialized program read back differently (a word
        # the serializer must quote, followed by a bare word, becomes a quoted description
        # plus an unknown class).
        args = (args[0], description, cls) if cls else (args[0], description)
    if _is_blank(description):
        problems.append(ArgProblem(1, DiagnosticCode.EMPTY_ARG, "must not be blank"))
    return args, tuple(problems)


def _constraint_parts(args: tuple[str, ...]) -> tuple[str, str]:
    cls = failure_class(args[-1]) if len(args) >= 3 else None
    if cls is None:
        return " ".join(args[1:]), ""
    return " ".join(args[1:-1]), cls


def split_constraint_args(args: tuple[str, ...]) -> tuple[str, str, str]:
    """Split valid EXTRACT_CONSTRAINT args into (trace_id, description, failure_class).

    With three or more arguments, a last argument naming a known failure class (any ASCII
    case) is the class; every other argument after the trace id belongs to the description,
    joined by one space. The class is ``""`` when absent. With exactly two arguments the
    second is always the description, even if it spells a class name.
    """
    if len(args) < 2:
        raise ValueError("EXTRACT_CONSTRAINT needs a trace id and a description")
    description, cls = _constraint_parts(args)
    return args[0], description, cls
