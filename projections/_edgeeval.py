"""Edge and gene values from the state, at a given ``now``, in either decay mode.

``newest`` (evolver's aggregate semantics, §5.1-5.3 of the evolver spec)::

    p      = (success + 1) / (success + fail + 2)
    weight = 1 if now <= newest_ts else 0.5 ** (age_days / half_life_days)
    value  = p * weight            # stale evidence decays toward 0, i.e. toward "failure"

``per_event`` (ours: stale evidence shrinks toward the prior instead)::

    N         = max(now, newest_ts)          # no outcome weighs more than 1
    success_w = Σ_success 0.5 ** ((N - ts_i) / half_life)
    fail_w    = Σ_failed  0.5 ** ((N - ts_i) / half_life)
    p = value = (success_w + 1) / (success_w + fail_w + 2)

so a gene that always succeeded long ago tends back to 0.5 ("unknown"), never below it, and
``success_w + fail_w`` is the evidence still in force. ``success_w``/``fail_w`` in ``newest``
mode are ``success * weight`` and ``fail * weight``.

The per-event sums come from the integer buckets of :mod:`projections._edgestate` (width
``W = 8h``, newest bucket of the edge ``E``): ``Σ_b (M_b >> 8(E - b))``, an integer sum
that no evaluation order can change, scaled once per edge by
``2^(-52 - 8(N//W - E) - (N mod W)/h)``; that is O(buckets) <= O(9) per edge at query time.

Columns (edges; gene priors have ``gene`` in place of ``signal_key, gene``): signal_key,
gene, success, fail, other, attempts (= success + fail, evolver's ``total``), outcomes,
first_ts, newest_ts, age_days (of the newest outcome, >= 0), weight, success_w, fail_w, p,
value. Rows are sorted by key then gene.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import duckdb
import pyarrow as pa

from ._edgestate import DAY_US, HALF_LIVES_PER_BUCKET, MAX_BUCKET_LAG, HalfLives
from ._errors import InvalidParameterError
from ._source import engine_errors

DecayMode = Literal["newest", "per_event"]
MODES: tuple[DecayMode, ...] = ("newest", "per_event")


@dataclass(frozen=True, slots=True)
class EdgeParams:
    """How edge and gene values are computed (none of it changes the stored state)."""

    half_life_days: float = 30.0
    gene_half_life_days: float = 45.0
    mode: DecayMode = "newest"

    def __post_init__(self) -> None:
        for name in ("half_life_days", "gene_half_life_days"):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or round(value * DAY_US) < 1
            ):
                raise InvalidParameterError(
                    f"{name}: expected a positive, finite number of days; got {value!r}"
                )
        if self.mode not in MODES:
            raise InvalidParameterError(
                f"mode: expected one of {', '.join(MODES)}; got {self.mode!r}"
            )

    @property
    def half_lives(self) -> HalfLives:
        """The bucket widths the per-event state needs for these parameters."""
        return HalfLives(
            round(self.half_life_days * DAY_US), round(self.gene_half_life_days * DAY_US)
        )


_EVAL = """
WITH t AS (
    SELECT *, greatest({now}, newest_t) AS ne FROM {totals} WHERE {where}
){w_cte}, v AS (
    SELECT t.*, {q_cols},
        CASE WHEN {now} <= newest_t THEN 1.0
             ELSE pow(0.5, (({now} - newest_t) / {day}.0) / {hl_days}) END AS weight
    FROM t {w_join}
), m AS (
    SELECT *, {success_w} AS success_w, {fail_w} AS fail_w FROM v
)
SELECT {out_keys}, success, fail, outcomes - success - fail AS other,
    success + fail AS attempts, outcomes,
    make_timestamptz(first_t) AS first_ts, make_timestamptz(newest_t) AS newest_ts,
    greatest({now} - newest_t, 0) / {day}.0 AS age_days,
    weight, success_w, fail_w, {p} AS p, {value} AS value
FROM m ORDER BY {order}
"""

# Per-event sums: shift each bucket's integer sum to the edge's newest bucket E and add as
# integers (exact in any order), then scale once by 2^(-52 - 8(N//W - E) - (N mod W)/h).
_W_CTE = """, w AS (
    SELECT {keys_t},
        sum(x.ms >> ({per} * (t.newest_t // {w} - x.b))) AS qs,
        sum(x.mf >> ({per} * (t.newest_t // {w} - x.b))) AS qf
    FROM t JOIN {buckets} x ON {join} AND x.b >= t.newest_t // {w} - {lag}
    GROUP BY ALL
)"""

_SCALE = "pow(2.0, -52.0 - {per} * (ne // {w} - newest_t // {w}) - (ne % {w}) / {h}.0)"

_MODE_SQL = {
    "newest": {
        "success_w": "success * weight",
        "fail_w": "fail * weight",
        "p": "(success + 1.0) / (success + fail + 2.0)",
        "value": "(success + 1.0) / (success + fail + 2.0) * weight",
    },
    "per_event": {
        "success_w": "coalesce(CAST(qs AS DOUBLE), 0.0) * " + _SCALE,
        "fail_w": "coalesce(CAST(qf AS DOUBLE), 0.0) * " + _SCALE,
        "p": "(success_w + 1.0) / (success_w + fail_w + 2.0)",
        "value": "(success_w + 1.0) / (success_w + fail_w + 2.0)",
    },
}

_GENE_TOTALS = """(SELECT gene, sum(success)::BIGINT AS success, sum(fail)::BIGINT AS fail,
    sum(outcomes)::BIGINT AS outcomes, min(first_t) AS first_t, max(newest_t) AS newest_t
    FROM edge_totals GROUP BY gene)"""
_EDGES = {
    "totals": "edge_totals",
    "buckets": "edge_buckets",
    "keys": "key, gene",
    "keys_t": "t.key, t.gene",
    "join": "x.key = t.key AND x.gene = t.gene",
    "out_keys": "key AS signal_key, gene",
    "order": "signal_key, gene",
}
_GENES = {
    "totals": _GENE_TOTALS,
    "buckets": "gene_buckets",
    "keys": "gene",
    "keys_t": "t.gene",
    "join": "x.gene = t.gene",
    "out_keys": "gene",
    "order": "gene",
}


def evaluate(
    con: duckdb.DuckDBPyConnection,
    params: EdgeParams,
    now: int,
    *,
    genes_only: bool = False,
    keys: Sequence[str] | None = None,
    genes: Sequence[str] | None = None,
) -> pa.Table:
    """Edge stats (or gene priors with ``genes_only``) from the state tables of ``con``."""
    where: list[str] = ["true"]
    args: list[list[str]] = []
    if keys is not None and not genes_only:
        where.append(f"list_contains(${len(args) + 1}, key)")
        args.append(list(keys))
    if genes is not None:
        where.append(f"list_contains(${len(args) + 1}, gene)")
        args.append(list(genes))
    hl = params.half_lives
    names = _GENES if genes_only else _EDGES
    h = hl.gene_us if genes_only else hl.edge_us
    hl_days = params.gene_half_life_days if genes_only else params.half_life_days
    if params.mode == "per_event":
        w_cte, q_cols = _W_CTE, "w.qs, w.qf"
        w_join = f"LEFT JOIN w USING ({names['keys']})"
    else:
        w_cte, q_cols, w_join = "", "NULL AS qs, NULL AS qf", ""
    sizes = {
        "h": h,
        "w": h * HALF_LIVES_PER_BUCKET,
        "per": HALF_LIVES_PER_BUCKET,
        "lag": MAX_BUCKET_LAG,
    }
    mode = {k: v.format(**sizes) for k, v in _MODE_SQL[params.mode].items()}
    sql = _EVAL.format(
        w_cte=w_cte.format(**sizes, **names),
        q_cols=q_cols,
        w_join=w_join,
        now=int(now),
        where=" AND ".join(where),
        hl_days=repr(float(hl_days)),
        day=DAY_US,
        **names,
        **mode,
    )
    with engine_errors("evaluating edges"):
        return con.sql(sql, params=args or None).to_arrow_table()
