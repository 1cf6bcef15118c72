"""The advice state: everything advice needs, folded from the log in seq order.

* edge statistics per (signal key, gene) and per gene (:mod:`evolog.advice._edges`), over **all**
  history — the ``evolog`` policy's evidence;
* the distinct signal keys (:mod:`evolog.advice._keysearch`);
* open attempts, and recently closed ones, by action id — for the attempts API and to find
  the key and gene of an outcome that names only its action id;
* the last :data:`WINDOW` events of evolver kinds, as evolver would have had them as lines —
  the ``evolver`` policy's input.

What an outcome counts for (the rule of :mod:`evolog.projections.edges`): its key is its own
``key``, else its attempt's, else ``(none)``; its gene is its own ``gene``, else its
attempt's, else it counts for nothing (evolver skips it too). Its attempt is the newest
earlier attempt with the same action id, however old: one closed long ago (no longer among
the recent closed attempts) is looked up in the log
(:class:`evolog.advice._reader.AttemptFinder`). ``success`` counts a success, ``failed`` a
failure, any other status only an outcome. It counts at its ``ts`` (a time outside what the
log accepts at the nearest accepted one). Why this fold exists beside the projections'
edges, and which is the authority: see :mod:`evolog.projections.edges`.
"""

from __future__ import annotations

import itertools
import json
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import msgspec
from evolog.eventlog import TS_MAX

from ._edges import StatTable
from ._forgotten import ForgottenIds
from ._keysearch import KeyCatalog
from .evolver._export import EVENT_TYPE, EVOLVER_KINDS, NONE_KEY, apply_patch, iso_ms

if TYPE_CHECKING:
    from .evolver._window import WindowIndex

DAY_US = 86_400_000_000
EDGE_HALF_LIFE_DAYS = 30.0
GENE_HALF_LIFE_DAYS = 45.0
WINDOW = 2000
RECENT_CLOSED = 4096  # older closed attempts are found by a scan of the log
_EVOLVER = frozenset(EVOLVER_KINDS)
_NO_SIGNAL = frozenset({"confidence_gene_outcome"})
_WITH_GENE = frozenset({"hypothesis", "attempt", "outcome", "confidence_edge"})
_WITH_GENE |= _NO_SIGNAL


class Row(NamedTuple):
    """The fields of one event that advice reads (``signals``/``patch`` may be None)."""

    seq: int
    kind: str
    id: str
    ts: int
    key: str
    gene: str | None
    gene_category: str | None
    status: str | None
    action_id: str | None
    agent: str
    session: str | None
    signals: list[str] | None
    patch: dict[str, Any] | None


class Gap(NamedTuple):
    """``rows`` evolver-kind rows of a segment that are neither attempts nor outcomes and are
    pushed out of the window within that segment: all they change is the counters."""

    rows: int


class AttemptInfo(msgspec.Struct):
    """An attempt as the attempts API reports it."""

    action_id: str
    seq: int
    ts: int
    event_id: str
    key: str
    gene: str | None
    gene_category: str | None
    agent: str
    session: str | None
    signals: list[str]

    def to_json(self) -> dict[str, Any]:
        return {
            "action_id": self.action_id,
            "seq": self.seq,
            "ts": iso_ms(self.ts),
            "id": self.event_id,
            "key": self.key,
            "gene": self.gene,
            "gene_category": self.gene_category,
            "agent": self.agent,
            "session": self.session,
            "signals": list(self.signals),
        }


class Closed(NamedTuple):
    """A closed attempt: the seq of the outcome that closed it, and the attempt's fields."""

    outcome_seq: int
    key: str
    gene: str | None
    signals: list[str]


class WindowRow(NamedTuple):
    """One evolver-kind event as evolver's advice reads it (key and gene resolved)."""

    kind: str
    id: str
    ts: int
    key: str
    signals: list[str]
    gene: str | None
    status: str | None
    patch: dict[str, Any] | None


def window_object(w: WindowRow) -> dict[str, Any]:
    """The fields of the evolver line that getMemoryAdvice reads, patch applied."""
    obj: dict[str, Any] = {"type": EVENT_TYPE, "kind": w.kind, "id": w.id, "ts": iso_ms(w.ts)}
    if w.kind not in _NO_SIGNAL:
        obj["signal"] = {"key": w.key or NONE_KEY, "signals": list(w.signals)}
    if w.kind in _WITH_GENE:
        obj["gene"] = {"id": w.gene}
    if w.kind == "outcome":
        obj["outcome"] = {"status": w.status or ""}
    return apply_patch(obj, w.patch) if w.patch else obj


def parse_patch(value: Any) -> dict[str, Any] | None:
    """A patch column value (a dict, or JSON text from a sealed segment)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    return value if isinstance(value, dict) else None


class AdviceState:
    """The folded state at seq ``head`` (see the module docstring)."""

    def __init__(self) -> None:
        self.head = 0
        self.edge_half_life_us = EDGE_HALF_LIFE_DAYS * DAY_US
        self.gene_half_life_us = GENE_HALF_LIFE_DAYS * DAY_US
        self.catalog = KeyCatalog()
        self.genes: list[str] = []
        self.gene_ids: dict[str, int] = {}
        self.edges = StatTable()
        self.gene_stats = StatTable()
        self.open: dict[str, AttemptInfo] = {}
        self._closed: OrderedDict[str, Closed] = OrderedDict()
        self._window: deque[WindowRow] = deque(maxlen=WINDOW)
        # The objects of the window rows, built on first use (None until then); appended in
        # step with ``window`` so that both drop their oldest entry together.
        self._objects: deque[dict[str, Any] | None] = deque(maxlen=WINDOW)
        # A cached state keeps the closed attempts and the window as bytes until they are
        # needed: the evolog policy never reads them, and decoding them is most of a load.
        self._lazy: Callable[[], tuple[list[Any], list[Any]]] | None = None
        self.applied = 0  # events folded since this object was built or loaded
        # Action ids of closed attempts pushed out of ``closed`` (only theirs can be missing
        # from the state though the log has them).
        self.forgotten = ForgottenIds()
        # Set by the engine while it folds: finds such an attempt in the log.
        self.find_attempt: Callable[[str, int], Row | None] | None = None
        # Rows appended to the window so far, and the evolver index with the count it saw.
        self.window_version = 0
        self._index: WindowIndex | None = None
        self._index_version = 0

    def defer(self, load: Callable[[], tuple[list[Any], list[Any]]]) -> None:
        """Fill ``closed`` and ``window`` from ``load()`` (raw rows) on first use."""
        self._lazy = load

    def _materialize(self) -> None:
        if self._lazy is not None:
            closed, window = self._lazy()
            self._lazy = None
            self._closed = OrderedDict((c[0], Closed(*c[1:])) for c in closed)
            self._window = deque((WindowRow(*w) for w in window), maxlen=WINDOW)
            self._objects = deque([None] * len(self._window), maxlen=WINDOW)

    @property
    def closed(self) -> OrderedDict[str, Closed]:
        """Recently closed attempts by action id, oldest first."""
        self._materialize()
        return self._closed

    @property
    def window(self) -> deque[WindowRow]:
        """The last :data:`WINDOW` evolver-kind events, oldest first."""
        self._materialize()
        return self._window

    def gene_id(self, gene: str) -> int:
        gid = self.gene_ids.get(gene)
        if gid is None:
            gid = self.gene_ids[gene] = len(self.genes)
            self.genes.append(gene)
        return gid

    def apply(self, row: Row) -> None:
        """Fold one event (rows must come in increasing seq; older ones are ignored)."""
        if row.seq <= self.head:
            return
        self.head = row.seq
        self.applied += 1
        if self._lazy is not None:
            self._materialize()
        # From here on ``_closed`` and ``_window`` are used directly: the properties cost
        # a tenth of a first fold, called once or twice per row.
        key, signals, gene = row.key, row.signals, row.gene
        if row.kind == "attempt" and row.action_id:
            self._open(row)
        elif row.kind == "outcome":
            key, signals, gene = self._outcome(row)
        if row.kind in _EVOLVER:
            self._window.append(
                WindowRow(row.kind, row.id, row.ts, key, signals or [], gene, row.status, row.patch)
            )
            self._objects.append(None)
            self.window_version += 1

    def skip(self, gap: Gap) -> None:
        """Count the rows of ``gap`` as :meth:`apply` would have (they are read only in
        sealed segments, whose rows come after ``head``)."""
        self.applied += gap.rows
        self.window_version += gap.rows

    def _open(self, row: Row) -> None:
        aid = row.action_id or row.id
        self._closed.pop(aid, None)  # a newer attempt with the same action id is open again
        self.open[aid] = AttemptInfo(
            aid,
            row.seq,
            row.ts,
            row.id,
            row.key,
            row.gene,
            row.gene_category,
            row.agent,
            row.session,
            list(row.signals or []),
        )

    def _outcome(self, row: Row) -> tuple[str, list[str] | None, str | None]:
        aid = row.action_id or ""
        key, signals, gene = row.key, row.signals, row.gene
        info = self.open.pop(aid, None) if aid else None
        closed = self._closed.get(aid) if aid and info is None else None
        attempt: Closed | None = None
        if info is not None:
            attempt = Closed(row.seq, info.key, info.gene, info.signals)
        elif closed is not None:
            attempt = closed  # a second outcome for the same attempt (evolver double counts)
        if attempt is not None:
            key, signals, gene = _completed(key, signals, gene, attempt)
            self._closed[aid] = attempt
            self._closed.move_to_end(aid)
            while len(self._closed) > RECENT_CLOSED:
                self.forgotten.add(self._closed.popitem(last=False)[0])
        elif aid and not (key and gene) and aid in self.forgotten and self.find_attempt:
            # A late outcome of an attempt closed long ago: the rule does not age, so the
            # log is asked (projections resolve it there too).
            found = self.find_attempt(aid, row.seq)
            if found is not None:
                old = Closed(row.seq, found.key, found.gene, found.signals or [])
                key, signals, gene = _completed(key, signals, gene, old)
        if gene:
            kid = self.catalog.add(key or NONE_KEY, signals)
            gid = self.gene_id(gene)
            status = row.status or ""
            # A time outside what the log accepts (an older log's) counts as the nearest
            # accepted one, as in the projections.
            ts = row.ts
            if not 0 <= ts <= TS_MAX:
                ts = 0 if ts < 0 else TS_MAX
            self.edges.for_update(kid, gid).add(ts, status, row.seq, self.edge_half_life_us)
            self.gene_stats.for_update(0, gid).add(ts, status, row.seq, self.gene_half_life_us)
        return key, signals, gene

    def evolver_index(self) -> WindowIndex:
        """The window summarised for evolver's advice (:mod:`evolog.advice.evolver._window`),
        built on first use, then brought up to date with the rows appended since."""
        from .evolver._window import WindowIndex

        window = self.window
        new = self.window_version - self._index_version
        index = self._index
        if index is None or new >= len(window):
            index = self._index = WindowIndex([window_object(w) for w in window])
        elif new:
            for w in itertools.islice(window, len(window) - new, None):
                index.push(window_object(w))
            while len(index) > len(window):
                index.pop()
        self._index_version = self.window_version
        return index

    def window_objects(self) -> list[dict[str, Any]]:
        """The evolver window as the objects evolver's advice reads, oldest first.

        The objects are shared between calls: treat them as read-only.
        """
        window = self.window
        objects = self._objects
        for i in range(len(objects) - 1, -1, -1):
            if objects[i] is not None:
                break  # everything before the newest built object is built too
            objects[i] = window_object(window[i])
        return list(objects)  # type: ignore[arg-type]


def _completed(
    key: str, signals: list[str] | None, gene: str | None, attempt: Closed
) -> tuple[str, list[str] | None, str | None]:
    """An outcome's key, signals and gene, what it lacks taken from its attempt. An outcome
    with a key keeps its own signals (evolver's outcome lines always carry both)."""
    if not key:
        key, signals = attempt.key, signals or attempt.signals
    return key, signals, gene or attempt.gene
