"""Our events back to evolver memory-graph objects (the inverse of the import).

The *canonical* export of an event is the object evolver v1.29.8's own writer would have
produced for it (docs/reference/evolver-memory-graph.md §2): every field present, in the
writer's key order, numbers as
``JSON.stringify`` prints them. An imported line that differs from that form (a hand-written
line without some fields, a non-canonical timestamp, a value our schema types differently)
carries a *patch* in the event's ``evolver_patch`` field; applying it to the canonical export
gives back the original object exactly, key order included.

Patch format (every member optional)::

    {"set": [[path, value], ...],   # replace or add the value at path
     "del": [path, ...],            # remove the key at path
     "order": [[path, [key, ...]], ...]}   # key order of the object at path

A path is a list of object keys from the top (``["signal", "error_signature"]``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from evolog.eventlog import (
    Attempt,
    ConfidenceEdge,
    ConfidenceGeneOutcome,
    Event,
    ExternalCandidate,
    Hypothesis,
    Mutation,
    Outcome,
    Personality,
    Signal,
    kind_of,
)

EVENT_TYPE = "MemoryGraphEvent"
PATCH_FIELD = "evolver_patch"
NONE_KEY = "(none)"
#: The event kinds that exist in evolver memory graphs (the evolver window counts these).
EVOLVER_KINDS = (
    "signal",
    "hypothesis",
    "attempt",
    "outcome",
    "confidence_edge",
    "confidence_gene_outcome",
    "external_candidate",
)
_YEAR_10000_MS = 253_402_300_800_000
_JS_EXPONENT_FROM = 1e21  # JSON.stringify switches to exponent form here


def js_number(value: float | None) -> float | int | None:
    """A typed float as ``JSON.stringify`` would write it: ``1`` rather than ``1.0``."""
    if isinstance(value, float) and value.is_integer() and abs(value) < _JS_EXPONENT_FROM:
        return int(value)
    return value


def iso_ms(ts_us: int) -> str:
    """``Date.prototype.toISOString`` of a time in µs (milliseconds kept, the rest dropped)."""
    ms = ts_us // 1000
    if 0 <= ms < _YEAR_10000_MS:
        # time.gmtime is several times faster than datetime arithmetic on this hot path.
        t = time.gmtime(ms // 1000)
        return (
            f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T"
            f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}.{ms % 1000:03d}Z"
        )
    # Outside 1970-9999 (a log written before event times were checked, or by hand):
    # JavaScript writes the year with a sign and six digits, and datetime cannot hold it.
    from evolog.projections import civil

    year, moment = civil(ms * 1000)
    shown = f"{year:04d}" if 0 <= year <= 9999 else f"{year:+07d}"
    return shown + moment.strftime("-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def patch_of(event: Event) -> dict[str, Any] | None:
    """The event's evolver patch, or None (also when the schema has no patch field)."""
    patch = getattr(event, PATCH_FIELD, None)
    return patch if isinstance(patch, dict) else None


def _signal(e: Signal | Hypothesis | Attempt | Outcome, with_errsig: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {"key": e.key or NONE_KEY, "signals": list(e.signals)}
    if with_errsig:
        out["error_signature"] = e.error_signature
    return out


def _mutation(m: Mutation | None, short: bool) -> dict[str, Any] | None:
    if m is None:
        return None
    if short:
        return {"id": m.id, "category": m.category, "risk_level": m.risk_level}
    return {
        "id": m.id,
        "category": m.category,
        "trigger_signals": m.trigger_signals,
        "target": m.target,
        "expected_effect": m.expected_effect,
        "risk_level": m.risk_level,
    }


def _personality(p: Personality | None) -> dict[str, Any] | None:
    if p is None:
        return None
    state = {
        "type": "PersonalityState",
        "rigor": js_number(p.rigor),
        "creativity": js_number(p.creativity),
        "verbosity": js_number(p.verbosity),
        "risk_tolerance": js_number(p.risk_tolerance),
        "obedience": js_number(p.obedience),
    }
    return {"key": p.key, "state": state}


def _gene(gene: str | None, category: str | None) -> dict[str, Any]:
    return {"id": gene, "category": category}


def _head(e: Event) -> dict[str, Any]:
    return {"type": EVENT_TYPE, "kind": kind_of(e), "id": e.id, "ts": iso_ms(e.ts)}


def _export_signal(e: Signal) -> dict[str, Any]:
    return {**_head(e), "signal": _signal(e), "observed": e.observed}


def _export_hypothesis(e: Hypothesis) -> dict[str, Any]:
    predicted = {"status": e.predicted_status, "score": js_number(e.predicted_score)}
    return {
        **_head(e),
        "signal": _signal(e),
        "hypothesis": {"id": e.hypothesis_id, "text": e.text, "predicted_outcome": predicted},
        "mutation": _mutation(e.mutation, short=False),
        "personality": _personality(e.personality),
        "gene": _gene(e.gene, e.gene_category),
        "action": {"drift": e.drift, "selected_by": e.selected_by, "selector": e.selector},
        "capsules": {"used": list(e.capsules)},
        "observed": e.observed,
    }


def _export_attempt(e: Attempt) -> dict[str, Any]:
    action = {
        "id": e.action_id,
        "drift": e.drift,
        "selected_by": e.selected_by,
        "selector": e.selector,
    }
    return {
        **_head(e),
        "signal": _signal(e),
        "mutation": _mutation(e.mutation, short=False),
        "personality": _personality(e.personality),
        "gene": _gene(e.gene, e.gene_category),
        "hypothesis": None if e.hypothesis_id is None else {"id": e.hypothesis_id},
        "action": action,
        "capsules": {"used": list(e.capsules)},
        "observed": e.observed,
    }


def _export_outcome(e: Outcome) -> dict[str, Any]:
    outcome = {
        "status": e.status,
        "score": js_number(e.score),
        "note": e.note,
        "observed": {"current_signals": e.current_signals},
    }
    return {
        **_head(e),
        "signal": _signal(e),
        "mutation": _mutation(e.mutation, short=True),
        "personality": _personality(e.personality),
        "gene": _gene(e.gene, e.gene_category),
        "action": {"id": e.action_id},
        "hypothesis": None if e.hypothesis_id is None else {"id": e.hypothesis_id},
        "outcome": outcome,
        "confidence": {"half_life_days": js_number(e.half_life_days)},
        "observed": e.observed,
        "baseline": e.baseline,
        "capsules": {"used": list(e.capsules)},
    }


def _stats(e: ConfidenceEdge | ConfidenceGeneOutcome) -> dict[str, Any]:
    return {
        "success": e.success,
        "fail": e.fail,
        "attempts": e.attempts,
        "p": js_number(e.p),
        "decay_weight": js_number(e.decay_weight),
        "value": js_number(e.value),
        "half_life_days": js_number(e.half_life_days),
        "updated_at": e.updated_at,
    }


def _export_confidence_edge(e: ConfidenceEdge) -> dict[str, Any]:
    return {
        **_head(e),
        "signal": {"key": e.key or NONE_KEY, "signals": list(e.signals)},
        "gene": _gene(e.gene, e.gene_category),
        "edge": {"signal_key": e.key or NONE_KEY, "gene_id": e.gene},
        "stats": _stats(e),
        "derived_from": {"outcome_event_id": e.derived_from},
    }


def _export_confidence_gene(e: ConfidenceGeneOutcome) -> dict[str, Any]:
    return {
        **_head(e),
        "gene": _gene(e.gene, e.gene_category),
        "edge": {"gene_id": e.gene},
        "stats": _stats(e),
        "derived_from": {"outcome_event_id": e.derived_from},
    }


def _export_external(e: ExternalCandidate) -> dict[str, Any]:
    candidate = {
        "trigger": list(e.trigger),
        "gene": e.candidate_gene,
        "confidence": js_number(e.candidate_confidence),
    }
    return {
        **_head(e),
        "signal": {"key": e.key or NONE_KEY, "signals": list(e.signals)},
        "external": {"source": e.origin, "received_at": e.received_at},
        "asset": {"type": e.asset_type, "id": e.asset_id},
        "candidate": candidate,
    }


_EXPORTERS: dict[type[Event], Callable[[Any], dict[str, Any]]] = {
    Signal: _export_signal,
    Hypothesis: _export_hypothesis,
    Attempt: _export_attempt,
    Outcome: _export_outcome,
    ConfidenceEdge: _export_confidence_edge,
    ConfidenceGeneOutcome: _export_confidence_gene,
    ExternalCandidate: _export_external,
}


def canonical_evolver(event: Event) -> dict[str, Any]:
    """The object evolver's writer would have produced for ``event`` (no patch applied).

    Raises ``TypeError`` for a kind evolver has no counterpart of (steps, ticks, dreams...).
    """
    exporter = _EXPORTERS.get(type(event))
    if exporter is None:
        raise TypeError(f"a {kind_of(event)} event has no evolver form")
    return exporter(event)


def to_evolver(event: Event) -> dict[str, Any]:
    """The evolver memory-graph object of an event: its canonical export, patch applied."""
    obj = canonical_evolver(event)
    patch = patch_of(event)
    return apply_patch(obj, patch) if patch else obj


def _parent(obj: dict[str, Any], path: list[str]) -> dict[str, Any] | None:
    node: Any = obj
    for key in path[:-1]:
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else None


def apply_patch(obj: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """Apply an evolver patch to a canonical export (in place; also returned).

    A malformed patch member is ignored rather than raised: the patch only ever restores
    presentation, so a damaged one must not make an event unreadable.
    """
    for item in patch.get("set", ()):
        if isinstance(item, list) and len(item) == 2 and isinstance(item[0], list) and item[0]:
            parent = _parent(obj, item[0])
            if parent is not None:
                parent[item[0][-1]] = item[1]
    for path in patch.get("del", ()):
        if isinstance(path, list) and path:
            parent = _parent(obj, path)
            if parent is not None:
                parent.pop(path[-1], None)
    for item in patch.get("order", ()):
        if isinstance(item, list) and len(item) == 2 and isinstance(item[0], list):
            target = obj if not item[0] else _parent(obj, [*item[0], ""])
            if isinstance(target, dict) and isinstance(item[1], list):
                _reorder(target, item[1])
    return obj


def _reorder(node: dict[str, Any], keys: list[Any]) -> None:
    ordered = {k: node[k] for k in keys if isinstance(k, str) and k in node}
    ordered.update({k: v for k, v in node.items() if k not in ordered})
    node.clear()
    node.update(ordered)
