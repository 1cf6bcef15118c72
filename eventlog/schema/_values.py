"""Checks that an event's values can be stored losslessly on every path of the log.

msgpack (the WAL) carries more than JSON and Parquet do: bytes, non-text map keys, NaN,
timestamps. A free-form field (``observed``, ``selector``, ...) holding one of those would
replay differently from the WAL, from a sealed segment (JSON text) and from ``evolog replay``,
so such values are rejected at append, where the caller can still fix them.
"""

from __future__ import annotations

import functools
import math
import typing
from typing import Any

import msgspec

from .._errors import InvalidEventError


def _mentions_any(annotation: Any) -> bool:
    if isinstance(annotation, str):  # postponed annotations (``from __future__ import ...``)
        return "Any" in annotation
    if annotation is Any:
        return True
    return any(_mentions_any(a) for a in typing.get_args(annotation))


@functools.cache
def free_fields(cls: type[msgspec.Struct]) -> tuple[str, ...]:
    """The fields of ``cls`` whose type admits any JSON value."""
    hints: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        # Not inspect.get_annotations: importing inspect costs milliseconds on the hook path.
        hints.update(klass.__dict__.get("__annotations__", {}))  # noqa: RUF063
    return tuple(n for n in cls.__struct_fields__ if _mentions_any(hints.get(n)))


def json_problem(value: Any, path: str) -> str | None:
    """What in ``value`` JSON cannot carry, and where; None when it is plain JSON."""
    if value is None or isinstance(value, (bool, int, str)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"got {value!r} at {path}"
    if isinstance(value, list):
        for i, item in enumerate(value):
            problem = json_problem(item, f"{path}[{i}]")
            if problem:
                return problem
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"got a {type(key).__name__} key {key!r} at {path}"
            problem = json_problem(item, f"{path}.{key}")
            if problem:
                return problem
        return None
    return f"got {type(value).__name__} at {path}"


def _kind(event: msgspec.Struct) -> str:
    return str(event.__struct_config__.tag)


def check_free_fields(event: msgspec.Struct, where: str) -> None:
    """Raise InvalidEventError if a free-form field holds something JSON cannot carry."""
    for name in free_fields(type(event)):
        problem = json_problem(getattr(event, name), name)
        if problem:
            raise InvalidEventError(
                f"{_kind(event)} event, field '{name}': expected JSON values (text keys, "
                f"finite numbers); {problem}",
                where=where,
                field=name,
            )


def unencodable_error(event: msgspec.Struct, exc: Exception, where: str) -> InvalidEventError:
    """The error for an event msgpack cannot encode, naming the field when it can."""
    field = unencodable_field(event)
    at = f", field '{field}'" if field else ""
    return InvalidEventError(
        f"{_kind(event)} event{at}: expected UTF-8 text, 64-bit integers or JSON values; "
        f"got a value that cannot be stored ({exc})",
        where=where,
        field=field,
    )


def unencodable_field(event: msgspec.Struct) -> str:
    """The first field of ``event`` msgpack cannot encode ('' if none is found alone)."""
    encoder = msgspec.msgpack.Encoder()
    for name in event.__struct_fields__:
        try:
            encoder.encode(getattr(event, name))
        except (TypeError, ValueError, OverflowError, RecursionError):
            return name
    return ""
