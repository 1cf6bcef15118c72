"""One evolver memory-graph object to one of our events, losslessly.

Every field evolver's writer produces has a typed home in our schema
(docs/reference/evolver-memory-graph.md §2). A value
that does not fit its type (a number where a string belongs, a missing field, an extra
one, a timestamp in another format) is given the field's default and recorded in the
event's evolver patch (see :mod:`evolog.advice.evolver._export`), so exporting the event gives
back the original object exactly. The event is built exactly as the log will store it
(signal key, error signature and attempt action id filled as ``append`` fills them),
so the patch is computed against what will really be read back.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import msgspec
from evolog.eventlog import (
    STATUSES,
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
)
from evolog.eventlog.schema import compute_signal_key, extract_error_signature, parse_iso_ms

from ._export import PATCH_FIELD, canonical_evolver

EVENT_TYPE = "MemoryGraphEvent"
_INT64 = 2**63
_MAX_FLOAT = 1.7976931348623157e308


class MappedLine(msgspec.Struct, frozen=True):
    """An evolver object as our event; ``lossy`` when a patch was needed but has no home."""

    event: Event
    patch: dict[str, Any] | None
    lossy: bool


def patch_supported() -> bool:
    """True when the event schema has the ``evolver_patch`` field (exact re-export)."""
    return PATCH_FIELD in Outcome.__struct_fields__


# -- typed field readers: a value that does not fit gives None and the patch restores it ---


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def _strs(v: Any) -> list[str] | None:
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return list(v)
    return None


def _float(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    f = float(v) if abs(v) <= _MAX_FLOAT else math.inf
    return f if math.isfinite(f) else None


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and -_INT64 <= v < _INT64 else 0


def _obj(v: Any) -> dict[str, Any] | None:
    return v if isinstance(v, dict) else None


def _mutation(v: Any) -> Mutation | None:
    if not isinstance(v, dict) or not isinstance(v.get("id"), str):
        return None
    return Mutation(
        id=v["id"],
        category=_str(v.get("category")),
        trigger_signals=_strs(v.get("trigger_signals")),
        target=_str(v.get("target")),
        expected_effect=_str(v.get("expected_effect")),
        risk_level=_str(v.get("risk_level")),
    )


def _personality(v: Any) -> Personality | None:
    if not isinstance(v, dict) or not isinstance(v.get("key"), str):
        return None
    state = v.get("state")
    return Personality(
        key=v["key"],
        rigor=_float(_get(state, "rigor")),
        creativity=_float(_get(state, "creativity")),
        verbosity=_float(_get(state, "verbosity")),
        risk_tolerance=_float(_get(state, "risk_tolerance")),
        obedience=_float(_get(state, "obedience")),
    )


def event_ts(obj: dict[str, Any], fallback_us: int) -> int:
    """The event time in µs: ``ts``, else ``created_at``/``at`` (as evolver reads them)."""
    ts = readable_ts(obj)
    return fallback_us if ts is None else ts


def readable_ts(obj: dict[str, Any]) -> int | None:
    """The event time in µs if evolver can read one (``ts``, ``created_at``, ``at``)."""
    for name in ("ts", "created_at", "at"):
        ms = parse_iso_ms(obj.get(name)) if isinstance(obj.get(name), str) else math.nan
        if math.isfinite(ms) and ms > 0:
            return int(ms) * 1000
    return None


def is_evolver_event(obj: Any) -> bool:
    """True for an object evolver itself counts: ``type`` is ``"MemoryGraphEvent"``."""
    return isinstance(obj, dict) and obj.get("type") == EVENT_TYPE


def _signal_fields(obj: dict[str, Any], with_errsig: bool = True) -> dict[str, Any]:
    """``signals``, ``key`` (and ``error_signature``) exactly as ``append`` will store them."""
    signals = _strs(_get(obj, "signal", "signals")) or []
    key = _str(_get(obj, "signal", "key")) or ""
    out: dict[str, Any] = {"signals": signals, "key": key}
    errsig = _str(_get(obj, "signal", "error_signature")) if with_errsig else None
    # The log fills an empty key, and then a missing error signature, from the signals at
    # append (evolog.eventlog.schema._codec.prepare); a given key leaves the error signature alone.
    if signals and not key:
        out["key"] = compute_signal_key(signals)
        if with_errsig and errsig is None:
            errsig = extract_error_signature(signals)
    if with_errsig:
        out["error_signature"] = errsig
    return out


def _gene_fields(obj: dict[str, Any]) -> dict[str, Any]:
    return {
        "gene": _str(_get(obj, "gene", "id")),
        "gene_category": _str(_get(obj, "gene", "category")),
    }


def _action_fields(obj: dict[str, Any]) -> dict[str, Any]:
    return {
        "drift": _get(obj, "action", "drift") is True,
        "selected_by": _str(_get(obj, "action", "selected_by")),
        "selector": _get(obj, "action", "selector"),
    }


def _common(obj: dict[str, Any]) -> dict[str, Any]:
    return {
        "mutation": _mutation(obj.get("mutation")),
        "personality": _personality(obj.get("personality")),
        "capsules": _strs(_get(obj, "capsules", "used")) or [],
        "observed": _obj(obj.get("observed")),
        **_gene_fields(obj),
    }


def _signal(obj: dict[str, Any], env: dict[str, Any]) -> Event:
    return Signal(**env, **_signal_fields(obj), observed=_obj(obj.get("observed")))


def _hypothesis(obj: dict[str, Any], env: dict[str, Any]) -> Event:
    return Hypothesis(
        **env,
        **_signal_fields(obj),
        **_common(obj),
        **_action_fields(obj),
        hypothesis_id=_str(_get(obj, "hypothesis", "id")) or "",
        text=_str(_get(obj, "hypothesis", "text")) or "",
        predicted_status=_str(_get(obj, "hypothesis", "predicted_outcome", "status")),
        predicted_score=_float(_get(obj, "hypothesis", "predicted_outcome", "score")),
    )


def _attempt(obj: dict[str, Any], env: dict[str, Any]) -> Event:
    # The log fills an empty action id with the event id; do it here so the patch sees it.
    action_id = _str(_get(obj, "action", "id")) or env["id"]
    return Attempt(
        **env,
        **_signal_fields(obj),
        **_common(obj),
        **_action_fields(obj),
        action_id=action_id,
        hypothesis_id=_str(_get(obj, "hypothesis", "id")),
    )


def _outcome(obj: dict[str, Any], env: dict[str, Any]) -> Event:
    return Outcome(
        **env,
        **_signal_fields(obj),
        **_common(obj),
        action_id=_str(_get(obj, "action", "id")) or "",
        hypothesis_id=_str(_get(obj, "hypothesis", "id")),
        status=_status(_str(_get(obj, "outcome", "status"))),
        score=_float(_get(obj, "outcome", "score")),
        note=_str(_get(obj, "outcome", "note")),
        current_signals=_strs(_get(obj, "outcome", "observed", "current_signals")),
        half_life_days=_float(_get(obj, "confidence", "half_life_days")),
        baseline=_obj(obj.get("baseline")),
    )


def _status(status: str | None) -> str:
    # The log takes a status of eventlog.STATUSES; evolver takes any text. Another one is
    # stored as "unknown" (edges treat every status but success and failed alike), and the
    # patch gives the original back on export.
    return status if status in STATUSES else "unknown"


def _stats_fields(obj: dict[str, Any]) -> dict[str, Any]:
    stats = obj.get("stats")
    return {
        "success": _int(_get(stats, "success")),
        "fail": _int(_get(stats, "fail")),
        "attempts": _int(_get(stats, "attempts")),
        "p": _float(_get(stats, "p")),
        "decay_weight": _float(_get(stats, "decay_weight")),
        "value": _float(_get(stats, "value")),
        "half_life_days": _float(_get(stats, "half_life_days")),
        "updated_at": _str(_get(stats, "updated_at")),
        "derived_from": _str(_get(obj, "derived_from", "outcome_event_id")),
        **_gene_fields(obj),
    }


def _confidence_edge(obj: dict[str, Any], env: dict[str, Any]) -> Event:
    return ConfidenceEdge(**env, **_signal_fields(obj, with_errsig=False), **_stats_fields(obj))


def _confidence_gene(obj: dict[str, Any], env: dict[str, Any]) -> Event:
    return ConfidenceGeneOutcome(**env, **_stats_fields(obj))


def _external(obj: dict[str, Any], env: dict[str, Any]) -> Event:
    return ExternalCandidate(
        **env,
        **_signal_fields(obj, with_errsig=False),
        origin=_str(_get(obj, "external", "source")),
        received_at=_str(_get(obj, "external", "received_at")),
        asset_type=_str(_get(obj, "asset", "type")),
        asset_id=_str(_get(obj, "asset", "id")),
        trigger=_strs(_get(obj, "candidate", "trigger")) or [],
        candidate_gene=_str(_get(obj, "candidate", "gene")),
        candidate_confidence=_float(_get(obj, "candidate", "confidence")),
    )


_BUILDERS: dict[str, Callable[[dict[str, Any], dict[str, Any]], Event]] = {
    "signal": _signal,
    "hypothesis": _hypothesis,
    "attempt": _attempt,
    "outcome": _outcome,
    "confidence_edge": _confidence_edge,
    "confidence_gene_outcome": _confidence_gene,
    "external_candidate": _external,
}


def supported_kind(obj: Any) -> str | None:
    """The kind of an evolver object we can import, or None (not an object, unknown kind)."""
    kind = obj.get("kind") if isinstance(obj, dict) else None
    return kind if isinstance(kind, str) and kind in _BUILDERS else None


def evolver_to_event(
    obj: dict[str, Any], event_id: str, fallback_ts_us: int, agent: str = "evolver"
) -> MappedLine:
    """Map one evolver object (of a :func:`supported_kind`) to an event with its patch.

    ``event_id`` is the id to store (normally the evolver id; the caller derives another
    for a repeated or missing one); ``fallback_ts_us`` is used when no timestamp parses.
    """
    kind = supported_kind(obj)
    if kind is None:
        raise ValueError(f"expected an evolver object with a known kind; got {obj.get('kind')!r}")
    env = {"id": event_id, "ts": event_ts(obj, fallback_ts_us), "agent": agent}
    event = _BUILDERS[kind](obj, env)
    patch = diff_patch(canonical_evolver(event), obj)
    if patch is None:
        return MappedLine(event, None, lossy=False)
    if not patch_supported():
        return MappedLine(event, patch, lossy=True)
    return MappedLine(msgspec.structs.replace(event, **{PATCH_FIELD: patch}), patch, lossy=False)


# -- the patch: how the original differs from the canonical export ------------------------


def same_json(a: Any, b: Any) -> bool:
    """JSON equality that tells 1 from 1.0 and from true, and compares key order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return bool(a == b)


def diff_patch(canonical: dict[str, Any], original: dict[str, Any]) -> dict[str, Any] | None:
    """The patch turning ``canonical`` into ``original`` (None when they are the same)."""
    sets: list[Any] = []
    dels: list[Any] = []
    orders: list[Any] = []
    _diff(canonical, original, [], sets, dels, orders)
    patch: dict[str, Any] = {}
    for name, items in (("set", sets), ("del", dels), ("order", orders)):
        if items:
            patch[name] = items
    return patch or None


def _diff(
    canon: dict[str, Any],
    orig: dict[str, Any],
    path: list[str],
    sets: list[Any],
    dels: list[Any],
    orders: list[Any],
) -> None:
    dels.extend([*path, k] for k in canon if k not in orig)
    for k, v in orig.items():
        c = canon.get(k)
        if k not in canon:
            sets.append([[*path, k], v])
        elif isinstance(v, dict) and isinstance(c, dict):
            _diff(c, v, [*path, k], sets, dels, orders)
        elif not same_json(c, v):
            sets.append([[*path, k], v])
    # Setting an existing key keeps its place, a new key goes last: only record an order
    # when that does not already give the original one.
    result = [k for k in canon if k in orig] + [k for k in orig if k not in canon]
    if result != list(orig):
        orders.append([path, list(orig)])
