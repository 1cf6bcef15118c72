"""Publishing stores into one Iceberg table and reading it back (issue 19)."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest
from _iceberg_util import (
    add_events,
    interleaved_stores,
    replay_rows,
    sorted_rows,
    table_rows,
)
from evolog.eventlog import EventLog, init_store
from evolog.eventlog.sealed._arrow import SCHEMA, events_to_table
from evolog.eventlog.sealed._manifest import FileCommitter, Manifest
from evolog.eventlog.sealed._segments import write_segment
from evolog.projections._errors import RefusedQueryError
from pyiceberg.catalog.sql import SqlCatalog

from evolog.iceberg import (
    IcebergInputError,
    PublishRefusedError,
    iceberg_sql,
    publish,
)
from evolog.iceberg._schema import load_or_create


def _catalog(wh: Path) -> SqlCatalog:
    return SqlCatalog("evolog", uri=f"sqlite:///{wh}/catalog.db", warehouse=f"file://{wh}")


def _all_replays(stores: dict[str, Path], upto: int | None = None) -> list[dict[str, object]]:
    return sorted_rows([r for n, p in stores.items() for r in replay_rows(p, n, upto)])


def _sql_rows(target: str, **kwargs: object) -> list[dict[str, object]]:
    return table_rows(iceberg_sql(target, "SELECT * FROM events", **kwargs))  # type: ignore[arg-type]


def _segment_bytes(store: Path) -> dict[str, bytes]:
    seg = store / "segments"
    return {n: (seg / n).read_bytes() for n in os.listdir(seg) if n.endswith(".parquet")}


def test_three_stores_compacted_and_republished_equal_their_replays(tmp_path: Path) -> None:
    stores = interleaved_stores(tmp_path)
    wh = tmp_path / "wh"
    before = {n: _segment_bytes(p) for n, p in stores.items()}
    for name, path in stores.items():
        result = publish(path, str(wh), store_id=name)
        assert result.operation == "append" and result.removed_files == 0
    # Registered in place and byte-identical: nothing copied, nothing rewritten.
    assert {n: _segment_bytes(p) for n, p in stores.items()} == before
    table = _catalog(wh).load_table("evolog.events")
    files = {t.file.file_path for t in table.scan().plan_files()}
    assert files == {
        f"file://{os.path.realpath(p / 'segments' / f)}"
        for n, p in stores.items()
        for f in before[n]
    }
    want = _all_replays(stores)
    assert table_rows(table.scan().to_arrow()) == want
    assert _sql_rows(f"{wh}:evolog.events") == want

    appended = table.current_snapshot()
    for path in stores.values():
        EventLog(path).compact(small_rows=10_000)
    for name, path in stores.items():
        result = publish(path, str(wh), store_id=name)
        assert (result.operation, result.added_files) == ("overwrite", 1)
        assert result.removed_files == len(before[name])
    table = _catalog(wh).load_table("evolog.events")
    ops = [s.summary.operation.value for s in table.snapshots()]
    assert ops == ["append"] * 3 + ["overwrite"] * 3
    assert table_rows(table.scan().to_arrow()) == want
    assert _sql_rows(f"{wh}:events") == want
    # The snapshot before the compactions still reads the replaced files.
    assert appended is not None
    assert table_rows(table.scan(snapshot_id=appended.snapshot_id).to_arrow()) == want
    assert _sql_rows(f"{wh}:events", snapshot_id=appended.snapshot_id) == want


def test_publish_again_is_idempotent_and_incremental(tmp_path: Path) -> None:
    stores = interleaved_stores(tmp_path, rounds=3)
    wh = str(tmp_path / "wh")
    first = publish(stores["alpha"], wh, store_id="alpha")
    again = publish(stores["alpha"], wh, store_id="alpha")
    assert (again.operation, again.snapshot_id, again.added_files) == ("none", None, 0)
    assert len(_catalog(tmp_path / "wh").load_table("evolog.events").snapshots()) == 1
    add_events(stores["alpha"], 40, seed=9)
    add_events(stores["alpha"], 30, seed=10)
    more = publish(stores["alpha"], wh, store_id="alpha")
    assert (more.operation, more.added_files, more.added_rows) == ("append", 2, 70)
    assert more.sealed_seq == first.sealed_seq + 70
    assert _sql_rows(f"{wh}:events") == _all_replays({"alpha": stores["alpha"]})


def test_unsealed_tail_is_not_published_until_sealed(tmp_path: Path) -> None:
    stores = interleaved_stores(tmp_path, rounds=2)
    wh = str(tmp_path / "wh")
    add_events(stores["beta"], 25, seed=4, seal=False)
    publish(stores["beta"], wh, store_id="beta")
    got = _sql_rows(f"{wh}:events")
    assert got == _all_replays({"beta": stores["beta"]})
    with EventLog(stores["beta"]) as log:
        assert log.replay().__next__() is not None
        head = max(e.seq for e in log.replay())
    assert max(r["seq"] for r in got) == head - 25  # type: ignore[type-var,operator]


def test_time_travel_by_seq_and_time(tmp_path: Path) -> None:
    stores = interleaved_stores(tmp_path)
    wh = str(tmp_path / "wh")
    for name, path in stores.items():
        publish(path, wh, store_id=name)
    assert _sql_rows(f"{wh}:events", as_of=100) == _all_replays(stores, upto=100)
    rows = _all_replays(stores)
    cut = sorted(r["ts"] for r in rows)[len(rows) // 2]  # type: ignore[type-var]
    cut_us = int(cut.timestamp() * 1_000_000)  # type: ignore[attr-defined]
    got = _sql_rows(f"{wh}:events", as_of_ts=cut_us)
    assert got == [r for r in rows if r["ts"] <= cut]  # type: ignore[operator]
    assert 0 < len(got) < len(rows)


@pytest.mark.parametrize("where", [0.5, 0.05, 0.995])
def test_a_segment_whose_hash_does_not_match_is_refused(tmp_path: Path, where: float) -> None:
    """One bit flipped in a page, in the middle or in the footer: the hashes are checked
    while pyiceberg writes the snapshot; whatever the damage breaks first, the publish is
    refused as a changed segment, nothing is committed and no manifest it wrote is left."""
    stores = interleaved_stores(tmp_path, rounds=3)
    wh = tmp_path / "wh"
    publish(stores["alpha"], str(wh), store_id="alpha")
    add_events(stores["alpha"], 50, seed=11)
    manifest = FileCommitter(str(stores["alpha"] / "manifest.json")).load()
    newest = stores["alpha"] / "segments" / manifest.segments[-1].file
    data = bytearray(newest.read_bytes())
    data[int(len(data) * where)] ^= 0x01  # same size, one bit: only the hash can tell
    newest.write_bytes(bytes(data))
    table_before = _catalog(wh).load_table("evolog.events").metadata_location
    files_before = sorted(p.name for p in wh.rglob("*"))
    with pytest.raises(PublishRefusedError, match="content hash mismatch") as info:
        publish(stores["alpha"], str(wh), store_id="alpha")
    assert "\n" not in str(info.value) and newest.name in str(info.value)
    assert _catalog(wh).load_table("evolog.events").metadata_location == table_before
    assert sorted(p.name for p in wh.rglob("*")) == files_before


def test_another_store_under_the_same_id_is_refused(tmp_path: Path) -> None:
    stores = interleaved_stores(tmp_path, rounds=2)
    wh = str(tmp_path / "wh")
    publish(stores["alpha"], wh, store_id="shared")
    with pytest.raises(PublishRefusedError, match="another store published under this id"):
        publish(stores["beta"], wh, store_id="shared")


def test_schema_growth_becomes_a_schema_update(tmp_path: Path) -> None:
    stores = interleaved_stores(tmp_path, rounds=2)
    wh = tmp_path / "wh"
    # A table made by an older evolog, whose events had fewer fields.
    older = pa.schema([f for f in SCHEMA if f.name not in ("rating", "tags", "probation")])
    wh.mkdir()
    cat = _catalog(wh)
    load_or_create(cat, ("evolog", "events"), older)
    result = publish(stores["alpha"], str(wh), store_id="alpha")
    assert result.new_columns == ["probation", "rating", "tags"]
    table = _catalog(wh).load_table("evolog.events")
    assert {"rating", "tags", "probation"} <= set(table.schema().column_names)
    assert table_rows(table.scan().to_arrow()) == _all_replays({"alpha": stores["alpha"]})


def test_bad_arguments_are_one_line_errors(tmp_path: Path) -> None:
    stores = interleaved_stores(tmp_path, rounds=1)
    wh = str(tmp_path / "wh")
    for kwargs, pattern in (
        ({"table": "bad name"}, "expected NAME or NAMESPACE.NAME"),
        ({"store_id": ""}, "store id: expected 1-200 printable"),
        ({"store_id": "a\nb"}, "store id"),
    ):
        with pytest.raises(IcebergInputError, match=pattern):
            publish(stores["alpha"], wh, **kwargs)  # type: ignore[arg-type]
    assert not os.path.exists(wh)
    with pytest.raises(IcebergInputError, match="expected an Iceberg catalog at"):
        iceberg_sql(f"{tmp_path / 'none'}:events", "SELECT 1")
    with pytest.raises(IcebergInputError, match="expected CATALOG:TABLE"):
        iceberg_sql("no-table-here", "SELECT 1")
    publish(stores["alpha"], wh, store_id="alpha")
    with pytest.raises(IcebergInputError, match="snapshot: expected a snapshot"):
        iceberg_sql(f"{wh}:events", "SELECT 1", snapshot_id=12345)
    with pytest.raises(IcebergInputError, match=r"evolog\.missing"):
        iceberg_sql(f"{wh}:missing", "SELECT 1")


@pytest.mark.parametrize(
    "query",
    [
        "COPY events TO 'out.csv'",
        "SELECT * FROM read_csv('/etc/passwd')",
        "ATTACH 'x.db'",
        "SELECT 1; SELECT 2",
        "SET threads = 1",
    ],
)
def test_iceberg_sql_keeps_the_sql_rules(tmp_path: Path, query: str) -> None:
    stores = interleaved_stores(tmp_path, rounds=1)
    wh = str(tmp_path / "wh")
    publish(stores["alpha"], wh, store_id="alpha")
    with pytest.raises(RefusedQueryError):
        iceberg_sql(f"{wh}:events", query)
    assert not (tmp_path / "out.csv").exists()


def test_segments_of_an_older_narrower_schema_read_as_nulls(tmp_path: Path) -> None:
    """A store sealed by an older evolog (fewer columns) beside a current one: the
    columns its files lack read as NULL, through pyiceberg and through DuckDB."""
    stores = interleaved_stores(tmp_path, rounds=1)
    old = tmp_path / "old"
    paths = init_store(old)
    with EventLog(stores["alpha"]) as log:
        events = list(log.replay())
    full = events_to_table(events)
    dropped = ["rating", "tags", "probation", "observed"]
    narrow = full.drop_columns(dropped)
    info = write_segment(paths.segments, narrow)
    FileCommitter(paths.manifest).commit(
        Manifest(version=1, sealed_seq=info.last_seq, segments=[info])
    )
    wh = str(tmp_path / "wh")
    publish(old, wh, store_id="old")
    publish(stores["beta"], wh, store_id="beta")
    want = sorted_rows(
        [{"store_id": "old", **r, **dict.fromkeys(dropped)} for r in full.to_pylist()]
        + replay_rows(stores["beta"], "beta")
    )
    assert _sql_rows(f"{wh}:events") == want
    table = _catalog(tmp_path / "wh").load_table("evolog.events")
    assert table_rows(table.scan().to_arrow()) == want


def test_a_publisher_that_loses_the_namespace_race_goes_on(tmp_path: Path) -> None:
    """The SQL catalog checks for the namespace, then inserts it: of two publishers creating
    it at once, the one whose check came before the other's insert gets the database's
    unique-constraint error. Here the check answers as it did before the winner's insert."""
    wh = tmp_path / "wh"
    wh.mkdir()
    winner = _catalog(str(wh))
    winner.create_namespace("evolog")

    class LateCheck(SqlCatalog):
        checks = 0

        def namespace_exists(self, identifier: str | tuple[str, ...]) -> bool:
            self.checks += 1
            return self.checks > 1 and super().namespace_exists(identifier)

    loser = LateCheck("evolog", uri=f"sqlite:///{wh}/catalog.db", warehouse=f"file://{wh}")
    table = load_or_create(loser, ("evolog", "events"), SCHEMA)
    assert table.name() == ("evolog", "events")
