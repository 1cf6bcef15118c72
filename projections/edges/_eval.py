"""Edge and gene values from the state, at a given ``now``, in either decay mode.

``newest`` (evolver's aggregate semantics, docs/reference/evolver-memory-graph.md §5)::

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

The per-event sums come from the integer buckets of :mod:`evolog.projections.edges._state` (width
``W = 8h``, newest bucket of the edge ``E``): ``Σ_b (M_b >> 8(E - b))``, an integer sum
that no evaluation order can change, scaled once per edge by
``2^(-52 - 8(N//W - E) - (N mod W)/h)``; that is O(buckets) <= O(9) per edge at query time.

Evaluation has two steps: the exact per-edge sums (integers), from the checkpoint's state
tables in SQL or from the groups of a rebuild in numpy (:mod:`evolog.projections.edges._fold`),
then the formulas above (:mod:`evolog.projections.edges._math`, shared by both).

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

from .._errors import InvalidParameterError
from .._source import arrow, engine_errors
from ._state import DAY_US, HALF_LIVES_PER_BUCKET, MAX_BUCKET_LAG, HalfLives

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


# Per-edge sums from the state tables of a checkpoint. Per-event sums: shift each bucket's
# integer sum to the edge's newest bucket E and add as integers (exact in any order); the
# scale 2^(-52 - 8(N//W - E) - (N mod W)/h) is applied by _edgemath.
_SUMS = """
WITH t AS (SELECT * FROM {totals} WHERE {where}){w_cte}
SELECT {keys_t}, success, fail, outcomes, first_t, newest_t{q_cols}
FROM t {w_join} ORDER BY {keys_t}
"""
_W_CTE = """, w AS (
    SELECT {keys_t},
        sum(x.ms >> ({per} * (t.newest_t // {w} - x.b))) AS qs,
        sum(x.mf >> ({per} * (t.newest_t // {w} - x.b))) AS qf
    FROM t JOIN {buckets} x ON {join} AND x.b >= t.newest_t // {w} - {lag}
    GROUP BY ALL
)"""


def hugeint_double(column: str) -> str:
    """SQL of a non-negative HUGEINT as ``double(low 64 bits) + double(high bits) * 2^64``.

    Not DuckDB's own cast: its rounding changed between releases (2.0.0 added the limbs
    like this, 2.0.1 rounds to nearest), and the numpy path (:mod:`evolog.projections.edges._fold`)
    must give the same doubles whichever DuckDB is installed.
    """
    return (
        f"(CAST({column} & CAST({(1 << 64) - 1} AS HUGEINT) AS UBIGINT)::DOUBLE"
        f" + CAST({column} >> 64 AS UBIGINT)::DOUBLE * {float(1 << 64)!r})"
    )


_Q_COLS = (
    f", coalesce({hugeint_double('w.qs')}, 0.0) AS qs"
    f", coalesce({hugeint_double('w.qf')}, 0.0) AS qf"
)

_GENE_TOTALS = """(SELECT gene, sum(success)::BIGINT AS success, sum(fail)::BIGINT AS fail,
    sum(outcomes)::BIGINT AS outcomes, min(first_t) AS first_t, max(newest_t) AS newest_t
    FROM edge_totals GROUP BY gene)"""


@dataclass(frozen=True, slots=True)
class _Shape:
    """What a row is keyed by (an edge, or a gene prior) and where its state lives."""

    group: tuple[str, ...]  # the key columns
    bucket: tuple[str, str]  # stage-1 columns of its per-event buckets: number, mantissas
    totals: str  # SQL of its totals in a checkpoint
    buckets: str  # the checkpoint's bucket table

    def sql(self, template: str, **values: object) -> str:
        keys_t = ", ".join(f"t.{k}" for k in self.group)
        join = " AND ".join(f"x.{k} = t.{k}" for k in self.group)
        return template.format(
            totals=self.totals, buckets=self.buckets, keys_t=keys_t, join=join, **values
        )


_EDGES = _Shape(("key", "gene"), ("be", "me"), "edge_totals", "edge_buckets")
_GENES = _Shape(("gene",), ("bg", "mg"), _GENE_TOTALS, "gene_buckets")


@dataclass(frozen=True, slots=True)
class EdgeState:
    """What an evaluation reads: the state tables of ``con`` (a checkpoint), or in a
    rebuild the stage-1 ``groups`` of :func:`evolog.projections.edges._state.part_table`."""

    con: duckdb.DuckDBPyConnection
    groups: pa.Table | None = None


def evaluate(
    state: EdgeState,
    params: EdgeParams,
    now: int,
    *,
    genes_only: bool = False,
    keys: Sequence[str] | None = None,
    genes: Sequence[str] | None = None,
) -> pa.Table:
    """Edge stats (or gene priors with ``genes_only``), sorted by key then gene."""
    from ._math import finish

    shape = _GENES if genes_only else _EDGES
    filters = {"key": keys, "gene": genes} if not genes_only else {"gene": genes}
    wanted = {column: values for column, values in filters.items() if values is not None}
    h = params.half_lives.gene_us if genes_only else params.half_lives.edge_us
    per_event = params.mode == "per_event"
    if state.groups is None:
        sums = _table_sums(state.con, shape, h, per_event, wanted)
    else:
        sums = _group_sums(state.groups, shape, per_event, wanted)
    hl_days = params.gene_half_life_days if genes_only else params.half_life_days
    return finish(sums, state.con, now, h if per_event else None, hl_days)


def _table_sums(
    con: duckdb.DuckDBPyConnection,
    shape: _Shape,
    h: int,
    per_event: bool,
    filters: dict[str, Sequence[str]],
) -> pa.Table:
    """The per-edge sums from the state tables of a checkpoint, in SQL."""
    where, args = ["true"], []
    for column, values in filters.items():
        args.append(list(values))
        where.append(f"list_contains(${len(args)}, {column})")
    sizes = {"w": h * HALF_LIVES_PER_BUCKET, "per": HALF_LIVES_PER_BUCKET, "lag": MAX_BUCKET_LAG}
    sql = shape.sql(
        _SUMS,
        where=" AND ".join(where),
        w_cte=shape.sql(_W_CTE, **sizes) if per_event else "",
        q_cols=_Q_COLS if per_event else "",
        w_join=f"LEFT JOIN w USING ({', '.join(shape.group)})" if per_event else "",
    )
    with engine_errors("evaluating edges"):
        return arrow(con, sql, args or None)


def _group_sums(
    groups: pa.Table, shape: _Shape, per_event: bool, filters: dict[str, Sequence[str]]
) -> pa.Table:
    """The per-edge sums of a rebuild, folded from its stage-1 groups in numpy."""
    from ._fold import fold, keep_only  # pyarrow.compute: imported only for rebuilds

    return keep_only(fold(groups, shape.group, shape.bucket if per_event else None), filters)
