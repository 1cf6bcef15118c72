"""The decay formulas of :mod:`evolog.projections.edges._eval`, from exact per-edge sums, in numpy.

These were SQL until evaluating 1e4 edges took DuckDB 6-9 ms, a fifth of a full rebuild at
1e6 events; numpy takes 1-2 ms. The doubles are those the SQL gave, bit for bit, because
every step is the same IEEE operation on the same operands, in the same order:

* integer steps are exact, with SQL's truncating ``//`` and ``%`` (numpy's floor);
* ``BIGINT / DECIMAL`` and ``DECIMAL + DECIMAL`` are computed by DuckDB as doubles of the
  exact values, which is what converting the exact integers gives;
* ``pow`` is the C library's, which DuckDB calls (numpy's, when it is the same: see
  :func:`_numpy_pow_is_libm`);
* ``qs``/``qf`` arrive as DuckDB casts a HUGEINT to DOUBLE (see :mod:`projections.edges._fold`).

``tests/projections/test_edge_formulas.py`` keeps the SQL as an oracle for random and extreme
inputs.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from ._state import DAY_US, HALF_LIVES_PER_BUCKET

Array = Any  # a numpy array
_TIMESTAMP: list[pa.DataType] = []  # what DuckDB gives a TIMESTAMPTZ, learnt once


def finish(
    sums: pa.Table, con: duckdb.DuckDBPyConnection, now: int, h: int | None, hl_days: float
) -> pa.Table:
    """Edge stats from per-edge sums (``per_event`` decay with half-life ``h`` µs, else
    ``newest``), in the row order of ``sums``. Columns: see :mod:`projections.edges._eval`."""
    success, fail = _ints(sums, "success"), _ints(sums, "fail")
    outcomes, newest = _ints(sums, "outcomes"), _ints(sums, "newest_t")
    weight = np.ones(len(newest))
    stale = np.flatnonzero(now > newest)
    # ((now - newest_t) / 86400000000.0) / hl_days
    weight[stale] = _pow(0.5, ((now - newest[stale]) / float(DAY_US)) / float(hl_days))
    if h is None:
        success_w, fail_w = success * weight, fail * weight
        p = (success + 1).astype(np.float64) / (success + fail + 2).astype(np.float64)
        value = p * weight
    else:
        scale = _scale(newest, now, h)
        success_w, fail_w = _floats(sums, "qs") * scale, _floats(sums, "qf") * scale
        p = value = (success_w + 1.0) / (success_w + fail_w + 2.0)
    ts = _timestamp_type(con)
    cols: dict[str, Any] = {}
    if "key" in sums.column_names:
        cols["signal_key"] = sums.column("key")
    cols["gene"] = sums.column("gene")
    cols.update(
        success=success,
        fail=fail,
        other=outcomes - success - fail,
        attempts=success + fail,
        outcomes=outcomes,
        first_ts=pa.array(_ints(sums, "first_t"), ts),
        newest_ts=pa.array(newest, ts),
        age_days=np.maximum(now - newest, 0) / float(DAY_US),
        weight=weight,
        success_w=success_w,
        fail_w=fail_w,
        p=p,
        value=value,
    )
    return pa.table(cols)


def _scale(newest: Array, now: int, h: int) -> Array:
    """``pow(2.0, -52.0 - 8 * (ne // W - newest_t // W) - (ne % W) / h)``, ne = max(now, t)."""
    w = h * HALF_LIVES_PER_BUCKET
    ne = np.maximum(now, newest)
    shift = _tdiv(ne, w) - _tdiv(newest, w)
    exponent = (-52 - HALF_LIVES_PER_BUCKET * shift).astype(np.float64)
    # Every edge whose newest outcome is older than now has ne = now: a handful of values.
    return _pow_few(2.0, exponent - np.fmod(ne, w).astype(np.float64) / float(h))


def _tdiv(a: Array, b: int) -> Array:
    """Integer division truncated toward zero, as SQL's ``//`` (numpy's floors)."""
    return (a - np.fmod(a, b)) // b


def _pow(base: float, exponents: Array) -> Array:
    """``pow(base, e)`` of the C library for each exponent (what DuckDB's pow calls)."""
    if _numpy_pow_is_libm():
        return np.power(base, exponents)
    out = [math.pow(base, e) for e in exponents.tolist()]
    return np.array(out, dtype=np.float64)


@functools.cache
def _numpy_pow_is_libm() -> bool:
    """Whether numpy's pow gives the C library's results (6x faster than a loop).

    Numpy calls the C library's pow unless it was built with SIMD routines of its own for
    the CPU (AVX-512); those differ from it in the last bit for some inputs, which 4096
    exponents spanning the ranges used here would show.
    """
    rng = np.random.default_rng(20261122)
    for base, exponents in ((0.5, rng.uniform(0, 4096, 4096)), (2.0, rng.uniform(-120, -52, 4096))):
        loop = np.array([math.pow(base, e) for e in exponents.tolist()])
        if not np.array_equal(np.power(base, exponents), loop):
            return False
    return True


def _pow_few(base: float, exponents: Array) -> Array:
    """:func:`_pow` for exponents that take few distinct values (one per edge is rare)."""
    if _numpy_pow_is_libm():
        return np.power(base, exponents)
    distinct, index = np.unique(exponents, return_inverse=True)
    return _pow(base, distinct)[index]


def _ints(sums: pa.Table, name: str) -> Array:
    return sums.column(name).to_numpy().astype(np.int64, copy=False)


def _floats(sums: pa.Table, name: str) -> Array:
    return sums.column(name).to_numpy().astype(np.float64, copy=False)


def _timestamp_type(con: duckdb.DuckDBPyConnection) -> pa.DataType:
    """The Arrow type DuckDB gives a ``make_timestamptz`` (its time zone's spelling)."""
    if not _TIMESTAMP:
        sql = "SELECT make_timestamptz(0::BIGINT) AS t"
        _TIMESTAMP.append(con.sql(sql).to_arrow_table().schema.field(0).type)
    return _TIMESTAMP[0]
