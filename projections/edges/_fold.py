"""Stage 2 of a rebuild in numpy: the stage-1 groups folded into one row per edge (or gene).

A rebuild's stage 1 (:func:`evolog.projections.edges._state.part_table`) leaves one group per edge,
status class and bucket: 1e4-1e5 rows whatever the size of the log. Folding them in DuckDB
took three grouped operators, two joins and a sort on two strings, 15-25 ms, half as much
as the scan itself; here it is two dictionary encodings, one integer sort and a few
segment reductions, 2-4 ms.

Everything here is integer arithmetic, exact, so the result cannot depend on the order of
the groups: the totals of ``edge_totals`` and the per-event sums ``qs``/``qf`` =
``Σ_b (S_b >> 8(E - b))`` over the buckets ``b >= E - MAX_BUCKET_LAG`` (``S_b``: the
bucket's 128-bit mantissa sum, ``E``: the edge's newest bucket), as the checkpoint path
computes them in SQL (:mod:`evolog.projections.edges._eval`); the sums are handed over as doubles
made the same way in both paths (:func:`evolog.projections.edges._eval.hugeint_double`). The
floating-point formulas
(:mod:`evolog.projections.edges._math`) are shared by both paths.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ._state import HALF_LIVES_PER_BUCKET, MAX_BUCKET_LAG

Array = Any  # a numpy array (numpy's generic types add nothing but noise here)
_U64 = np.uint64
_M32 = np.uint64(0xFFFFFFFF)
_32 = np.uint64(32)
_TWO_64 = float(1 << 64)
_INTS = ("success", "fail", "outcomes", "first_t", "newest_t")


def fold(part: pa.Table, keys: Sequence[str], bucket: tuple[str, str] | None) -> pa.Table:
    """One row per distinct ``keys`` of ``part``, sorted by them (as strings, bytewise).

    ``part`` holds stage-1 groups: ``keys``, ``cls`` (0 success, 1 failed, 2 other), ``n``,
    ``t0``, ``t1`` and, with ``bucket = (b, m)``, the bucket number and its mantissa sum.
    The result has ``keys``, success, fail, outcomes, first_t, newest_t and, with a
    bucket, qs and qf.
    """
    if part.num_rows == 0:
        return _empty(keys, bucket is not None)
    part = part.select([*keys, "cls", "n", "t0", "t1", *(bucket or ())]).combine_chunks()
    code, dicts = _codes(part, keys)
    rows = _Rows(code, _np(part, "cls"), _np(part, bucket[0]) if bucket else None)
    cols = _names(rows.code[rows.starts], keys, dicts)
    count = rows.per_class(rows.take(_np(part, "n"))).astype(np.int64)
    cols["success"], cols["fail"] = count[:, 0], count[:, 1]
    cols["outcomes"] = count[:, 0] + count[:, 1] + count[:, 2]
    cols["first_t"] = np.minimum.reduceat(rows.take(_np(part, "t0")), rows.starts)
    cols["newest_t"] = np.maximum.reduceat(rows.take(_np(part, "t1")), rows.starts)
    if bucket:
        lo, hi = _limbs(_column(part, bucket[1]), rows.order)
        cols["qs"], cols["qf"] = _decayed_sums(rows, lo, hi)
    return pa.table(cols)


class _Rows:
    """The rows sorted by (code, class, bucket), and where the runs begin in that order.

    Written to allocate few arrays: each temporary of 1e4-1e5 rows is fresh memory from
    the kernel (above malloc's mmap threshold), and its page faults cost more than the
    arithmetic. ``code`` is consumed.
    """

    def __init__(self, code: Array, cls: Array, b: Array | None) -> None:
        low, span = (int(b.min()), int(b.max() - b.min()) + 1) if b is not None else (0, 1)
        key = code
        key *= 3
        key += cls
        if b is not None:
            key *= span
            key += b
            key -= low
        self.order = _argsort(key)
        self.code = key // (3 * span)
        self.cls = key // span
        self.cls %= 3
        self.b = key % span
        self.b += low
        self.starts = _starts(self.code)  # of each group
        self.runs = _starts(key)  # of each (group, class, bucket)
        self.group = np.cumsum(_boundaries(self.code)) - 1
        self.slot = self.group * 3  # of each row in a (groups, 3) array
        self.slot += self.cls

    def take(self, values: Array) -> Array:
        return values[self.order]

    def per_class(self, values: Array) -> Array:
        """Sums of ``values`` per (group, class) as a (groups, 3) array of doubles; exact
        while each sum stays below 2^53 (these are counts of events)."""
        sums = np.bincount(self.slot, weights=values, minlength=3 * len(self.starts))
        return sums.reshape(-1, 3)


def _argsort(key: Array) -> Array:
    """Sort ``key`` in place and return the order that sorts it. Sorting ``key * n + i``
    and splitting it again is three times faster than an argsort, when it fits 63 bits."""
    n = len(key)
    if key.min() >= 0 and (int(key.max()) + 1) * n < 1 << 63:
        key *= n
        key += np.arange(n)
        key.sort()
        order = key % n
        key //= n
        return order
    order = np.argsort(key, kind="stable")  # pragma: no cover - ~1e13 buckets in the log
    key[:] = key[order]
    return order


def _empty(keys: Sequence[str], buckets: bool) -> pa.Table:
    fields = [pa.field(k, pa.string()) for k in keys]
    fields += [pa.field(c, pa.int64()) for c in _INTS]
    if buckets:
        fields += [pa.field("qs", pa.float64()), pa.field("qf", pa.float64())]
    return pa.schema(fields).empty_table()


def _column(part: pa.Table, name: str) -> pa.Array:
    column = part.column(name)
    return column.chunk(0) if column.num_chunks else pa.array([], column.type)


def _np(part: pa.Table, name: str) -> Array:
    return _column(part, name).to_numpy().astype(np.int64, copy=False)


def _boundaries(sorted_ids: Array) -> Array:
    """True where a run of equal values begins in a sorted array."""
    out = np.empty(len(sorted_ids), dtype=bool)
    out[0] = True
    np.not_equal(sorted_ids[1:], sorted_ids[:-1], out=out[1:])
    return out


def _starts(sorted_ids: Array) -> Array:
    """Where each run of equal values begins in a sorted array."""
    return np.flatnonzero(_boundaries(sorted_ids))


def _codes(part: pa.Table, keys: Sequence[str]) -> tuple[Array, list[pa.Array]]:
    """Per row, a number whose order is the string order of ``keys``; the sorted values."""
    code, dicts = np.zeros(part.num_rows, dtype=np.int64), []
    for key in keys:
        enc = pc.dictionary_encode(_column(part, key))
        by_string = pc.sort_indices(enc.dictionary)
        rank = np.empty(len(by_string), dtype=np.int64)
        rank[by_string.to_numpy()] = np.arange(len(by_string))
        code = code * len(by_string) + rank[enc.indices.to_numpy()]
        dicts.append(enc.dictionary.take(by_string))
    return code, dicts


def _names(codes: Array, keys: Sequence[str], dicts: Sequence[pa.Array]) -> dict[str, Any]:
    """The ``keys`` columns of the groups whose codes are ``codes``."""
    names: dict[str, Any] = {}
    for key, values in reversed(list(zip(keys, dicts, strict=True))):
        names[key] = values.take(pa.array(codes % len(values)))
        codes = codes // len(values)
    return {k: names[k] for k in keys}


def _limbs(values: pa.Array, order: Array) -> tuple[Array, Array]:
    """The low and high 64 bits of non-negative 128-bit integers, in ``order``."""
    words = np.frombuffer(values.buffers()[1], dtype="<u8").reshape(-1, 2)
    words = words[values.offset : values.offset + len(values)]
    lo, hi = words[:, 0][order], words[:, 1][order]  # two 1-d gathers: 10x one 2-d gather
    if values.null_count:  # pragma: no cover - every stage-1 group has a sum
        null = ~values.is_valid().to_numpy(zero_copy_only=False)[order]
        lo[null], hi[null] = 0, 0
    return lo, hi


def _sum128(lo: Array, hi: Array, starts: Array) -> tuple[Array, Array]:
    """Exact 128-bit sums of the runs beginning at ``starts`` (runs shorter than 2^32).

    The 32-bit quarters are summed as strided views, without copies: numpy temporaries of
    this size are fresh pages from the kernel each time, which costs more than the sums.
    """
    q = [
        np.add.reduceat(x.view(np.uint32)[i::2], starts, dtype=_U64)
        for x in (lo, hi)
        for i in (0, 1)
    ]
    mid = q[1] + (q[0] >> _32)
    top = q[2] + (mid >> _32)
    out_lo = (q[0] & _M32) | ((mid & _M32) << _32)
    return out_lo, (top & _M32) | ((q[3] + (top >> _32)) << _32)


def _decayed_sums(rows: _Rows, lo: Array, hi: Array) -> tuple[pa.Array, pa.Array]:
    """Per group: ``Σ_b (S_b >> 8(E - b))`` of its successes and of its failures.

    ``E`` is the group's newest bucket, of any status: the SQL path's ``newest_t // W``, as
    // is monotonic. Buckets more than MAX_BUCKET_LAG behind it weigh nothing.
    """
    lag = np.maximum.reduceat(rows.b, rows.starts)[rows.group]
    lag -= rows.b
    runs, slot = rows.runs, rows.slot
    if len(runs) < len(lag):
        # A bucket spans several stage-1 groups (both bucket sets were built, or keys were
        # resolved from attempts): sum it before shifting it.
        lo, hi = _sum128(lo, hi, runs)
        lag, slot = lag[runs], slot[runs]
    live = np.flatnonzero((lag <= MAX_BUCKET_LAG) & (rows.cls[runs] < 2))
    if len(live) < len(lag):
        lo, hi, lag, slot = lo[live], hi[live], lag[live], slot[live]
    out = [np.zeros(3 * len(rows.starts), _U64) for _ in range(2)]
    if len(lag):
        lag *= HALF_LIVES_PER_BUCKET
        _shift_right(lo, hi, lag.view(_U64))
        # Runs of equal slot are the buckets of one (group, class), at most 9 of them.
        first = _starts(slot)
        out[0][slot[first]], out[1][slot[first]] = _sum128(lo, hi, first)
    q_lo, q_hi = out[0].reshape(-1, 3), out[1].reshape(-1, 3)
    return _as_double(q_lo[:, 0], q_hi[:, 0]), _as_double(q_lo[:, 1], q_hi[:, 1])


def _shift_right(lo: Array, hi: Array, shift: Array) -> None:
    """``(hi·2^64 + lo) >>= shift`` in place, for shifts in 0..64 (numpy shifts by 64 or
    more give 0, so a shift of 0 must not carry ``hi << 64``)."""
    carried = np.subtract(np.uint64(64), shift)
    np.left_shift(hi, carried, out=carried)
    carried[shift == 0] = 0
    lo >>= shift
    lo |= carried
    hi >>= shift


def _as_double(lo: Array, hi: Array) -> pa.Array:
    """128-bit integers as doubles: ``double(lower) + double(upper) * 2^64``.

    Not always the nearest double, but exactly what the checkpoint path's SQL computes
    (:func:`evolog.projections.edges._eval.hugeint_double`), whichever DuckDB release runs it.
    """
    return pa.array(lo.astype(np.float64) + hi.astype(np.float64) * _TWO_64)


def keep_only(sums: pa.Table, filters: dict[str, Sequence[str]]) -> pa.Table:
    """The rows whose column holds one of the given values, for every column in ``filters``."""
    mask = None
    for column, values in filters.items():
        hit = pc.is_in(sums.column(column), value_set=pa.array(list(values), pa.string()))
        mask = hit if mask is None else pc.and_(mask, hit)
    return sums if mask is None else sums.filter(mask)
