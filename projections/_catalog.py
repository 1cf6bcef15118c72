"""The SQL catalog: ``events``, one typed view per event kind, and ``traces``.

Typed views keep the envelope (seq, id, ts, agent, session, source, v) and the fields of
their kind, in declaration order; ``ts`` is a ``TIMESTAMPTZ`` (UTC). Free-form fields
(``observed``, ``selector``, ``baseline``) are JSON text: ``observed->>'$.x'`` reads them.
"""

from __future__ import annotations

import duckdb
from evolog.eventlog import KINDS, Event

from ._source import EventScan, engine_errors, ident, null_of
from ._traces import TRACE_INPUTS, TRACES_SQL

#: View name per kind; a kind added later gets ``<kind>s``.
VIEW_NAMES = {
    "signal": "signals",
    "hypothesis": "hypotheses",
    "attempt": "attempts",
    "step": "steps",
    "outcome": "outcomes",
    "tick": "ticks",
    "confidence_edge": "confidence_edges",
    "confidence_gene_outcome": "confidence_gene_outcomes",
    "external_candidate": "external_candidates",
    "feedback": "feedback",
    "fetched": "fetches",
    "note": "notes",
    "dream_begin": "dream_begins",
    "dream_end": "dream_ends",
    "constraint": "constraints",
    "mark": "marks",
    "node": "nodes",
    "child_step": "child_steps",
    "link": "links",
    "merge": "merges",
    "prune": "prunes",
    "retraction": "retractions",
    "lifecycle": "lifecycles",
}
# Envelope order of the segments: seq, id, ts, (kind), agent, session, source, v.
_ENVELOPE = [
    "seq",
    "id",
    "ts",
    *(n for n in Event.__struct_fields__ if n not in ("seq", "id", "ts")),
]
ENVELOPE = frozenset([*_ENVELOPE, "kind"])


def view_name(kind: str) -> str:
    """The typed view of an event kind."""
    return VIEW_NAMES.get(kind, f"{kind}s")


def typed_views() -> dict[str, tuple[str, list[str]]]:
    """``{view: (kind, columns)}`` for every kind the schema knows."""
    out = {}
    for kind, cls in KINDS.items():
        own = [f for f in cls.__struct_fields__ if f not in ENVELOPE]
        out[view_name(kind)] = (kind, [*_ENVELOPE, *own])
    return out


def create_views(
    con: duckdb.DuckDBPyConnection, scan: EventScan, only: set[str] | None = None
) -> list[str]:
    """Create ``events``, the typed views and ``traces`` on ``con``; return their names.

    ``only``: the names a query refers to. Binding a view costs a few milliseconds, so only
    those (and what they depend on) are created; with none of ours named, all are.
    """
    views = typed_views()
    wanted = set(views) | {"traces"}
    if only and only & (wanted | {"events"}):
        wanted &= only
        if "traces" in wanted:
            wanted |= TRACE_INPUTS
    with engine_errors("creating the catalog views"):
        # TEMP views: they reference the WAL tail, which is registered per connection.
        con.execute(f"CREATE OR REPLACE TEMP VIEW events AS SELECT * FROM {scan.sql()}")
        present = set(con.sql("SELECT * FROM events LIMIT 0").columns) if wanted else set()
        for view, (kind, columns) in views.items():
            if view not in wanted:
                continue
            cols = ", ".join(
                ident(c) if c in present else f"{null_of(con, c)} AS {ident(c)}" for c in columns
            )
            con.execute(
                f"CREATE OR REPLACE TEMP VIEW {ident(view)} AS SELECT {cols} FROM events "
                f"WHERE kind = '{kind}'"
            )
        if "traces" in wanted:
            con.execute(f"CREATE OR REPLACE TEMP VIEW traces AS {TRACES_SQL}")
    return [
        "events",
        *(v for v in views if v in wanted),
        *(["traces"] if "traces" in wanted else []),
    ]
