"""The scan planned from the table's metadata files equals pyiceberg's ``plan_files``
(issue 19: a cold ``evolog sql --iceberg`` does not import pyiceberg)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from _iceberg_util import add_events, blocked, interleaved_stores, replay_rows, table_rows
from evolog.eventlog import EventLog
from evolog.eventlog.sealed._arrow import SCHEMA
from evolog.projections._source import connect
from pyiceberg.catalog.sql import SqlCatalog

from evolog.iceberg import iceberg_sql, publish
from evolog.iceberg._plan import Unsupported
from evolog.iceberg._read import Group, plan_direct, plan_pyiceberg
from evolog.iceberg._schema import load_or_create, table_arrow_schema


def _catalog(wh: Path) -> SqlCatalog:
    return SqlCatalog("evolog", uri=f"sqlite:///{wh}/catalog.db", warehouse=f"file://{wh}")


def _shape(groups: dict[str, Group]) -> dict[str, tuple[list[str], set[str] | None]]:
    return {sid: (sorted(g.paths), g.present) for sid, g in groups.items()}


def _type(con: duckdb.DuckDBPyConnection, name: str) -> str:
    return str(con.sql(f"SELECT NULL::{name}").types[0])


def _history(tmp_path: Path) -> tuple[Path, dict[str, Path]]:
    """A table made by an older evolog (fewer columns), three stores published into it,
    one store's new events, then every store compacted and published again."""
    stores = interleaved_stores(tmp_path)
    wh = tmp_path / "wh"
    wh.mkdir()
    older = pa.schema([f for f in SCHEMA if f.name not in ("rating", "tags", "probation")])
    load_or_create(_catalog(wh), ("evolog", "events"), older)
    for name, path in stores.items():
        publish(path, str(wh), store_id=name)
    add_events(stores["beta"], 40, seed=8)
    publish(stores["beta"], str(wh), store_id="beta")
    for name, path in stores.items():
        EventLog(path).compact(small_rows=10_000)
        publish(path, str(wh), store_id=name)
    return wh, stores


def test_direct_plan_equals_pyiceberg_for_every_snapshot_and_bound(tmp_path: Path) -> None:
    wh, stores = _history(tmp_path)
    table = _catalog(wh).load_table("evolog.events")
    snapshots = [s.snapshot_id for s in table.snapshots()]
    assert len(snapshots) == 7 and len(table.schemas()) == 2
    rows = [r for n, p in stores.items() for r in replay_rows(p, n)]
    ts = sorted(int(r["ts"].timestamp() * 1_000_000) for r in rows)
    seqs = sorted(r["seq"] for r in rows)
    bounds: list[dict[str, int]] = [
        {},
        {"seq": 0},
        {"seq": seqs[len(seqs) // 3]},
        {"seq": seqs[-1]},
        {"ts": ts[0] - 1},
        {"ts": ts[len(ts) // 2]},
        {"seq": seqs[len(seqs) // 2], "ts": ts[len(ts) // 3]},
    ]
    con = connect()
    pruned = 0
    try:
        for snap in [None, *snapshots]:
            for bound in bounds:
                direct = plan_direct(str(wh), "events", snap, bound)
                theirs = plan_pyiceberg(con, str(wh), "events", snap, bound, None)
                assert _shape(direct[0]) == _shape(theirs[0]), (snap, bound)
                # The same DuckDB types (spelt alike once DuckDB has parsed them).
                assert [(n, _type(con, t)) for n, t in direct[1]] == theirs[1], (snap, bound)
                full = sum(
                    len(g.paths) for g in plan_direct(str(wh), "events", snap, {})[0].values()
                )
                pruned += full - sum(len(g.paths) for g in direct[0].values())
    finally:
        con.close()
    assert pruned > 0  # the bounds did skip files, the same ones
    # The older snapshots read back as pyiceberg reads them, row for row.
    for snap in snapshots:
        ours = table_rows(iceberg_sql(f"{wh}:events", "SELECT * FROM events", snapshot_id=snap))
        assert ours == table_rows(table.scan(snapshot_id=snap).to_arrow()), snap


def test_a_cold_query_does_not_import_pyiceberg(tmp_path: Path) -> None:
    wh, stores = _history(tmp_path)
    query = "SELECT store_id, count(*) AS n FROM events GROUP BY store_id ORDER BY store_id"
    done = blocked("sql", "--iceberg", f"{wh}:evolog.events", query, "--format", "csv")
    assert done.returncode == 0, done.stderr
    counts = {n: len(replay_rows(p, n)) for n, p in stores.items()}
    want = "store_id,n\n" + "".join(f"{n},{c}\n" for n, c in sorted(counts.items()))
    assert done.stdout.decode() == want


def test_a_table_the_direct_planner_does_not_read_is_planned_by_pyiceberg(
    tmp_path: Path,
) -> None:
    """Manifests compressed with bzip2 (a codec the direct reader lacks): pyiceberg plans
    the scan, with the same rows."""
    stores = interleaved_stores(tmp_path, rounds=2)
    wh = tmp_path / "wh"
    wh.mkdir()
    table = load_or_create(_catalog(wh), ("evolog", "events"), SCHEMA)
    with table.transaction() as tx:
        tx.set_properties({"write.avro.compression-codec": "bzip2"})
    for name, path in stores.items():
        publish(path, str(wh), store_id=name)
    with pytest.raises(Unsupported):
        plan_direct(str(wh), "events", None, {})
    want = [r for n, p in stores.items() for r in replay_rows(p, n)]
    got = table_rows(iceberg_sql(f"{wh}:events", "SELECT * FROM events"))
    assert got == sorted(want, key=lambda r: (r["store_id"], r["seq"]))


def test_a_format_1_table_is_published_and_read_back(tmp_path: Path) -> None:
    """A format-1 table (made by another tool, partitioned by store_id): publishing into
    it works (it failed with an AttributeError inside pyiceberg), and pyiceberg plans its
    scan (the direct planner reads format 2 only)."""
    stores = interleaved_stores(tmp_path, rounds=2)
    wh = tmp_path / "wh"
    wh.mkdir()
    cat = _catalog(wh)
    cat.create_namespace("evolog")
    v1 = cat.create_table(
        "evolog.events", table_arrow_schema(SCHEMA), properties={"format-version": "1"}
    )
    with v1.update_spec() as spec:
        spec.add_identity("store_id")
    for name, path in stores.items():
        assert publish(path, str(wh), store_id=name).operation == "append"
    with pytest.raises(Unsupported):
        plan_direct(str(wh), "events", None, {})
    want = [r for n, p in stores.items() for r in replay_rows(p, n)]
    got = table_rows(iceberg_sql(f"{wh}:events", "SELECT * FROM events"))
    assert got == sorted(want, key=lambda r: (r["store_id"], r["seq"]))
    assert table_rows(_catalog(wh).load_table("evolog.events").scan().to_arrow()) == got
