"""evolver's memory-graph advice (``getMemoryAdvice``), reproduced decision for decision.

Given the tail of an evolver memory graph, the current signals and the candidate genes, this
computes the same preferred gene, bans and explanation strings as evolver v1.29.8, including
its surprising behaviours (a banned gene can still be preferred; a gene with no history wins
when nothing scores).
"""

from __future__ import annotations

import functools
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import msgspec
from evolog.eventlog.schema import (
    compute_signal_key,
    jaccard_sets,
    js_pow,
    js_string,
    js_trim,
    js_truthy,
    normalize_signals_for_matching,
    parse_iso_ms,
    to_fixed,
)

__all__ = ["EvolverAdvice", "ScoredGene", "evolver_advice", "read_evolver_jsonl_tail"]

EVENT_TYPE = "MemoryGraphEvent"
DEFAULT_WINDOW = 2000
EDGE_HALF_LIFE_DAYS = 30.0
GENE_HALF_LIFE_DAYS = 45.0
NEIGHBOUR_MIN_SIMILARITY = 0.34  # strictly above 1/3: one shared signal of three is no neighbour
LOW_EFFICIENCY_BEST = 0.18
POOR_PRIOR = 0.12
MAX_BANS_EXPLAINED = 6
_NONE_KEY = "(none)"
_DAY_MS = 86_400_000
# V8 cannot hold a string longer than this many UTF-16 units; evolver's readFileSync then
# throws, the error is swallowed, and every advice call sees an empty history.
_V8_MAX_STRING_UNITS = 536_870_888


class ScoredGene(msgspec.Struct, frozen=True):
    """One gene's internal ranking record (evolver computes but does not return these)."""

    gene_id: object  # the gene's raw ``id`` value, normally a str
    score: float
    best: float
    attempts: int
    prior: float
    prior_attempts: int
    banned: bool


class EvolverAdvice(msgspec.Struct, frozen=True):
    """The result of one advice call; ``scored`` is in evolver's sort order."""

    current_signal_key: str
    preferred_gene_id: object  # raw ``id`` of the top-ranked gene, or None
    banned_gene_ids: tuple[object, ...]  # Set insertion order (gene first-appearance order)
    explanation: tuple[str, ...]
    scored: tuple[ScoredGene, ...]

    def to_evolver_json(self) -> dict[str, Any]:
        """The object ``getMemoryAdvice`` returns, with the ban Set as a list."""
        return {
            "currentSignalKey": self.current_signal_key,
            "preferredGeneId": self.preferred_gene_id,
            "bannedGeneIds": list(self.banned_gene_ids),
            "explanation": list(self.explanation),
        }


class _Edge(msgspec.Struct):
    success: int = 0
    fail: int = 0
    last_ts: object = None

    def last_ms(self) -> float:
        """The newest outcome's time (NaN when it has none or it does not parse)."""
        return parse_iso_ms(self.last_ts if js_truthy(self.last_ts) else "")


class EdgeCounts(Protocol):
    """Outcome counts of an edge or a gene, and the time of its newest outcome."""

    @property
    def success(self) -> int: ...
    @property
    def fail(self) -> int: ...
    def last_ms(self) -> float: ...


class _Accum(msgspec.Struct):
    gene_id: object
    best: float = 0.0
    attempts: int = 0
    prior: float = 0.0
    prior_attempts: int = 0


def _get(obj: object, key: str) -> object:
    """``obj.key`` for parsed JSON: anything but an object yields undefined (None)."""
    if type(obj) is dict:  # the common case, without the slow ABC check
        return obj.get(key)
    return obj.get(key) if isinstance(obj, Mapping) else None


@functools.lru_cache(maxsize=8192)
def _parse_text_ms(ts: str) -> float:
    return parse_iso_ms(ts)


def _ms(ts: object) -> float:
    """``Date.parse``; timestamps repeat across a window's outcomes, so text is cached."""
    return _parse_text_ms(ts) if type(ts) is str else parse_iso_ms(ts)


def _v8_would_fail(text: str, raw_size: int) -> bool:
    # A UTF-8 file never has more UTF-16 units than bytes, so most files need no counting.
    if raw_size <= _V8_MAX_STRING_UNITS:
        return False
    return len(text.encode("utf-16-le", "surrogatepass")) // 2 > _V8_MAX_STRING_UNITS


def _read_text(path: str | os.PathLike[str]) -> str | None:
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        return None
    text = raw.decode("utf-8", errors="replace")  # Node's 'utf8' decoding never throws
    return None if _v8_would_fail(text, len(raw)) else text


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")  # JSON.parse has no NaN/Infinity literals


def read_evolver_jsonl_tail(
    path_or_lines: str | os.PathLike[str] | Iterable[str], limit_lines: int = DEFAULT_WINDOW
) -> list[Any]:
    """Parse the last ``limit_lines`` non-blank lines of a memory graph, as evolver does.

    A ``str`` or path-like is a file to read (missing, or too large for a V8 string: ``[]``);
    any other iterable supplies the text in pieces (each is split on ``\\n`` too). Lines are
    trimmed and blank ones dropped *before* the window is taken; then lines that fail to parse
    or parse to a falsy value are dropped, so the result can be shorter than the window.
    """
    if limit_lines < 1:
        raise ValueError(f"limit_lines must be positive, got {limit_lines}")
    if isinstance(path_or_lines, str | os.PathLike):
        text = _read_text(path_or_lines)
        pieces: Iterable[str] = () if text is None else (text,)
    else:
        pieces = path_or_lines
    lines = [t for piece in pieces for line in piece.split("\n") if (t := js_trim(line))]
    events: list[Any] = []
    for line in lines[-limit_lines:]:
        try:
            value = json.loads(line, parse_constant=_reject_constant)
        except ValueError:
            continue
        if js_truthy(value):
            events.append(value)
    return events


def _outcome_fields(ev: object) -> tuple[str, str, str, object] | None:
    """(signal key, gene id, status, timestamp) of a counted outcome event, else None."""
    if _get(ev, "type") != EVENT_TYPE or _get(ev, "kind") != "outcome":
        return None
    gene_id = _get(_get(ev, "gene"), "id")
    if not js_truthy(gene_id):
        return None
    key = _get(_get(ev, "signal"), "key")
    status = _get(_get(ev, "outcome"), "status")
    ts = next((t for t in (_get(ev, k) for k in ("ts", "created_at", "at")) if js_truthy(t)), None)
    return (
        js_string(key) if js_truthy(key) else _NONE_KEY,
        js_string(gene_id),
        js_string(status) if js_truthy(status) else "unknown",
        ts,
    )


def _count(edge: _Edge, status: str, ts: object) -> None:
    if status == "success":
        edge.success += 1
    elif status == "failed":
        edge.fail += 1
    # Strictly newer only, so the first of equal times wins and an unparseable first
    # timestamp is never replaced (NaN compares false).
    if ts is not None and (edge.last_ts is None or _ms(ts) > _ms(edge.last_ts)):
        edge.last_ts = ts


def _aggregate(events: Sequence[object]) -> tuple[dict[str, _Edge], dict[str, _Edge]]:
    """Outcome counts per ``signalKey::geneId`` edge and per gene, with newest timestamps."""
    edges: dict[str, _Edge] = {}
    genes: dict[str, _Edge] = {}
    for ev in events:
        fields = _outcome_fields(ev)
        if fields is None:
            continue
        key, gene_id, status, ts = fields
        _count(edges.setdefault(f"{key}::{gene_id}", _Edge()), status, ts)
        _count(genes.setdefault(gene_id, _Edge()), status, ts)
    return edges, genes


def _decay_weight(t: float, half_life_days: float, now_ms: float) -> float:
    if not math.isfinite(half_life_days) or half_life_days <= 0 or math.isnan(t):
        return 1.0
    age_days = (now_ms - t) / _DAY_MS
    if age_days <= 0:
        return 1.0
    return js_pow(0.5, age_days / half_life_days)


def _expected_success(edge: EdgeCounts, half_life_days: float, now_ms: float) -> tuple[float, int]:
    """(Laplace-smoothed success rate times decay of the newest outcome, attempt count)."""
    total = edge.success + edge.fail
    p = (edge.success + 1) / (total + 2)
    return p * _decay_weight(edge.last_ms(), half_life_days, now_ms), total


def _candidate_keys(events: Sequence[object], cur_signals: object) -> list[tuple[str, float]]:
    """The current key (sim 1) plus every distinct key in the window with sim >= 0.34."""
    cur_key = compute_signal_key(cur_signals)
    query = set(normalize_signals_for_matching(cur_signals))
    candidates = [(cur_key, 1.0)]
    seen = {cur_key}
    # Windows repeat a few signal lists many times; similarity depends only on the list, so
    # lists of plain strings are scored once (other values could compare equal in Python yet
    # stringify differently in JavaScript, e.g. 1 and true).
    memo: dict[tuple[str, ...], float] = {}
    for ev in events:
        if _get(ev, "type") != EVENT_TYPE:
            continue  # every kind counts, including snapshots that scoring never reads
        signal = _get(ev, "signal")
        raw_key = _get(signal, "key")
        key = js_string(raw_key) if js_truthy(raw_key) else _NONE_KEY
        if key in seen:
            continue
        # Measured against the event's raw signal list, not its stored key; a key below the
        # threshold is not marked seen, so a later event with the same key is tried again.
        raw = _get(signal, "signals")
        plain = tuple(raw) if isinstance(raw, list) and all(type(x) is str for x in raw) else None
        sim = memo.get(plain) if plain is not None else None
        if sim is None:
            sim = jaccard_sets(query, set(normalize_signals_for_matching(raw)))
            if plain is not None:
                memo[plain] = sim
        if sim >= NEIGHBOUR_MIN_SIMILARITY:
            candidates.append((key, sim))
            seen.add(key)
    return candidates


def _map_key(value: object) -> object:
    """Key that mimics a JS Map's SameValueZero on JSON values (1 == 1.0, but not True)."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int | float):
        return ("number", js_string(value))  # JS number text: 1 and 1.0 are one key
    if isinstance(value, str):
        return ("string", value)
    return ("object", id(value))  # arrays and objects are compared by identity


def _typed_genes(genes: object) -> list[Mapping[str, object]]:
    # Genes without type "Gene" are ignored silently, exactly as evolver does.
    items = genes if isinstance(genes, list | tuple) else []
    return [
        g
        for g in items
        if isinstance(g, Mapping) and g.get("type") == "Gene" and js_truthy(g.get("id"))
    ]


def _accumulate(
    candidates: list[tuple[str, float]],
    genes: list[Mapping[str, object]],
    aggregates: tuple[Mapping[str, EdgeCounts], Mapping[str, EdgeCounts]],
    now_ms: float,
) -> list[_Accum]:
    """Best similarity-weighted edge value and largest counts per gene, over all candidates."""
    edges, gene_outcomes = aggregates
    by_gene: dict[object, _Accum] = {}
    for key, sim in candidates:
        for g in genes:
            gene_id = g.get("id")
            cur = by_gene.setdefault(_map_key(gene_id), _Accum(gene_id))
            edge = edges.get(f"{key}::{js_string(gene_id)}")
            if edge is not None:
                value, total = _expected_success(edge, EDGE_HALF_LIFE_DAYS, now_ms)
                cur.best = max(cur.best, value * sim)
                cur.attempts = max(cur.attempts, total)  # may come from another key than best
            gene_edge = gene_outcomes.get(js_string(gene_id))
            if gene_edge is not None:
                value, total = _expected_success(gene_edge, GENE_HALF_LIFE_DAYS, now_ms)
                cur.prior = max(cur.prior, value)
                cur.prior_attempts = max(cur.prior_attempts, total)
    return list(by_gene.values())


def _score(acc: _Accum, drift: bool) -> ScoredGene:
    # Any edge at all drops the prior's weight from 0.4 to 0.12, so weak evidence can rank a
    # gene below one with none.
    score = acc.best + 0.12 * acc.prior if acc.best > 0 else 0.4 * acc.prior
    low_efficiency = acc.attempts >= 2 and acc.best < LOW_EFFICIENCY_BEST
    poor_prior = acc.attempts < 2 and acc.prior_attempts >= 3 and acc.prior < POOR_PRIOR
    return ScoredGene(
        gene_id=acc.gene_id,
        score=score,
        best=acc.best,
        attempts=acc.attempts,
        prior=acc.prior,
        prior_attempts=acc.prior_attempts,
        banned=not drift and (low_efficiency or poor_prior),
    )


def _explain(scored: Sequence[ScoredGene], banned: Sequence[object], drift: bool) -> list[str]:
    lines: list[str] = []
    top = scored[0] if scored else None
    if top is not None:
        lines.append(f"memory_prefer:{js_string(top.gene_id)}")
    if banned:
        ids = ",".join(js_string(b) for b in banned[:MAX_BANS_EXPLAINED])
        lines.append(f"memory_ban:{ids}")
    if top is not None and top.prior > 0:
        lines.append(f"gene_prior:{to_fixed(top.prior, 3)}")
    if drift:
        lines.append("random_drift:enabled")
    return lines


def evolver_advice(
    events: Sequence[object],
    signals: object,
    genes: object,
    drift_enabled: object,
    now_ms: float,
    window: int | None = DEFAULT_WINDOW,
) -> EvolverAdvice:
    """Reproduce evolver's ``getMemoryAdvice`` over already-parsed graph events.

    ``events`` are in file order and should already be the last-2000-*lines* window (see
    ``read_evolver_jsonl_tail``); ``window`` additionally keeps at most that many trailing
    events (``None`` keeps all). ``drift_enabled`` is tested for JavaScript truthiness, so the
    string ``"false"`` means drift. ``now_ms`` is the frozen ``Date.now()``. Scores can differ
    from V8's in the last bit because of ``pow`` (see ``js_pow``); decisions match unless a
    score sits exactly on a threshold or tie.
    """
    if window is not None:
        if window < 1:
            raise ValueError(f"window must be positive, got {window}")
        events = events[-window:]
    cur_signals = signals if isinstance(signals, list | tuple) else []
    candidates = _candidate_keys(events, cur_signals)
    return decide(candidates, genes, _aggregate(events), drift_enabled, now_ms)


def decide(
    candidates: list[tuple[str, float]],
    genes: object,
    aggregates: tuple[Mapping[str, EdgeCounts], Mapping[str, EdgeCounts]],
    drift_enabled: object,
    now_ms: float,
) -> EvolverAdvice:
    """The advice from the candidate keys (the current one first) and the window's outcome
    counts per ``signalKey::geneId`` edge and per gene."""
    drift = js_truthy(drift_enabled)
    accums = _accumulate(candidates, _typed_genes(genes), aggregates, now_ms)
    ranked = [_score(acc, drift) for acc in accums]
    banned = tuple(s.gene_id for s in ranked if s.banned)  # first-appearance order, pre-sort
    scored = tuple(sorted(ranked, key=lambda s: -s.score))  # stable: ties keep gene order
    return EvolverAdvice(
        current_signal_key=candidates[0][0],
        preferred_gene_id=scored[0].gene_id if scored else None,
        banned_gene_ids=banned,
        explanation=tuple(_explain(scored, banned, drift)),
        scored=scored,
    )
