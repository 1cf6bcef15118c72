"""Reading the log for the ledger: the columns it needs, as numpy arrays indexed by row.

One pass over ``replay_arrow`` with the ledger's kinds and columns; retracted events (by id,
or by dream cycle) are dropped wherever their retraction sits. Entry ids become ordinals
(one dictionary over every field that names an entry); provenance lists become ragged
arrays of ordinals (offsets + values) with empty ids removed, and the gene fallback applied.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from ._config import LedgerConfig

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
B = npt.NDArray[np.bool_]

KINDS = ("attempt", "outcome", "tick", "lifecycle", "merge", "node", "dream_end")
ATTEMPT, OUTCOME, TICK, LIFECYCLE, MERGE, NODE, DREAM_END = range(7)
OPS = ("birth", "pin", "unpin", "forget")
COLUMNS = [
    "seq", "ts", "kind", "id", "action_id", "decided_by", "supported_by", "gene", "delta",
    "ticks", "entry", "op", "energy", "pinned", "probation", "node", "merged", "cycle",
    "target_cycle", "targets",
]  # fmt: skip


@dataclass
class Ragged:
    """Per-row lists of ordinals: row r holds ``values[offsets[r]:offsets[r + 1]]``."""

    offsets: I64
    values: I64

    def lengths(self) -> I64:
        return np.diff(self.offsets)

    def row(self, r: int) -> tuple[int, ...]:
        return tuple(self.values[self.offsets[r] : self.offsets[r + 1]].tolist())


@dataclass
class Rows:
    """The ledger's events in log order, one numpy cell per row and field."""

    n: int
    kind: npt.NDArray[np.int8]
    seq: I64
    ts: I64
    ids: list[str]
    dec: Ragged
    sup: Ragged
    own_empty: B
    key: I64
    keys: pa.Array
    delta: F64
    has_delta: B
    ticks: I64
    entry: I64
    op: I64
    energy: F64
    has_energy: B
    pinned: npt.NDArray[np.int8]
    probation: I64
    node: I64
    merged: I64


def read_rows(batches: Iterable[pa.RecordBatch], config: LedgerConfig) -> Rows:
    """Rows from replay batches (retractions applied), ready for the replay driver."""
    batch_list = list(batches)
    if not batch_list:
        return _empty_rows()
    table = _drop_retracted(pa.Table.from_batches(batch_list).combine_chunks())
    kind = np.asarray(pc.index_in(table["kind"], pa.array(KINDS)).fill_null(-1), np.int8)
    if (kind < 0).any():  # kinds the ledger does not read (the replay was not filtered)
        table = table.filter(pa.array(kind >= 0))
        kind = kind[kind >= 0]
    n = table.num_rows
    if n == 0:
        return _empty_rows()
    columns = {name: _array(table, name) for name in COLUMNS if name in table.column_names}
    flat_dec = pc.list_flatten(columns["decided_by"])
    flat_sup = pc.list_flatten(columns["supported_by"])
    singles = ("gene", "entry", "node", "merged")
    parts = [flat_dec, flat_sup, *(columns[name] for name in singles)]
    encoded = pc.dictionary_encode(pa.concat_arrays([p.cast(pa.string()) for p in parts]))
    ords = np.asarray(encoded.indices.fill_null(-1), np.int64)
    ids: list[str] = encoded.dictionary.to_pylist()
    if "" in ids:
        ords[ords == ids.index("")] = -1
    bounds = np.cumsum([0, len(flat_dec), len(flat_sup)] + [n] * len(singles))
    pieces = [ords[bounds[i] : bounds[i + 1]] for i in range(len(parts))]
    dec = _ragged(columns["decided_by"], pieces[0], n)
    sup = _ragged(columns["supported_by"], pieces[1], n)
    gene, entry, node, merged = pieces[2:]
    own_empty = (dec.lengths() == 0) & (sup.lengths() == 0)
    decisive = (kind == ATTEMPT) | (kind == OUTCOME)
    if config.gene_decides:
        dec = _insert_gene(dec, own_empty & decisive & (gene >= 0), gene)
    key, keys = _keys(columns, kind)
    delta_col = columns["delta"]
    energy_col = columns["energy"]
    pinned_col = columns["pinned"]
    return Rows(
        n=n,
        kind=kind,
        seq=np.asarray(columns["seq"], np.int64),
        ts=np.asarray(columns["ts"].cast(pa.int64()), np.int64),
        ids=ids,
        dec=dec,
        sup=sup,
        own_empty=own_empty,
        key=key,
        keys=keys,
        delta=np.asarray(delta_col.fill_null(0.0), np.float64),
        has_delta=np.asarray(delta_col.is_valid(), bool),
        ticks=np.asarray(columns["ticks"].fill_null(0), np.int64),
        entry=entry,
        op=np.asarray(pc.index_in(columns["op"], pa.array(OPS)).fill_null(-1), np.int64),
        energy=np.asarray(energy_col.fill_null(0.0), np.float64),
        has_energy=np.asarray(energy_col.is_valid(), bool),
        pinned=np.asarray(pinned_col.cast(pa.int8()).fill_null(-1), np.int8),
        probation=np.asarray(columns["probation"].fill_null(-1), np.int64),
        node=node,
        merged=merged,
    )


def _array(table: pa.Table, name: str) -> Any:
    column = table[name]
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def _drop_retracted(table: pa.Table) -> pa.Table:
    """Drop retraction rows and every event they retract (by id, or by dream cycle)."""
    is_retraction = pc.equal(table["kind"], "retraction")
    if not pc.any(is_retraction).as_py():
        return table
    retractions = table.filter(is_retraction)
    targets = pc.list_flatten(retractions["targets"])
    cycles = pc.drop_null(retractions["target_cycle"])
    keep = pc.and_(pc.invert(is_retraction), pc.invert(pc.is_in(table["id"], targets)))
    keep = pc.and_(keep, pc.invert(pc.fill_null(pc.is_in(table["cycle"], cycles), False)))
    return table.filter(keep)


def _ragged(column: Any, ords: I64, n: int) -> Ragged:
    lengths = np.asarray(pc.list_value_length(column).fill_null(0), np.int64)
    keep = ords >= 0
    if not keep.all():
        rows = np.repeat(np.arange(n), lengths)
        lengths = np.bincount(rows[keep], minlength=n).astype(np.int64)
        ords = ords[keep]
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return Ragged(offsets, ords)


def _insert_gene(dec: Ragged, rows: B, gene: I64) -> Ragged:
    """Make the gene the sole decider of rows that name no entries."""
    if not rows.any():
        return dec
    lengths = dec.lengths() + rows
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    values = np.empty(int(offsets[-1]), np.int64)
    owner = np.repeat(np.arange(len(lengths)), dec.lengths())
    position = offsets[owner] + (np.arange(len(dec.values)) - dec.offsets[owner])
    values[position] = dec.values
    values[offsets[:-1][rows]] = gene[rows]
    return Ragged(offsets, values)


def _keys(columns: dict[str, Any], kind: npt.NDArray[np.int8]) -> tuple[I64, pa.Array]:
    """Action keys: an attempt's action id (its event id if empty); an outcome's action id."""
    action = columns["action_id"].fill_null("")
    attempt = pa.array(kind == ATTEMPT)
    key = pc.if_else(pc.and_(attempt, pc.equal(action, "")), columns["id"], action)
    decisive = pa.array((kind == ATTEMPT) | (kind == OUTCOME))
    key = pc.if_else(pc.and_(decisive, pc.not_equal(key, "")), key, pa.scalar(None, pa.string()))
    encoded = pc.dictionary_encode(key)
    return np.asarray(encoded.indices.fill_null(-1), np.int64), encoded.dictionary


def _empty_rows() -> Rows:
    e64 = np.zeros(0, np.int64)
    ef = np.zeros(0, np.float64)
    eb = np.zeros(0, bool)
    empty = Ragged(np.zeros(1, np.int64), e64)
    return Rows(
        n=0, kind=np.zeros(0, np.int8), seq=e64, ts=e64, ids=[], dec=empty, sup=empty,
        own_empty=eb, key=e64, keys=pa.array([], pa.string()), delta=ef, has_delta=eb,
        ticks=e64, entry=e64, op=e64, energy=ef, has_energy=eb,
        pinned=np.zeros(0, np.int8), probation=e64, node=e64, merged=e64,
    )  # fmt: skip
