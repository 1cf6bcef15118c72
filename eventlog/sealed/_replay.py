"""Replay: events or Arrow batches from a snapshot, as of a seq or a time, by kind."""

from __future__ import annotations

from collections.abc import Collection, Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .._errors import CorruptLogError, InvalidEventError
from .._snapshot import Snapshot
from ..schema._codec import kind_of
from ..schema._union import AnyEvent
from ..wal._frames import array_header
from ._arrow import SCHEMA, TS_TYPE, table_to_events
from ._bodies import bodies_to_table
from ._manifest import SegmentInfo
from ._segments import DAMAGE, conform, one_line, open_segment, read_checked, segment_path

BATCH_ROWS = 64 * 1024


class Filter:
    """Which events a replay yields: ``seq <= as_of_seq``, ``ts <= as_of_ts``, kinds."""

    def __init__(
        self,
        as_of_seq: int | None = None,
        as_of_ts: int | None = None,
        kinds: Collection[str] | None = None,
    ) -> None:
        from ..schema._union import KINDS

        unknown = sorted(set(kinds or ()) - set(KINDS))
        if unknown:
            raise InvalidEventError(
                f"kinds: expected some of {', '.join(sorted(KINDS))}; got {', '.join(unknown)}"
            )
        self.as_of_seq = as_of_seq
        self.as_of_ts = as_of_ts
        self.kinds = frozenset(kinds) if kinds else None

    def keeps_segment(self, info: SegmentInfo) -> bool:
        if self.as_of_seq is not None and info.first_seq > self.as_of_seq:
            return False
        return not (self.as_of_ts is not None and info.min_ts > self.as_of_ts)

    def keeps(self, event: AnyEvent) -> bool:
        if self.as_of_seq is not None and event.seq > self.as_of_seq:
            return False
        if self.as_of_ts is not None and event.ts > self.as_of_ts:
            return False
        return self.kinds is None or kind_of(event) in self.kinds

    def mask(self, batch: pa.RecordBatch | pa.Table) -> pa.Array | None:
        conds = []
        if self.as_of_seq is not None:
            conds.append(pc.less_equal(batch["seq"], self.as_of_seq))
        if self.as_of_ts is not None:
            conds.append(pc.less_equal(batch["ts"], pa.scalar(self.as_of_ts, TS_TYPE)))
        if self.kinds is not None:
            conds.append(pc.is_in(batch["kind"], pa.array(sorted(self.kinds))))
        if not conds:
            return None
        out = conds[0]
        for c in conds[1:]:
            out = pc.and_(out, c)
        return out


def arrow_batches(
    snap: Snapshot, flt: Filter, columns: list[str] | None = None
) -> Iterator[pa.RecordBatch]:
    """Record batches in :data:`SCHEMA` (or ``columns``) in seq order."""
    for info in snap.segments:
        if not flt.keeps_segment(info):
            continue
        pf = open_segment(snap.paths.segments, info)
        read_cols = _read_columns(pf, columns)
        # A whole segment at once (bounded by the seal chunk / compaction target): the
        # multi-threaded reader is faster than iterating row-group batches.
        path = segment_path(snap.paths.segments, info)
        table = read_checked(pf, info, path, columns=read_cols, use_threads=True)
        yield from _filtered(table, flt, columns)
    records = snap.tail_records()
    if records.n:
        # The WAL tail through the seal's converter: no Python object per event.
        bodies = memoryview(records.data)[len(array_header(records.n)) :]
        table = bodies_to_table([bodies], 0, records.n, records.first)
        yield from _filtered(table, flt, columns)


def _read_columns(pf: pq.ParquetFile, columns: list[str] | None) -> list[str] | None:
    if columns is None:
        return None
    need = set(columns) | {"seq", "ts", "kind"}
    present = set(pf.schema_arrow.names)
    return [n for n in SCHEMA.names if n in need and n in present]


def _filtered(table: pa.Table, flt: Filter, columns: list[str] | None) -> Iterator[pa.RecordBatch]:
    mask = flt.mask(table)
    if mask is not None:
        table = table.filter(mask)
    if table.num_rows == 0:
        return
    wanted = columns or SCHEMA.names
    # Segments written by this version already match the schema: skip the per-column cast.
    if table.column_names != list(wanted) or not _types_match(table, wanted):
        table = conform(table.select([c for c in wanted if c in table.column_names]), wanted)
    yield from table.to_batches()


def _types_match(table: pa.Table, names: list[str]) -> bool:
    return all(table.schema.field(n).type == SCHEMA.field(n).type for n in names)


def events(snap: Snapshot, flt: Filter) -> Iterator[AnyEvent]:
    """Events in seq order."""
    for info in snap.segments:
        if not flt.keeps_segment(info):
            continue
        yield from segment_events(snap, info, flt)
    for e in snap.tail_events():
        if flt.keeps(e):
            yield e


def segment_events(snap: Snapshot, info: SegmentInfo, flt: Filter) -> Iterator[AnyEvent]:
    """One segment's events, a batch at a time; each batch's seqs must continue the last."""
    pf = open_segment(snap.paths.segments, info)
    path = segment_path(snap.paths.segments, info)
    expect = info.first_seq
    batches = pf.iter_batches(batch_size=BATCH_ROWS)
    while True:
        try:
            batch = next(batches, None)
        except DAMAGE as exc:
            raise CorruptLogError(f"{path}: unreadable sealed segment ({one_line(exc)})") from None
        if batch is None:
            break
        table = pa.Table.from_batches([batch])
        n = table.num_rows
        if n and (table["seq"][0].as_py(), table["seq"][-1].as_py()) != (expect, expect + n - 1):
            raise CorruptLogError(
                f"{path}: expected seqs from {expect} (per the manifest); got "
                f"{table['seq'][0].as_py()}..{table['seq'][-1].as_py()}"
            )
        expect += n
        mask = flt.mask(table)
        if mask is not None:
            table = table.filter(mask)
        yield from table_to_events(conform(table))
    if expect != info.last_seq + 1:
        raise CorruptLogError(
            f"{path}: expected seqs {info.first_seq}..{info.last_seq} (per the manifest); "
            f"read up to {expect - 1}"
        )
