"""Finding events by the text they contain (the MCP ``search_events`` tool)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._errors import Problem

if TYPE_CHECKING:
    from evolog.eventlog import Paths


def search_events(
    paths: Paths, text: str, kinds: Sequence[str] | None, limit: int
) -> list[dict[str, Any]]:
    """Events whose JSON contains ``text`` (case-insensitive), newest first, null fields
    left out. Runs on a sealed-off connection: no file but the snapshot is reachable."""
    from evolog.eventlog import KINDS
    from evolog.projections import Projections
    from evolog.projections._timefmt import py_rows

    unknown = sorted(set(kinds or ()) - set(KINDS))
    if unknown:
        raise Problem(
            422, f"kinds: expected some of {', '.join(sorted(KINDS))}; got {unknown[0]!r}", "kinds"
        )
    where: list[str] = []
    params: list[Any] = []
    if kinds:
        where.append("list_contains(?, kind)")
        params.append(list(kinds))
    if text:
        where.append("contains(lower(CAST(to_json(e) AS VARCHAR)), ?)")
        params.append(text.lower())
    clause = f"WHERE {' AND '.join(where)}" if where else ""
    con = Projections(paths.root).connect()
    try:
        table = con.sql(
            f"SELECT * FROM events e {clause} ORDER BY seq DESC LIMIT ?", params=[*params, limit]
        ).to_arrow_table()
    finally:
        con.close()
    return [
        {k: v for k, v in row.items() if v is not None and v != [] and v != {}}
        for row in py_rows(table)
    ]
