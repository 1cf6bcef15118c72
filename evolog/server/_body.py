"""Reading request bodies: size limits, content types, and decoding errors that name the field."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from ._errors import Problem

if TYPE_CHECKING:
    from starlette.requests import Request

T = TypeVar("T")
JSON_TYPES = ("application/json",)
# Not application/json-seq (RFC 7464): its records start with RS (0x1E), which a line split
# would hand on as part of the JSON; it is refused with 415 like any type not listed.
NDJSON_TYPES = ("application/x-ndjson", "application/jsonl")
_PATH = re.compile(r" - at `\$(.*)`$")
_NAMED = re.compile(r"^Object (?:contains unknown|missing required) field `([^`]*)`")


async def read_body(request: Request, limit: int, types: tuple[str, ...] = JSON_TYPES) -> bytes:
    """The whole body, refused (415/413) unless of one of ``types`` and at most ``limit`` bytes.

    An empty body may come without a Content-Type (the evolving-memory clients post some
    commands so); a browser's cross-site request of that kind is refused by its Origin."""
    ctype = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    declared = request.headers.get("content-length")
    if ctype not in types:
        if not ctype and declared in (None, "0") and not await _has_body(request):
            return b""
        raise Problem(
            415,
            f"expected Content-Type {' or '.join(types)}; got {ctype or 'none'}",
            "Content-Type",
        )
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise Problem(413, f"expected a body of at most {limit} bytes; got {declared}", "body")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise Problem(413, f"expected a body of at most {limit} bytes; got more", "body")
        chunks.append(chunk)
    return b"".join(chunks)


async def _has_body(request: Request) -> bool:
    async for chunk in request.stream():
        if chunk:
            return True
    return False


def field_of(exc: msgspec.ValidationError) -> tuple[str, str | None]:
    """msgspec's message without its ``- at `$.x`` suffix, and the field path (``x``)."""
    text = str(exc)
    m = _PATH.search(text)
    path = m.group(1).lstrip(".") if m else ""
    if m is not None:
        text = text[: m.start()]
    named = _NAMED.match(text)
    if named is not None:  # the field at fault is inside the object at the path
        path = f"{path}.{named.group(1)}" if path else named.group(1)
    return text, path or None


def decode(data: bytes, kind: type[T], where: str = "body") -> T:
    """``data`` as ``kind``, or a 400/422 :class:`Problem` naming the field."""
    if not data.strip():
        data = b"{}"
    try:
        return msgspec.json.decode(data, type=kind)
    except msgspec.ValidationError as exc:
        message, path = field_of(exc)
        raise Problem(422, f"{path or where}: {message}", path or where) from None
    except msgspec.DecodeError as exc:
        raise Problem(400, f"{where}: expected JSON; got malformed JSON ({exc})", where) from None


def convert_query(params: dict[str, Any], kind: type[T]) -> T:
    """Query-string parameters as ``kind`` (numbers and booleans from their text)."""
    try:
        return msgspec.convert(params, kind, strict=False)
    except msgspec.ValidationError as exc:
        message, path = field_of(exc)
        raise Problem(422, f"{path or 'query'}: {message}", path or "query") from None
