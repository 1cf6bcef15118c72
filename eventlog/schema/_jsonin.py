"""Events from JSON text and Python builtins, as people and pipes write them.

``ts`` may be integer microseconds or ISO-8601 text; fields a kind does not have are
rejected (a typo would otherwise be dropped silently); every failure is one line.
"""

from __future__ import annotations

from typing import Any

import msgspec

from .._errors import InvalidEventError
from ._codec import json_decoder
from ._errmsg import validation_error
from ._rules import ts_problem
from ._union import KINDS, AnyEvent


def parse_ts(value: Any, where: str = "") -> int:
    """Accept integer microseconds or an ISO-8601 string (no offset means UTC)."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise InvalidEventError(
            f"field 'ts': expected integer microseconds or ISO-8601 text; got {value!r}",
            where=where,
            field="ts",
        )
    if isinstance(value, int):
        return _in_range(value, where)
    from datetime import UTC, datetime  # not on the hook path: ts is usually an int

    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidEventError(
            f"field 'ts': expected ISO-8601 text like 2026-03-01T12:00:00Z; got {value!r}",
            where=where,
            field="ts",
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    delta = parsed - datetime(1970, 1, 1, tzinfo=UTC)
    return _in_range((delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds, where)


def _in_range(ts: int, where: str) -> int:
    problem = ts_problem(ts)
    if problem:
        raise InvalidEventError(f"field 'ts': {problem}", where=where, field="ts")
    return ts


def check_fields(data: Any, where: str = "") -> None:
    """Reject fields the event's kind does not have (a typo would otherwise be dropped)."""
    if not isinstance(data, dict):
        return
    cls = KINDS.get(data.get("kind"))  # type: ignore[arg-type]
    if cls is None:
        return
    unknown = sorted(set(data) - set(cls.__struct_fields__) - {"kind"})
    if unknown:
        raise InvalidEventError(
            f"{data['kind']} event: unknown field {unknown[0]!r}; expected fields of "
            f"{data['kind']}: {', '.join(sorted(cls.__struct_fields__))}",
            where=where,
            field=unknown[0],
        )


def from_json(line: bytes | str, where: str = "") -> AnyEvent:
    """Decode one JSON event, with a one-line error naming the field on failure."""
    try:
        return _from_json(line, where)
    except RecursionError:
        raise _too_deep(where) from None


def _too_deep(where: str) -> InvalidEventError:
    # msgspec and the checks below recurse once per nesting level; past the interpreter's
    # limit that is a RecursionError, which is a property of the input, not a bug.
    return InvalidEventError(
        "expected JSON nested at most a few hundred levels deep; got deeper nesting",
        where=where,
    )


def _from_json(line: bytes | str, where: str) -> AnyEvent:
    try:
        event = json_decoder().decode(line)
        check_fields(msgspec.json.decode(line), where)
        return event
    except msgspec.ValidationError as exc:
        data = _loads_or_raise(line, where)
        if isinstance(data, dict) and isinstance(data.get("ts"), str):
            data["ts"] = parse_ts(data["ts"], where)
            check_fields(data, where)
            try:
                converted: AnyEvent = msgspec.convert(data, AnyEvent)
                return converted
            except msgspec.ValidationError as exc2:
                raise validation_error(exc2, data, where) from None
        raise validation_error(exc, data, where) from None
    except (msgspec.DecodeError, UnicodeDecodeError):  # msgspec: bad UTF-8 in a string
        _loads_or_raise(line, where)
        raise  # pragma: no cover - _loads_or_raise always raises here


def _loads_or_raise(line: bytes | str, where: str) -> Any:
    try:
        return msgspec.json.decode(line)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        if isinstance(line, bytes):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as uexc:
                raise InvalidEventError(
                    f"expected UTF-8 text; got invalid byte at offset {uexc.start}",
                    where=where,
                ) from None
        raise InvalidEventError(
            f"expected one JSON object; got malformed JSON ({_json_problem(exc)})", where=where
        ) from None


def _json_problem(exc: Exception) -> str:
    text = str(exc)
    if text.startswith("Number out of range"):
        return "a number outside the 64-bit float range"
    return text


def from_builtins(data: Any, where: str = "") -> AnyEvent:
    """Convert a dict (e.g. from a hook payload) to an event, validating it."""
    try:
        return _from_builtins(data, where)
    except RecursionError:
        raise _too_deep(where) from None


def _from_builtins(data: Any, where: str) -> AnyEvent:
    if isinstance(data, dict) and isinstance(data.get("ts"), str):
        data = dict(data, ts=parse_ts(data["ts"], where))
    check_fields(data, where)
    try:
        event: AnyEvent = msgspec.convert(data, AnyEvent)
        return event
    except msgspec.ValidationError as exc:
        raise validation_error(exc, data, where) from None
