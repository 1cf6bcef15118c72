"""evolver's remote ingests (``POST /kg/ingest``) as events, losslessly.

evolver sends ``{kind, event}``. A full memory-graph event (``type: "MemoryGraphEvent"``:
signals and outcomes, and any kind a newer evolver sends whole) is imported exactly as
``evolog import evolver`` imports a line of its file: the same typed fields, the same
patch for anything that does not fit (fields newer versions add, such as
``outcome.predictive``), the same event id, so a later import of evolver's local file adds
nothing twice. Hypotheses and attempts arrive reduced to their ids
(``{hypothesisId, signalKey}``, ``{actionId, signalKey}``): they become a hypothesis or an
attempt event with that id and key (so the attempt is open until its outcome closes it),
and the patch gives back exactly what was sent.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

import msgspec

from evolog.advice import canonical_evolver, evolver_to_event, patch_supported
from evolog.advice.evolver import EVENT_TYPE, diff_patch, supported_kind
from evolog.eventlog import Attempt, Event, Hypothesis

#: Ids a client gives are kept up to this length (the log takes 256 characters).
_MAX_ID = 200
AGENT = "evolver"


def content_digest(obj: Any) -> str:
    """A short digest of a JSON value (its canonical encoding)."""
    raw = msgspec.json.encode(obj, order="deterministic")
    return hashlib.blake2b(raw, digest_size=9).hexdigest()


def _base_id(kind: str, event: dict[str, Any]) -> str:
    given = event.get("id")
    if isinstance(given, str) and given and len(given) <= _MAX_ID:
        return given
    for name in ("hypothesisId", "actionId"):
        value = event.get(name)
        if isinstance(value, str) and value and len(value) <= _MAX_ID:
            return f"kg-{kind}:{value}"
    return f"kg-{kind}:{content_digest(event)}"


def ingest_event(
    kind: str, event: dict[str, Any], event_id: str | None = None, now_us: int | None = None
) -> Event | None:
    """The event to append for one ingest, or None for a kind with no home here.

    ``event_id`` overrides the id (the patch then gives evolver's own back on export)."""
    fallback = now_us if now_us is not None else time.time_ns() // 1000
    eid = event_id or _base_id(kind, event)
    if event.get("type") == EVENT_TYPE and supported_kind(event) == kind:
        return evolver_to_event(event, eid, fallback, agent=AGENT).event
    if kind == "hypothesis":
        built: Event = Hypothesis(
            id=eid, ts=fallback, agent=AGENT,
            hypothesis_id=_text(event.get("hypothesisId")), key=_text(event.get("signalKey")),
        )  # fmt: skip
    elif kind == "attempt":
        built = Attempt(
            id=eid, ts=fallback, agent=AGENT,
            action_id=_text(event.get("actionId")) or eid, key=_text(event.get("signalKey")),
        )  # fmt: skip
    else:
        return None
    patch = diff_patch(canonical_evolver(built), event)
    if patch is not None and patch_supported():
        built = msgspec.structs.replace(built, evolver_patch=patch)
    return built


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def derived_id(event: Event, sent: dict[str, Any]) -> str:
    """The id for content sent under an id the log already holds for other content."""
    return f"{event.id}@{content_digest(sent)}"
