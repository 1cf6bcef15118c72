"""Reading the events advice needs, after a seq, from one snapshot of the log.

Sealed segments are read column by column with pyarrow (only the columns and rows needed);
the WAL tail is decoded frame by frame, only past the seq already folded. Signals and evolver
patches, the costly columns, are read only for the rows that keep them: attempts, and the
last :data:`evolog.advice._state.WINDOW` evolver-kind rows of each segment (earlier rows of a
segment are pushed out of the window by those).

The same holds for whole rows: before a segment's last ``WINDOW`` evolver-kind rows, a row
that is neither an attempt nor an outcome changes nothing the fold keeps but counters (it
enters the window only to be pushed out of it within the segment), so such rows are not
decoded at all; one :class:`evolog.advice._state.Gap` stands for them (on a store of evolver
cycles, two rows in three: most of a first fold was building rows that did nothing).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from typing import Any

from evolog.eventlog import CorruptLogError, Event, Snapshot, kind_of
from evolog.eventlog.sealed import SegmentInfo

from ._batch import Batch
from ._errors import LogReadError
from ._state import WINDOW, Gap, Row, parse_patch
from .evolver._export import EVOLVER_KINDS, PATCH_FIELD

_COLUMNS = (
    "seq",
    "id",
    "ts",
    "kind",
    "key",
    "gene",
    "gene_category",
    "status",
    "action_id",
    "agent",
    "session",
)


def row_of(event: Event) -> Row:
    """The advice fields of a decoded event."""
    get = event.__getattribute__
    fields = event.__struct_fields__
    return Row(
        event.seq,
        kind_of(event),
        event.id,
        event.ts,
        get("key") if "key" in fields else "",
        get("gene") if "gene" in fields else None,
        get("gene_category") if "gene_category" in fields else None,
        get("status") if "status" in fields else None,
        get("action_id") if "action_id" in fields else None,
        event.agent,
        event.session,
        get("signals") if "signals" in fields else None,
        parse_patch(get(PATCH_FIELD)) if PATCH_FIELD in fields else None,
    )


def _segment_rows(
    directory: str, info: SegmentInfo, after: int, upto: int, batches: bool
) -> Iterator[Row | Gap | Batch]:
    import pyarrow as pa
    import pyarrow.compute as pc
    from evolog.eventlog.sealed import DAMAGE, open_segment, read_checked, segment_path

    path = segment_path(directory, info)
    try:
        # Size, rows and seq range against the manifest; page checksums verified.
        pf = open_segment(directory, info)
        present = set(pf.schema_arrow.names)
        wanted = [c for c in (*_COLUMNS, "signals", PATCH_FIELD) if c in present]
        table = read_checked(pf, info, path, columns=wanted)
    except CorruptLogError as exc:
        raise LogReadError(str(exc)) from None
    except DAMAGE as exc:
        raise LogReadError(f"{path}: cannot read a sealed segment: {exc}") from None
    mask = pc.and_(
        pc.and_(pc.greater(table["seq"], after), pc.less_equal(table["seq"], upto)),
        pc.is_in(table["kind"], pa.array(EVOLVER_KINDS)),
    )
    if pc.sum(pc.invert(mask)).as_py():  # a segment of evolver rows only is not copied
        table = table.filter(mask)
    n = table.num_rows
    if n == 0:
        return
    passing = n - WINDOW  # rows before this index are pushed out of the window here
    if passing > 0:
        folded = pc.is_in(table["kind"].slice(0, passing), pa.array(_FOLDED)).combine_chunks()
        skipped = passing - folded.true_count
        if skipped:
            yield Gap(skipped)
        if batches:
            if folded.true_count:
                yield Batch(table.slice(0, passing).filter(folded))
            table = table.slice(passing)
        elif skipped:
            table = table.filter(pa.concat_arrays([folded, pa.array([True] * WINDOW)]))
    yield from _decoded(table, present)


#: The evolver kinds whose rows change the fold outside the window.
_FOLDED = ("attempt", "outcome")


def _decoded(table: Any, present: set[str]) -> Iterator[Row]:
    import pyarrow as pa

    n = table.num_rows
    cols: dict[str, list[Any]] = {}
    for c in _COLUMNS:
        if c not in present:
            cols[c] = [None] * n
        elif c == "ts":
            cols[c] = table[c].cast(pa.int64()).to_pylist()
        else:
            cols[c] = table[c].to_pylist()
    kinds = cols["kind"]
    need = [i for i in range(n) if kinds[i] == "attempt" or i >= n - WINDOW]
    signals = _take(table, "signals", need, present)
    patches = _take(table, PATCH_FIELD, [i for i in need if i >= n - WINDOW], present)
    for i in range(n):
        yield Row(
            cols["seq"][i],
            kinds[i],
            cols["id"][i],
            cols["ts"][i],
            cols["key"][i] or "",
            cols["gene"][i],
            cols["gene_category"][i],
            cols["status"][i],
            cols["action_id"][i],
            cols["agent"][i] or "",
            cols["session"][i],
            signals.get(i),
            parse_patch(patches[i]) if i in patches else None,
        )


def _take(table: Any, name: str, rows: list[int], present: set[str]) -> dict[int, Any]:
    if name not in present or not rows:
        return {}
    values = table[name].take(rows).to_pylist()
    return dict(zip(rows, values, strict=True))


def read_rows(
    snap: Snapshot, after: int, upto: int | None = None, *, batches: bool = True
) -> tuple[int, Iterator[Row | Gap | Batch]]:
    """(head, rows of evolver-kind events with ``after < seq <= head``, in seq order, a
    segment's rows that pass through the window only counted by a :class:`Gap`, and with
    ``batches`` its attempts and outcomes among them as one :class:`Batch`).

    ``head`` is the snapshot's newest seq, or ``upto`` if that is smaller.
    """
    head = snap.head_seq if upto is None else min(snap.head_seq, upto)
    # Read backwards from the WAL's end when few events are new: an agent that records an
    # outcome and asks again pays for the new events, not for the whole WAL.
    events = [e for e in snap.tail_events(after) if e.seq <= head]
    return head, _rows(snap, after, head, events, batches)


def _rows(
    snap: Snapshot, after: int, head: int, events: Sequence[Event], batches: bool
) -> Iterator[Row | Gap | Batch]:
    for info in snap.segments:
        if info.last_seq > after and info.first_seq <= head:
            yield from _segment_rows(snap.paths.segments, info, after, head, batches)
    kinds = frozenset(EVOLVER_KINDS)
    for event in events:
        if kind_of(event) in kinds:
            yield row_of(event)


class AttemptFinder:
    """The newest attempt with an action id before a seq, from the whole log.

    The slow path of an outcome whose attempt the fold no longer holds (closed, then pushed
    out of the recent closed attempts): the log is read once, on the first such outcome of
    a fold, and indexed by action id.
    """

    def __init__(self, snap: Snapshot, head: int) -> None:
        self._snap, self._head = snap, head
        self._index: dict[str, list[Row]] | None = None

    def __call__(self, action_id: str, before: int) -> Row | None:
        if self._index is None:
            self._index = {}
            for row in read_rows(self._snap, 0, self._head, batches=False)[1]:
                if type(row) is Row and row.kind == "attempt" and row.action_id:
                    self._index.setdefault(row.action_id, []).append(row)
        found = self._index.get(action_id, [])
        i = bisect.bisect_left([r.seq for r in found], before)
        return found[i - 1] if i else None
