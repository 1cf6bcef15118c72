"""Outcome inference, as evolver infers an attempt's outcome, as library functions
(docs/reference/evolver-memory-graph.md §8).

``infer_outcome`` first looks for the newest ``EvolutionEvent`` with an outcome in the
evidence text (the session and log tails); failing that it starts from whether ``log_error``
was seen before and after the attempt and nudges the score by the change in error count and
scan time. evolver's quirks are kept on purpose, so that imported and native outcomes agree:
"no error before or after" is a success (0.6), ``score: null`` in an EvolutionEvent reads as
0, and the newest EvolutionEvent wins whichever action it describes
(docs/reference/evolver-memory-graph.md §11, items 12-13).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

import msgspec
from evolog.eventlog.schema import js_string, js_trim, js_truthy

EVIDENCE_LINES = 400
_JS_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)", re.ASCII)
_JS_RADIX = re.compile(r"0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+", re.ASCII)


class InferredOutcome(msgspec.Struct, frozen=True):
    """An inferred outcome: ``success`` or ``failed``, a score in [0, 1] and how it was found."""

    status: str
    score: float
    note: str

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "score": self.score, "note": self.note}


def _clamp01(x: float) -> float:
    return max(0.0, min(1.0, x))


def js_to_number(value: object, present: bool = True) -> float:
    """ECMAScript ``Number(value)`` for a JSON value (``present=False``: undefined, NaN)."""
    if not present:
        return math.nan
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, list):
        return js_to_number(js_string(value) if value else "")
    if isinstance(value, str):
        s = js_trim(value)
        if not s:
            return 0.0
        if s in ("Infinity", "+Infinity", "-Infinity"):
            return -math.inf if s[0] == "-" else math.inf
        if _JS_RADIX.fullmatch(s):
            return float(int(s, 0))
        return float(s) if _JS_DECIMAL.fullmatch(s) else math.nan
    return math.nan  # objects


def infer_from_signals(prev_had_error: bool, current_has_error: bool) -> InferredOutcome:
    """evolver's table (§8.1): did ``log_error`` clear, persist, appear, or never show?"""
    if prev_had_error and not current_has_error:
        return InferredOutcome("success", 0.85, "error_cleared")
    if prev_had_error:
        return InferredOutcome("failed", 0.2, "error_persisted")
    if current_has_error:
        return InferredOutcome("failed", 0.15, "new_error_appeared")
    return InferredOutcome("success", 0.6, "stable_no_error")


def parse_evolution_event_outcome(text: str) -> InferredOutcome | None:
    """The outcome of the newest ``EvolutionEvent`` in the last 400 lines of ``text`` (§8.2)."""
    for line in reversed(text.split("\n")[-EVIDENCE_LINES:]):
        if '"type"' not in line or "EvolutionEvent" not in line:
            continue
        try:
            obj = json.loads(js_trim(line))
        except ValueError:
            continue
        o = obj.get("outcome") if isinstance(obj, dict) else None
        if obj.get("type") != "EvolutionEvent" or not isinstance(o, dict):
            continue
        status = o.get("status") if o.get("status") in ("success", "failed") else None
        number = js_to_number(o.get("score"), "score" in o)
        score = _clamp01(number) if math.isfinite(number) else None
        if status is None and score is None:
            continue
        if status is None:
            status = "success" if score is not None and score >= 0.5 else "failed"
        if score is None:
            score = 0.75 if status == "success" else 0.25
        return InferredOutcome(status, score, "evolutionevent_observed")
    return None


def _finite(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _field(observed: object, name: str) -> float | None:
    return _finite(observed.get(name)) if isinstance(observed, Mapping) else None


def infer_outcome(
    prev_had_error: bool,
    current_has_error: bool,
    baseline_observed: Mapping[str, Any] | None = None,
    current_observed: Mapping[str, Any] | None = None,
) -> InferredOutcome:
    """evolver's ``inferOutcomeEnhanced`` (§8.3).

    ``prev_had_error``/``current_has_error``: whether the signals contained exactly
    ``log_error`` at the attempt and now. The observations are evolver's ``observed``
    objects (``recent_error_count``, ``scan_ms``, ``evidence.recent_session_tail``,
    ``evidence.today_log_tail``).
    """
    evidence = current_observed.get("evidence") if isinstance(current_observed, Mapping) else None
    if isinstance(evidence, Mapping):
        recent, today = evidence.get("recent_session_tail"), evidence.get("today_log_tail")
        if js_truthy(recent) or js_truthy(today):
            found = parse_evolution_event_outcome(js_string(recent) + "\n" + js_string(today))
            if found is not None:
                return found
    base = infer_from_signals(prev_had_error, current_has_error)
    score = base.score
    prev_err = _field(baseline_observed, "recent_error_count")
    cur_err = _field(current_observed, "recent_error_count")
    if prev_err is not None and cur_err is not None:
        score += max(-0.12, min(0.12, (prev_err - cur_err) / 50))
    prev_ms = _field(baseline_observed, "scan_ms")
    cur_ms = _field(current_observed, "scan_ms")
    if prev_ms is not None and cur_ms is not None and prev_ms > 0:
        score += max(-0.06, min(0.06, (prev_ms - cur_ms) / prev_ms))
    return InferredOutcome(base.status, _clamp01(score), base.note + "|heuristic_delta")
