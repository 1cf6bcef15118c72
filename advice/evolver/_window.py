"""evolver's advice over a window kept summarised as it slides.

:func:`~._policy.evolver_advice` reads the whole 2,000-event window for every call: it
counts each edge's and gene's outcomes and looks at every event's signal list for keys
similar to the query. None of that depends on the query but the similarity, so a
long-lived process (the server) keeps it here instead, updated by the events that enter
and leave the window, and a call only looks up what the query touches:

* per ``signalKey::geneId`` edge and per gene, the success and failure counts and the times
  of the outcomes in the window (their newest time is worked out again only after a change);
* per signal key, each distinct normalised signal set its events carry, with the window
  positions of those events, and an index from each signal to the (key, set) pairs holding
  it: only sets that share a signal with the query can reach the neighbour threshold (or,
  for an empty query, the empty set, whose similarity to it is 1).

The answer is the one :func:`~._policy.evolver_advice` gives on the same window (the
tests compare them on generated windows, including odd patched events).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence

from evolog.eventlog.schema import (
    compute_signal_key,
    jaccard_sets,
    js_string,
    js_truthy,
    normalize_signals_for_matching,
)

from ._policy import (
    _NONE_KEY,
    EVENT_TYPE,
    NEIGHBOUR_MIN_SIMILARITY,
    EvolverAdvice,
    _get,
    _ms,
    _outcome_fields,
    decide,
)

_Pair = tuple[str, frozenset[str]]


class _Counts:
    """An edge's (or a gene's) outcomes in the window, oldest first."""

    __slots__ = ("_last", "fail", "success", "times")

    def __init__(self) -> None:
        self.success = 0
        self.fail = 0
        self.times: deque[float | None] = deque()  # None: the outcome has no time
        self._last: float | None = None  # memo of last_ms(); None once stale

    def push(self, status: str, ms: float | None) -> None:
        self.success += status == "success"
        self.fail += status == "failed"
        self.times.append(ms)
        self._last = None

    def pop(self, status: str) -> None:
        self.success -= status == "success"
        self.fail -= status == "failed"
        self.times.popleft()
        self._last = None

    def last_ms(self) -> float:
        # evolver keeps the first time it sees and replaces it only by a strictly later one:
        # the newest time, unless the first does not parse (NaN, then never replaced).
        if self._last is None:
            last: float | None = None
            for ms in self.times:
                if ms is not None and (last is None or ms > last):
                    last = ms
            self._last = math.nan if last is None else last
        return self._last


class _Row:
    """What one window event contributes (kept to take it out again)."""

    __slots__ = ("edge", "gene", "ms", "pair", "status")

    def __init__(self, obj: object) -> None:
        self.pair: _Pair | None = None
        self.edge: str | None = None
        self.gene = ""
        self.status = ""
        self.ms: float | None = None
        if _get(obj, "type") != EVENT_TYPE:
            return
        signal = _get(obj, "signal")
        raw_key = _get(signal, "key")
        key = js_string(raw_key) if js_truthy(raw_key) else _NONE_KEY
        self.pair = (key, frozenset(normalize_signals_for_matching(_get(signal, "signals"))))
        fields = _outcome_fields(obj)
        if fields is not None:
            key, self.gene, self.status, ts = fields
            self.edge = f"{key}::{self.gene}"
            self.ms = None if ts is None else _ms(ts)


class WindowIndex:
    """The summaries of a window (see the module docstring); :meth:`push` the newest event,
    :meth:`pop` the oldest."""

    def __init__(self, objects: Sequence[object] = ()) -> None:
        self._rows: deque[_Row] = deque()
        self._next = 0  # window position of the next event pushed
        self.edges: dict[str, _Counts] = {}
        self.genes: dict[str, _Counts] = {}
        # key -> normalised signal set -> positions of the events carrying both
        self._sets: dict[str, dict[frozenset[str], deque[int]]] = {}
        self._by_signal: dict[str, set[_Pair]] = {}
        self._empty: set[_Pair] = set()
        for obj in objects:
            self.push(obj)

    def __len__(self) -> int:
        return len(self._rows)

    def push(self, obj: object) -> None:
        row = _Row(obj)
        self._rows.append(row)
        position = self._next
        self._next += 1
        if row.pair is not None:
            key, signals = row.pair
            positions = self._sets.setdefault(key, {}).setdefault(signals, deque())
            if not positions:
                for signal in signals:
                    self._by_signal.setdefault(signal, set()).add(row.pair)
                if not signals:
                    self._empty.add(row.pair)
            positions.append(position)
        if row.edge is not None:
            self.edges.setdefault(row.edge, _Counts()).push(row.status, row.ms)
            self.genes.setdefault(row.gene, _Counts()).push(row.status, row.ms)

    def pop(self) -> None:
        row = self._rows.popleft()
        if row.pair is not None:
            key, signals = row.pair
            by_set = self._sets[key]
            positions = by_set[signals]
            positions.popleft()
            if not positions:
                del by_set[signals]
                if not by_set:
                    del self._sets[key]
                for signal in signals:
                    holders = self._by_signal[signal]
                    holders.discard(row.pair)
                    if not holders:
                        del self._by_signal[signal]
                self._empty.discard(row.pair)
        if row.edge is not None:
            _pop(self.edges, row.edge, row.status)
            _pop(self.genes, row.gene, row.status)

    def candidate_keys(self, signals: object) -> list[tuple[str, float]]:
        """The current key (similarity 1) and, in window order, every other key whose first
        event with a signal set similar enough to the query's sets its similarity."""
        cur_signals = signals if isinstance(signals, list | tuple) else []
        cur_key = compute_signal_key(cur_signals)
        query = set(normalize_signals_for_matching(cur_signals))
        if query:
            pairs: set[_Pair] = set()
            for signal in query:
                pairs |= self._by_signal.get(signal, set())
        else:
            pairs = self._empty
        first: dict[str, tuple[int, float]] = {}
        for key, found in pairs:
            if key == cur_key:
                continue
            sim = jaccard_sets(query, found)
            if sim < NEIGHBOUR_MIN_SIMILARITY:
                continue
            position = self._sets[key][found][0]
            if key not in first or position < first[key][0]:
                first[key] = (position, sim)
        ordered = sorted(first.items(), key=lambda item: item[1][0])
        return [(cur_key, 1.0), *((key, sim) for key, (_, sim) in ordered)]

    def advice(
        self, signals: object, genes: object, drift_enabled: object, now_ms: float
    ) -> EvolverAdvice:
        """What :func:`~._policy.evolver_advice` answers over this window (``window=None``)."""
        return decide(
            self.candidate_keys(signals), genes, (self.edges, self.genes), drift_enabled, now_ms
        )


def _pop(table: dict[str, _Counts], name: str, status: str) -> None:
    counts = table[name]
    counts.pop(status)
    if not counts.times:
        del table[name]
