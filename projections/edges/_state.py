"""Edge state: exact aggregates of outcome events, built in full or incrementally.

What an outcome counts for (decided here; advice folds the same rule, see the package
docstring):

* its signal key is ``outcome.key``; if empty, the key of its attempt; if that is empty too,
  ``"(none)"`` (evolver's name for "no key");
* its gene is ``outcome.gene``; if empty, the gene of its attempt; with no gene at all the
  outcome counts for nothing (evolver skips it);
* "its attempt" is the **newest attempt with the same action_id and a smaller seq**. That
  depends only on events before the outcome, so an outcome's edge never changes later,
  which is what lets a checkpoint apply each outcome once and still equal a rebuild;
* ``status == 'success'`` counts a success, ``'failed'`` a failure, anything else only an
  outcome (evolver: "any other status still creates the entry").

The state holds integers only, so the order in which events are added cannot change it:

* ``edge_totals``: per (key, gene) the counts and the first and newest ts (µs);
* ``edge_buckets`` / ``gene_buckets``: per-event decay sums. With half-life ``h`` and bucket
  width ``W = 8h``, bucket ``b = ts // W`` holds ``Σ M_i`` per status, where
  ``M_i = round(2^((ts_i mod W)/h) · 2^52)`` (an integer below 2^60), so that
  ``2^(ts_i/h) = M_i · 2^(8b - 52)`` to 53 bits. Sums of integers are exact (HUGEINT):
  incremental == rebuild, bit for bit, whatever the order. Evaluation ignores buckets more
  than :data:`MAX_BUCKET_LAG` buckets (64 half-lives) older than the newest bucket of their
  edge or gene (their weight is below 2^-56, and a bucket, once that old, stays so);
  checkpoints delete them every :data:`PRUNE_EVERY` seqs, which cannot change an answer.

Ingesting a delta takes two statements: one grouped scan of the new outcomes (stage 1,
``_part``), then one MERGE per state table (stage 2).
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import pyarrow as pa

from .._source import EventScan, arrow, engine_errors, registered

DAY_US = 86_400_000_000
HALF_LIVES_PER_BUCKET = 8  # M_i < 2^(52+8) fits a BIGINT; fewer, wider buckets scan faster
MAX_BUCKET_LAG = 64 // HALF_LIVES_PER_BUCKET
FIRST_WINDOW = 1 << 16  # seqs searched first, backwards, for an outcome's attempt

STATE_DDL = """
CREATE TABLE IF NOT EXISTS edge_totals (key VARCHAR, gene VARCHAR, success BIGINT,
    fail BIGINT, outcomes BIGINT, first_t BIGINT, newest_t BIGINT);
CREATE TABLE IF NOT EXISTS edge_buckets (key VARCHAR, gene VARCHAR, b BIGINT, ms HUGEINT,
    mf HUGEINT);
CREATE TABLE IF NOT EXISTS gene_buckets (gene VARCHAR, b BIGINT, ms HUGEINT, mf HUGEINT);
"""


@dataclass(frozen=True, slots=True)
class HalfLives:
    """The half-lives (integer µs) the per-event buckets of a state are built for."""

    edge_us: int
    gene_us: int


Buckets = frozenset[str]  # which per-event bucket sets to build: "edge", "gene"
ALL_BUCKETS: Buckets = frozenset({"edge", "gene"})


def _mantissa(h: int) -> str:
    w = h * HALF_LIVES_PER_BUCKET
    return f"CAST(round(pow(2.0, (t % {w}) / {h}.0) * 4503599627370496.0) AS BIGINT)"


def _part_sql(src: str, hl: HalfLives, buckets: Buckets) -> str:
    """Stage 1: one grouped scan of the outcomes.

    Grouping on the raw strings (no cleaning, no status mapping) keeps it within a few per
    cent of a plain GROUP BY; only the bucket sets asked for are computed.
    """
    cols, aggs = ["key", "gene", "status"], ["count(*) AS n", "min(t) AS t0", "max(t) AS t1"]
    for name, h in (("edge", hl.edge_us), ("gene", hl.gene_us)):
        if name in buckets:
            cols.append(f"t // {h * HALF_LIVES_PER_BUCKET} AS b{name[0]}")
            aggs.append(f"sum({_mantissa(h)}) AS m{name[0]}")
    return f"""
    SELECT {", ".join(cols)}, {", ".join(aggs)}
    FROM (SELECT {_CLAMPED_T} AS t, status, key, gene FROM {src} WHERE kind = 'outcome')
    GROUP BY ALL"""


# Event time in µs, within what the log accepts at append (1970 to the end of 9999). An
# older log (or a hand-written segment) can hold any 64-bit time, up to DuckDB's
# "infinity", whose epoch_us is NULL; the decay arithmetic would overflow on the extremes.
# Such an outcome counts as of the nearest time in range (comparing timestamps first:
# least/greatest would skip the NULL of an infinite one).
_TS_MAX = 253_402_300_799_999_999
_CLAMPED_T = (
    f"CASE WHEN ts > make_timestamptz({_TS_MAX}::BIGINT) THEN {_TS_MAX}::BIGINT "
    "WHEN ts < make_timestamptz(0::BIGINT) THEN 0::BIGINT ELSE epoch_us(ts) END"
)


_MISSING = "(key IS NULL OR key = '' OR gene IS NULL OR gene = '')"
# Stage-1 groups for a rebuild: with their status class, and whether they lack key or gene.
_GROUPS = f"""
SELECT * EXCLUDE (status),
    CASE status WHEN 'success' THEN 0 WHEN 'failed' THEN 1 ELSE 2 END::TINYINT AS cls,
    {_MISSING} AS lacking
FROM ({{}})"""

_RESOLVE_WINDOW = """
INSERT INTO _res
SELECT m.mseq, a.ak, a.ag
FROM (SELECT * FROM _miss ANTI JOIN _res USING (mseq)) m
ASOF JOIN (
    SELECT action_id, seq, nullif(key, '') AS ak, nullif(gene, '') AS ag FROM {src}
    WHERE kind = 'attempt' AND action_id IN (SELECT maid FROM _miss)
) a ON m.maid = a.action_id AND m.mseq > a.seq
"""

# Stage 2: the state tables from the (small) stage-1 groups.
_STATE_SELECT = {
    "edge_totals": """
        SELECT key, gene,
            coalesce(sum(n) FILTER (WHERE status = 'success'), 0)::BIGINT AS success,
            coalesce(sum(n) FILTER (WHERE status = 'failed'), 0)::BIGINT AS fail,
            sum(n)::BIGINT AS outcomes, min(t0) AS first_t, max(t1) AS newest_t
        FROM _part GROUP BY key, gene""",
    "edge_buckets": """
        SELECT key, gene, be AS b, coalesce(sum(me) FILTER (WHERE status = 'success'), 0) AS ms,
            coalesce(sum(me) FILTER (WHERE status = 'failed'), 0) AS mf
        FROM _part WHERE status IN ('success', 'failed') GROUP BY key, gene, be""",
    "gene_buckets": """
        SELECT gene, bg AS b, coalesce(sum(mg) FILTER (WHERE status = 'success'), 0) AS ms,
            coalesce(sum(mg) FILTER (WHERE status = 'failed'), 0) AS mf
        FROM _part WHERE status IN ('success', 'failed') GROUP BY gene, bg""",
}
_KEYS = {
    "edge_totals": ("key", "gene"),
    "edge_buckets": ("key", "gene", "b"),
    "gene_buckets": ("gene", "b"),
}

# An upsert: add the delta to the rows it touches, insert the others.
_MERGE = """
MERGE INTO {table} x USING ({select}) d ON {match}
WHEN MATCHED THEN UPDATE SET {update}
WHEN NOT MATCHED THEN INSERT VALUES ({values})
"""
_MERGE_UPDATE = {
    "edge_totals": "success = x.success + d.success, fail = x.fail + d.fail, "
    "outcomes = x.outcomes + d.outcomes, first_t = least(x.first_t, d.first_t), "
    "newest_t = greatest(x.newest_t, d.newest_t)",
    "edge_buckets": "ms = x.ms + d.ms, mf = x.mf + d.mf",
    "gene_buckets": "ms = x.ms + d.ms, mf = x.mf + d.mf",
}
_COLUMNS = {
    "edge_totals": ("key", "gene", "success", "fail", "outcomes", "first_t", "newest_t"),
    "edge_buckets": ("key", "gene", "b", "ms", "mf"),
    "gene_buckets": ("gene", "b", "ms", "mf"),
}

# Buckets more than MAX_BUCKET_LAG behind their edge's (gene's) newest bucket. Evaluation
# ignores them anyway, so pruning is only housekeeping and need not run on every refresh.
_PRUNE = """
DELETE FROM {table} WHERE rowid IN (
    SELECT x.rowid FROM {table} x
    JOIN (SELECT {keys}, max(newest_t) AS newest_t FROM edge_totals GROUP BY {keys}) t
    USING ({keys})
    WHERE x.b < t.newest_t // {w} - {lag})
"""
PRUNE_EVERY = 1 << 20  # seqs between two prunes of a checkpoint


def create_state(con: duckdb.DuckDBPyConnection) -> None:
    """Create the (empty) state tables if they are missing."""
    with engine_errors("creating the edge state"):
        con.execute(STATE_DDL)


def apply_events(
    con: duckdb.DuckDBPyConnection, scan: EventScan, lo: int, hl: HalfLives, *, fresh: bool
) -> None:
    """Add the outcomes with ``lo < seq <= scan.head`` to the state tables of ``con``.

    ``fresh``: the state tables are empty, so the delta is inserted without merging.
    """
    with engine_errors("aggregating outcomes"):
        _build_part(con, scan, lo, hl, ALL_BUCKETS)
        # One script: every round trip through the Python client costs about a millisecond.
        script = []
        for table, select in _STATE_SELECT.items():
            if fresh:
                script.append(f"INSERT INTO {table} {select}")
                continue
            match = " AND ".join(f"x.{k} = d.{k}" for k in _KEYS[table])
            values = ", ".join(f"d.{c}" for c in _COLUMNS[table])
            script.append(
                _MERGE.format(
                    table=table,
                    select=select,
                    match=match,
                    update=_MERGE_UPDATE[table],
                    values=values,
                )
            )
        con.execute(";\n".join([*script, "DROP TABLE _part"]))
        if fresh or lo // PRUNE_EVERY != scan.head // PRUNE_EVERY:
            prune(con, hl)


def part_table(
    con: duckdb.DuckDBPyConnection, scan: EventScan, hl: HalfLives, buckets: Buckets
) -> pa.Table:
    """Stage 1 over every event of ``scan``, keys resolved, as Arrow (nothing is written).

    What a rebuild (an as-of or counterfactual query, or ``cache=False``) folds into edges
    (:mod:`evolog.projections.edges._fold`); only the bucket sets asked for are computed. Each group
    also gets its status class ``cls`` (0 success, 1 failed, 2 other), which costs DuckDB
    nothing on 1e4 groups and spares numpy the strings.
    """
    with engine_errors("aggregating outcomes"):
        part = arrow(con, _GROUPS.format(_part_sql(scan.sql(0), hl, buckets)))
        if not part.column("lacking").to_numpy(zero_copy_only=False).any():
            return part
        with registered(con, part) as name:
            con.execute(f"CREATE OR REPLACE TEMP TABLE _part AS SELECT * FROM {name}")
        _fix_missing(con, scan, 0, hl, buckets, groups=_GROUPS)
        part = arrow(con, "SELECT * FROM _part")
        con.execute("DROP TABLE _part")
        return part


def prune(con: duckdb.DuckDBPyConnection, hl: HalfLives) -> None:
    """Delete the buckets that fell out of the window (housekeeping; answers do not change)."""
    for table, keys, h in (
        ("edge_buckets", "key, gene", hl.edge_us),
        ("gene_buckets", "gene", hl.gene_us),
    ):
        con.execute(
            _PRUNE.format(table=table, keys=keys, w=h * HALF_LIVES_PER_BUCKET, lag=MAX_BUCKET_LAG)
        )


def _build_part(
    con: duckdb.DuckDBPyConnection, scan: EventScan, lo: int, hl: HalfLives, buckets: Buckets
) -> None:
    """``_part``: stage-1 groups of the outcomes in ``lo < seq <= head``, keys resolved."""
    con.execute(f"CREATE OR REPLACE TEMP TABLE _part AS {_part_sql(scan.sql(lo), hl, buckets)}")
    if _count(con, f"SELECT count(*) FROM _part WHERE {_MISSING}"):
        _fix_missing(con, scan, lo, hl, buckets)


def _count(con: duckdb.DuckDBPyConnection, sql: str) -> int:
    return int(con.sql(sql).fetchall()[0][0])


def _fix_missing(
    con: duckdb.DuckDBPyConnection,
    scan: EventScan,
    lo: int,
    hl: HalfLives,
    buckets: Buckets,
    *,
    groups: str = "{}",
) -> None:
    """Replace the groups of outcomes lacking a key or gene by their attempts' key and gene.

    ``groups``: how the rows of ``_part`` are derived from stage-1 groups (a rebuild's
    carry their status class rather than their status).
    """
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _miss AS SELECT seq AS mseq, action_id AS maid, ts, "
        f"status, key, gene FROM {scan.sql(lo)} WHERE kind = 'outcome' AND {_MISSING};"
        "CREATE OR REPLACE TEMP TABLE _res (mseq BIGINT, ak VARCHAR, ag VARCHAR)"
    )
    _resolve(con, scan, lo)
    fixed = (
        "(SELECT ts, 'outcome' AS kind, status, "
        "coalesce(nullif(m.key, ''), r.ak, '(none)') AS key, "
        "coalesce(nullif(m.gene, ''), r.ag) AS gene "
        "FROM _miss m LEFT JOIN _res r USING (mseq))"
    )
    con.execute(
        f"DELETE FROM _part WHERE {_MISSING}; "
        f"INSERT INTO _part SELECT * FROM ({groups.format(_part_sql(fixed, hl, buckets))}) "
        "WHERE gene IS NOT NULL; "
        "DROP TABLE _miss; DROP TABLE _res"
    )


def _resolve(con: duckdb.DuckDBPyConnection, scan: EventScan, lo: int) -> None:
    """Find the attempt of every outcome in ``_miss``.

    The delta itself is searched first, then the log backwards in growing windows: an
    attempt usually comes just before its outcome, so a refresh rarely reads old segments.
    """
    windows = [(lo, scan.head)]
    hi, width = lo, FIRST_WINDOW
    while hi > 0:
        windows.append((max(0, hi - width), hi))
        hi, width = hi - width, width * 4
    for w_lo, w_hi in windows:
        if not _count(con, "SELECT count(*) FROM _miss ANTI JOIN _res USING (mseq)"):
            return
        con.execute(_RESOLVE_WINDOW.format(src=scan.sql(w_lo, w_hi)))
