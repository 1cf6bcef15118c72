"""The decay formulas in numpy give the doubles the SQL formulas gave, bit for bit.

The oracle is the SQL that evaluated edges before (kept here): random and extreme sums,
half-lives and times go through both, and the Arrow tables must be equal.
"""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest
from evolog.projections._source import cursor
from evolog.projections.edges._eval import hugeint_double
from evolog.projections.edges._fold import _as_double
from evolog.projections.edges._math import finish
from evolog.projections.edges._state import DAY_US

_ORACLE = """
WITH t AS (SELECT *, greatest({now}, newest_t) AS ne FROM {name}), v AS (
    SELECT t.*,
        CASE WHEN {now} <= newest_t THEN 1.0
             ELSE pow(0.5, (({now} - newest_t) / {day}.0) / {hl_days}) END AS weight
    FROM t
), m AS (SELECT *, {success_w} AS success_w, {fail_w} AS fail_w FROM v)
SELECT key AS signal_key, gene, success, fail, outcomes - success - fail AS other,
    success + fail AS attempts, outcomes,
    make_timestamptz(first_t) AS first_ts, make_timestamptz(newest_t) AS newest_ts,
    greatest({now} - newest_t, 0) / {day}.0 AS age_days,
    weight, success_w, fail_w, {p} AS p, {value} AS value
FROM m
"""
_SCALE = "pow(2.0, -52.0 - 8 * (ne // {w} - newest_t // {w}) - (ne % {w}) / {h}.0)"
_MODES = {
    "newest": {
        "success_w": "success * weight",
        "fail_w": "fail * weight",
        "p": "(success + 1.0) / (success + fail + 2.0)",
        "value": "(success + 1.0) / (success + fail + 2.0) * weight",
    },
    "per_event": {
        "success_w": f"coalesce({hugeint_double('CAST(qs AS HUGEINT)')}, 0.0) * " + _SCALE,
        "fail_w": f"coalesce({hugeint_double('CAST(qf AS HUGEINT)')}, 0.0) * " + _SCALE,
        "p": "(success_w + 1.0) / (success_w + fail_w + 2.0)",
        "value": "(success_w + 1.0) / (success_w + fail_w + 2.0)",
    },
}


def _sums(rng: random.Random, n: int, now: int) -> tuple[pa.Table, list[int], list[int]]:
    newest = [
        now + rng.choice([-1, 1]) * rng.randrange(0, 10 ** rng.randrange(1, 14)) for _ in range(n)
    ]
    qs = [rng.getrandbits(rng.choice([0, 20, 52, 60, 64, 70, 90])) for _ in range(n)]
    qf = [rng.getrandbits(rng.choice([0, 20, 52, 60, 64, 70, 90])) for _ in range(n)]
    success = [rng.randrange(0, 10**6) for _ in range(n)]
    fail = [rng.randrange(0, 10**6) for _ in range(n)]
    table = pa.table(
        {
            "key": [f"k{i:05d}" for i in range(n)],
            "gene": [f"g{i % 7}" for i in range(n)],
            "success": pa.array(success, pa.int64()),
            "fail": pa.array(fail, pa.int64()),
            "outcomes": pa.array(
                [s + f + rng.randrange(0, 3) for s, f in zip(success, fail, strict=True)]
            ),
            "first_t": pa.array([t - rng.randrange(0, 10**12) for t in newest], pa.int64()),
            "newest_t": pa.array(newest, pa.int64()),
        }
    )
    return table, qs, qf


def _limbs(values: list[int]) -> tuple[np.ndarray, np.ndarray]:
    lo = np.array([v & (2**64 - 1) for v in values], dtype=np.uint64)
    return lo, np.array([v >> 64 for v in values], dtype=np.uint64)


@pytest.mark.parametrize("mode", ["newest", "per_event"])
@pytest.mark.parametrize("hl_days", [30.0, 45.0, 0.01, 0.1 + 0.2, 1 / 3, 1e-5, 123456.789])
def test_numpy_formulas_equal_the_sql_ones(mode: str, hl_days: float) -> None:
    rng = random.Random(f"{mode}{hl_days}")
    now = 1_767_225_600_000_000 + rng.randrange(-(10**13), 10**13)
    table, qs, qf = _sums(rng, 3000, now)
    h = round(hl_days * DAY_US)
    decimal = pa.decimal128(38, 0)
    exact = table.append_column("qs", pa.array(qs, decimal)).append_column(
        "qf", pa.array(qf, decimal)
    )
    doubles = table.append_column("qs", _as_double(*_limbs(qs))).append_column(
        "qf", _as_double(*_limbs(qf))
    )
    sql = {k: v.format(w=8 * h, h=h) for k, v in _MODES[mode].items()}
    with cursor() as con:
        con.register("sums", exact)
        oracle = con.sql(
            _ORACLE.format(name="sums", now=now, day=DAY_US, hl_days=repr(hl_days), **sql)
        ).to_arrow_table()
        ours = finish(doubles, con, now, h if mode == "per_event" else None, hl_days)
    assert ours.equals(oracle)


def test_hugeint_to_double_is_the_sqls() -> None:
    rng = random.Random(7)
    values = [
        rng.getrandbits(rng.choice([1, 53, 54, 63, 64, 65, 80, 100, 126])) for _ in range(5000)
    ]
    values += [2**64 - 1, 2**64, 2**64 + 1, 2**53 + 1, (2**53 + 1) << 64]
    with cursor() as con:
        con.register("v", pa.table({"v": pa.array(values, pa.decimal128(38, 0))}))
        sql = f"SELECT {hugeint_double('CAST(v AS HUGEINT)')} AS d FROM v"
        duck = con.sql(sql).to_arrow_table()
    assert _as_double(*_limbs(values)).equals(duck.column("d").combine_chunks())


def test_pow_without_numpy_is_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    import evolog.projections.edges._math as edgemath

    exponents = np.random.default_rng(3).uniform(-200, 50, 10_000)
    fast = edgemath._pow(0.5, exponents)
    monkeypatch.setattr(edgemath, "_numpy_pow_is_libm", lambda: False)
    assert np.array_equal(edgemath._pow(0.5, exponents), fast)
