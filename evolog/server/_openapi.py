"""The OpenAPI 3.1 document, generated from the route table and the same msgspec types that
decode and encode the bodies (so the document cannot drift from what the server does)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import msgspec

from ._types import ErrorBody


class Param(NamedTuple):
    name: str
    where: str  # "query" | "header" | "path"
    schema: dict[str, Any]
    description: str


class Spec(NamedTuple):
    """One route: what it takes and answers (``body``/``answer`` are msgspec types or None;
    ``media`` lists the content types of a body or answer that is not one JSON value)."""

    method: str
    path: str
    name: str
    need: str
    summary: str
    body: Any = None
    answer: Any = None
    params: Sequence[Param] = ()
    body_media: Sequence[str] = ("application/json",)
    answer_media: Sequence[str] = ("application/json",)


def document(specs: Sequence[Spec], version: str) -> dict[str, Any]:
    types = {ErrorBody}
    for s in specs:
        types.update(t for t in (s.body, s.answer) if t is not None)
    ordered = sorted(types, key=lambda t: getattr(t, "__name__", str(t)))
    schemas, components = msgspec.json.schema_components(
        ordered, ref_template="#/components/schemas/{name}"
    )
    by_type = dict(zip(ordered, schemas, strict=True))
    error = {
        "description": "an error; `field` names the part of the request at fault",
        "content": {"application/json": {"schema": by_type[ErrorBody]}},
    }
    paths: dict[str, Any] = {}
    for s in specs:
        op: dict[str, Any] = {
            "operationId": s.name,
            "summary": s.summary,
            "security": [] if s.need == "open" else [{"bearer": [s.need]}],
            "responses": {"200": _content(s.answer, s.answer_media, by_type), "4XX": error},
        }
        if s.params:
            op["parameters"] = [
                {
                    "name": p.name,
                    "in": p.where,
                    "required": p.where == "path",  # OpenAPI requires it of path parameters
                    "schema": p.schema,
                    "description": p.description,
                }
                for p in s.params
            ]
        if s.body is not None or s.method == "post":
            op["requestBody"] = {"required": True, **_content(s.body, s.body_media, by_type)}
        paths.setdefault(s.path, {})[s.method] = op
    return {
        "openapi": "3.1.0",
        "info": {"title": "evolog", "version": version},
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }


def _content(kind: Any, media: Sequence[str], by_type: dict[Any, Any]) -> dict[str, Any]:
    schema = by_type[kind] if kind is not None else {}
    return {"description": "ok", "content": {m: {"schema": schema} for m in media}}
