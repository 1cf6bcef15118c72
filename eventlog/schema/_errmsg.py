"""One-line validation errors: the field, what was expected, what was got."""

from __future__ import annotations

from typing import Any

import msgspec

from .._errors import InvalidEventError
from ._events import Event
from ._union import KINDS


def kind_error(data: Any, where: str) -> InvalidEventError:
    got = data.get("kind") if isinstance(data, dict) else type(data).__name__
    return InvalidEventError(
        f"field 'kind': expected one of {', '.join(sorted(KINDS))}; got {got!r}",
        where=where,
        field="kind",
    )


def validation_error(exc: msgspec.ValidationError, data: Any, where: str) -> InvalidEventError:
    msg = str(exc)
    if not isinstance(data, dict):
        return InvalidEventError(
            f"expected a JSON object with a 'kind' field; got {type(data).__name__}", where=where
        )
    if "`$.kind`" in msg or "Object missing required field `kind`" in msg:
        return kind_error(data, where)
    field = msg.rsplit("at `$.", 1)[1].rstrip("`") if "at `$." in msg else ""
    kind = data.get("kind", "?")
    detail = msg.split(" - at `", 1)[0]
    if detail.startswith("Invalid enum value"):
        allowed = _literal_values(KINDS.get(kind), field)
        detail = f"expected one of {', '.join(allowed)}; got {detail.split(' ', 3)[-1]}"
    elif detail.startswith("Object missing required field"):
        missing = detail.rsplit(" ", 1)[-1].strip("`")
        field = f"{field}.{missing}" if field else missing
        detail = "expected a value; got none"
    prefix = f"{kind} event, field '{field}'" if field else f"{kind} event"
    return InvalidEventError(f"{prefix}: {detail}", where=where, field=field)


def _literal_values(cls: type[Event] | None, field: str) -> list[str]:
    import typing

    if cls is None:
        return []
    hints = typing.get_type_hints(cls)
    return [str(v) for v in typing.get_args(hints.get(field))]
