"""Pipeline expressions: ``"ace >> reasoning_bank >> reme"``, ``"(ace | reme) >> reasoning_bank"``.

A small recursive-descent parser (never ``eval``) with Python's precedence, so an
expression means what the same operators mean in code: ``>>`` binds tighter than ``|``
(``a | b >> c`` is ``a | (b >> c)``); parentheses group. A malformed expression raises
:class:`ExpressionError` naming the 1-based position and what was expected there.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from .._errors import ExpressionError
from ._pipeline import Pipeline, Strategy

__all__ = ["parse_pipeline"]

_TOKEN = re.compile(r"\s*(?:(>>)|(\|)|(\()|(\))|([A-Za-z_][A-Za-z0-9_]*)|(\S))")


def _tokens(text: str) -> list[tuple[str, str, int]]:
    out = []
    for m in _TOKEN.finditer(text):
        kind = ("op", "op", "(", ")", "name", "bad")[m.lastindex - 1 if m.lastindex else 5]
        value = m.group(m.lastindex or 6)
        out.append((kind, value, m.start(m.lastindex or 6) + 1))
    out.append(("end", "", len(text) + 1))
    return out


def parse_pipeline(text: str, registry: Mapping[str, Callable[[], Strategy]]) -> Strategy:
    """The strategy ``text`` describes, built from ``registry`` (name -> factory)."""
    if not isinstance(text, str):
        raise ExpressionError(f"expression: expected text; got {type(text).__name__}")
    tokens = _tokens(text)
    pos = 0
    names = ", ".join(sorted(registry))

    def fail(expected: str) -> ExpressionError:
        kind, value, at = tokens[pos]
        got = "the end" if kind == "end" else repr(value)
        return ExpressionError(
            f"expression {text!r}: expected {expected} at position {at}; got {got}", at
        )

    def atom() -> Strategy:
        nonlocal pos
        kind, value, _ = tokens[pos]
        if kind == "(":
            pos += 1
            inner = alternatives()
            if tokens[pos][0] != ")":
                raise fail("')'")
            pos += 1
            return inner
        if kind == "name":
            if value not in registry:
                raise fail(f"a strategy name ({names})")
            pos += 1
            return registry[value]()
        raise fail(f"a strategy name ({names}) or '('")

    def sequence() -> Strategy:
        nonlocal pos
        parts = [atom()]
        while tokens[pos][1] == ">>":
            pos += 1
            parts.append(atom())
        return parts[0] if len(parts) == 1 else Pipeline.of("sequential", *parts)

    def alternatives() -> Strategy:
        nonlocal pos
        parts = [sequence()]
        while tokens[pos][1] == "|":
            pos += 1
            parts.append(sequence())
        return parts[0] if len(parts) == 1 else Pipeline.of("parallel", *parts)

    result = alternatives()
    if tokens[pos][0] != "end":
        raise fail("'>>', '|' or the end")
    return result
