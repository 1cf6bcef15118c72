"""A writer of evolver-format memory graphs, line for line as evolver v1.29.8 writes them.

One evolve cycle appends ``outcome`` (closing the previous attempt), its two confidence
snapshots, then ``signal``, ``hypothesis`` and ``attempt``
(docs/reference/evolver-memory-graph.md §2, §7). Ids, key order,
texts and the snapshot statistics follow evolver's; the snapshots aggregate the last 2000
lines, as evolver's re-reads of its file do. Used to produce realistic evolver histories
(tests, the decision-quality simulation) and as the model of what an evolver user's
file looks like.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from evolog.eventlog.schema import compute_signal_key, extract_error_signature, stable_hash

from ._export import EVENT_TYPE, iso_ms, js_number
from ._policy import DEFAULT_WINDOW, _aggregate, _decay_weight, _Edge


def _js_numbers(value: Any) -> Any:
    """Integral floats as ints, the way ``JSON.stringify`` prints them (``1``, not ``1.0``)."""
    if isinstance(value, dict):
        return {k: _js_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_js_numbers(v) for v in value]
    return js_number(value) if isinstance(value, float) else value


@dataclass(slots=True)
class _LastAction:
    action_id: str
    key: str
    signals: list[str]
    gene_id: str | None
    gene_category: str | None
    hypothesis_id: str
    had_error: bool
    observed: dict[str, Any] | None


@dataclass(slots=True)
class EvolverGraphWriter:
    """Builds evolver memory-graph objects; ``lines`` holds them all, as compact JSON."""

    lines: list[str] = field(default_factory=list)
    #: False skips aggregating the snapshots (their statistics are written as zeros): advice
    #: never reads them, only their place in the window, and the aggregation dominates cost.
    exact_snapshots: bool = True
    _tail: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=DEFAULT_WINDOW))
    _last: _LastAction | None = None

    def _emit(self, obj: dict[str, Any]) -> dict[str, Any]:
        obj = _js_numbers(obj)
        self.lines.append(json.dumps(obj, separators=(",", ":"), ensure_ascii=False))
        self._tail.append(obj)
        return obj

    def signal(self, now_ms: int, signals: list[str], observed: Any = None) -> dict[str, Any]:
        ts = iso_ms(now_ms * 1000)
        key = compute_signal_key(signals)
        return self._emit(
            {
                "type": EVENT_TYPE,
                "kind": "signal",
                "id": f"mge_{now_ms}_{stable_hash(f'{key}|signal|{ts}')}",
                "ts": ts,
                "signal": {
                    "key": key,
                    "signals": list(signals),
                    "error_signature": extract_error_signature(signals),
                },
                "observed": observed if isinstance(observed, dict) else None,
            }
        )

    def attempt(
        self,
        now_ms: int,
        signals: list[str],
        gene: dict[str, Any],
        drift: bool = False,
        observed: dict[str, Any] | None = None,
    ) -> str:
        """Append the hypothesis and attempt lines of a chosen gene; return the action id."""
        ts = iso_ms(now_ms * 1000)
        key = compute_signal_key(signals)
        gid = str(gene["id"]) if gene.get("id") else None
        cat = str(gene["category"]) if gene.get("category") else None
        choice = f"{key}|{gid or 'none'}|{ts}"  # hypothesis and action ids hash the same text
        hyp_id = f"hyp_{now_ms}_{stable_hash(choice)}"
        mode = "drift" if drift else "directed"
        label = f"{gid}({cat})" if gid and cat else gid or "(none)"
        text = (
            f"Given signal_key={key} with {len(signals)} signals, selecting gene={label} "
            f"under mode={mode} is expected to reduce repeated errors and improve stability."
        )
        errsig = extract_error_signature(signals)
        sig = {"key": key, "signals": list(signals), "error_signature": errsig}
        common = {"gene": {"id": gid, "category": cat}}
        action = {"drift": drift, "selected_by": "selector", "selector": None}
        self._emit(
            {
                "type": EVENT_TYPE,
                "kind": "hypothesis",
                "id": f"mge_{now_ms}_{stable_hash(f'{hyp_id}|{ts}')}",
                "ts": ts,
                "signal": sig,
                "hypothesis": {
                    "id": hyp_id,
                    "text": text,
                    "predicted_outcome": {"status": None, "score": None},
                },
                "mutation": None,
                "personality": None,
                **common,
                "action": action,
                "capsules": {"used": []},
                "observed": observed,
            }
        )
        action_id = f"act_{now_ms}_{stable_hash(choice)}"
        self._emit(
            {
                "type": EVENT_TYPE,
                "kind": "attempt",
                "id": f"mge_{now_ms}_{stable_hash(action_id)}",
                "ts": ts,
                "signal": sig,
                "mutation": None,
                "personality": None,
                **common,
                "hypothesis": {"id": hyp_id},
                "action": {"id": action_id, **action},
                "capsules": {"used": []},
                "observed": observed,
            }
        )
        self._last = _LastAction(
            action_id, key, list(signals), gid, cat, hyp_id, "log_error" in signals, observed
        )
        return action_id

    def outcome(
        self,
        now_ms: int,
        status: str,
        score: float,
        note: str,
        current_signals: list[str],
        observed: dict[str, Any] | None = None,
    ) -> dict[str, Any] | None:
        """Close the last attempt (with its two confidence snapshots); None if none is open."""
        last, self._last = self._last, None
        if last is None:
            return None
        ts = iso_ms(now_ms * 1000)
        out = self._emit(
            {
                "type": EVENT_TYPE,
                "kind": "outcome",
                "id": f"mge_{now_ms}_{stable_hash(f'{last.action_id}|outcome|{ts}')}",
                "ts": ts,
                "signal": {
                    "key": last.key,
                    "signals": last.signals,
                    "error_signature": extract_error_signature(current_signals),
                },
                "mutation": None,
                "personality": None,
                "gene": {"id": last.gene_id, "category": last.gene_category},
                "action": {"id": last.action_id},
                "hypothesis": {"id": last.hypothesis_id},
                "outcome": {
                    "status": status,
                    "score": score,
                    "note": note,
                    "observed": {"current_signals": list(current_signals)},
                },
                "confidence": {"half_life_days": 30},
                "observed": observed,
                "baseline": last.observed,
                "capsules": {"used": []},
            }
        )
        if last.gene_id:
            self._snapshots(now_ms, ts, last, out["id"])
        return out

    def _stats(self, edge: Any, half_life: float, now_ms: int, ts: str) -> dict[str, Any]:
        if edge is None:
            edge = _Edge()
        total = edge.success + edge.fail
        p = (edge.success + 1) / (total + 2)
        weight = _decay_weight(edge.last_ms(), half_life, now_ms)
        return {
            "success": edge.success,
            "fail": edge.fail,
            "attempts": total,
            "p": p,
            "decay_weight": weight,
            "value": p * weight,
            "half_life_days": int(half_life),
            "updated_at": ts,
        }

    def _snapshots(self, now_ms: int, ts: str, last: _LastAction, outcome_id: str) -> None:
        gid = str(last.gene_id)
        edges, _ = _aggregate(list(self._tail)) if self.exact_snapshots else ({}, {})
        edge = edges.get(f"{last.key}::{gid}")
        self._emit(
            {
                "type": EVENT_TYPE,
                "kind": "confidence_edge",
                "id": f"mge_{now_ms}_{stable_hash(f'{last.key}|{gid}|confidence|{ts}')}",
                "ts": ts,
                "signal": {"key": last.key, "signals": last.signals},
                "gene": {"id": gid, "category": last.gene_category},
                "edge": {"signal_key": last.key, "gene_id": gid},
                "stats": self._stats(edge, 30.0, now_ms, ts),
                "derived_from": {"outcome_event_id": outcome_id},
            }
        )
        # The window now holds the edge snapshot too: evolver's third read is shifted by one.
        _, genes = _aggregate(list(self._tail)) if self.exact_snapshots else ({}, {})
        self._emit(
            {
                "type": EVENT_TYPE,
                "kind": "confidence_gene_outcome",
                "id": f"mge_{now_ms}_{stable_hash(f'{gid}|gene_outcome|confidence|{ts}')}",
                "ts": ts,
                "gene": {"id": gid, "category": last.gene_category},
                "edge": {"gene_id": gid},
                "stats": self._stats(genes.get(gid), 45.0, now_ms, ts),
                "derived_from": {"outcome_event_id": outcome_id},
            }
        )

    def text(self) -> str:
        """The whole graph as evolver's file holds it (one object per line)."""
        return "".join(line + "\n" for line in self.lines)
