"""Hostile SQL: nothing run through evolog may create, change or delete a file, or read one
outside the store's segments (CLI, ``Projections.sql``, ``Memory.sql``,
``Projections.connect(read_only=True)``), and ``--out``/``export`` never write into the store.

Every statement runs from an empty working directory (DuckDB's default spill directory is
``<cwd>/.tmp``); afterwards every file under the test's directory is hashed and compared.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from evolog.eventlog import Attempt, EventLog, Outcome, Signal
from evolog.projections._api import Projections
from evolog.projections._errors import QueryError, RefusedQueryError

from evolog import Memory
from evolog.cli._main import main

T0 = 1_767_225_600_000_000

#: ``{seg}`` a segment of the store, ``{store}`` its root, ``{outside}`` a directory next to
#: it, ``{parquet}`` a Parquet file there. What each one tries is in its text.
HOSTILE = [
    # writes dressed as reads: EXPLAIN ANALYZE runs what it explains
    "EXPLAIN ANALYZE COPY (SELECT * REPLACE ('failed' AS status) FROM read_parquet('{seg}')) "
    "TO '{seg}' (FORMAT parquet)",
    "EXPLAIN (ANALYZE) COPY (SELECT 1 AS a) TO '{seg}' (FORMAT parquet)",
    "EXPLAIN (ANALYZE, FORMAT json) COPY (SELECT 1 AS a) TO '{outside}/x.csv'",
    "explain analyse /* c */ copy (select 1 as a) to '{store}/segments/new.parquet'",
    "EXPLAIN ANALYZE EXPORT DATABASE '{outside}/db'",
    "EXPLAIN ANALYZE ATTACH '{outside}/x.duckdb' AS x",
    "EXPLAIN COPY (SELECT 1 AS a) TO '{seg}'",
    # plain writes
    "COPY (SELECT 1 AS a) TO '{seg}' (FORMAT parquet, USE_TMP_FILE false)",
    "COPY (SELECT 1 AS a) TO '{store}/manifest.json' (FORMAT csv)",
    "COPY (SELECT 1 AS a) TO '.tmp/x.csv'",
    "COPY events TO '{outside}/events.csv'",
    "COPY (SELECT 1 AS a) TO '{outside}' (FORMAT parquet, PARTITION_BY (a))",
    "EXPORT DATABASE '{outside}/db'",
    "ATTACH '{outside}/x.duckdb' AS x",
    "ATTACH '{store}/manifest.json' AS x (READ_ONLY)",
    "CREATE TABLE t AS SELECT 1",
    "CREATE TEMP TABLE t AS SELECT 1",
    "CREATE MACRO m(x) AS x",
    "CREATE TEMP VIEW v AS SELECT 1",
    "CREATE SECRET s (TYPE s3, KEY_ID 'a', SECRET 'b')",
    "CREATE PERSISTENT SECRET s (TYPE s3, KEY_ID 'a', SECRET 'b')",
    "INSTALL httpfs",
    "LOAD parquet",
    "FORCE INSTALL '{outside}/x.duckdb_extension'",
    "SET temp_directory = '{outside}'",
    "SET allowed_directories = ['/']",
    "SET enable_external_access = true",
    "RESET lock_configuration",
    "SET log_query_path = '{outside}/q.log'",
    "SET profiling_output = '{outside}/p.json'",
    "PRAGMA enable_profiling = 'json'",
    "CALL enable_logging(storage_path = '{outside}/logs')",
    "CHECKPOINT",
    "VACUUM",
    "SELECT 1; COPY (SELECT 1 AS a) TO '{outside}/m.csv'",
    "SELECT 1; SELECT 2",
    # reads outside the segments, or writes hidden in functions
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_text('/etc/hostname')",
    "SELECT * FROM read_blob('{store}/wal/*')",
    "SELECT * FROM read_text('{store}/manifest.json')",
    "SELECT * FROM read_text('{seg}/../../EVOLOG')",
    "SELECT * FROM read_parquet('{store}/segments/*.parquet')",
    "SELECT * FROM read_parquet('{parquet}')",
    "SELECT * FROM read_text('.tmp/x')",
    "SELECT * FROM glob('/*')",
    "SELECT * FROM glob('{store}/segments/*')",
    "SELECT * FROM '/etc/passwd'",
    "SELECT * FROM sniff_csv('/etc/passwd')",
    "SELECT * FROM parquet_metadata('{parquet}')",
    "SELECT * FROM query('COPY (SELECT 1 AS a) TO ''{outside}/q.csv''')",
    "SELECT * FROM enable_logging(storage = 'file', storage_path = '{outside}/logs')",
    "SELECT count(*) AS n FROM read_parquet('{seg}')",
]


@pytest.fixture(scope="module")
def template_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with a segment and a WAL tail (built once, copied for each test)."""
    root = tmp_path_factory.mktemp("hostile") / "store"
    with EventLog(root, create=True, durability="none", auto_seal="off") as log:
        log.append_many(
            [
                Signal(signals=["a"], ts=T0, agent="x"),
                Attempt(action_id="a1", key="k", gene="g", ts=T0 + 1),
                Outcome(action_id="a1", status="success", ts=T0 + 2),
            ]
        )
        log.seal()
        log.append(Outcome(action_id="a1", status="success", ts=T0 + 3))
    return root


@pytest.fixture
def sandbox(
    template_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, str]]:
    """A copy of the store, a directory next to it with a Parquet file, an empty cwd."""
    root = tmp_path / "store"
    shutil.copytree(template_store, root)
    outside = tmp_path / "outside"
    outside.mkdir()
    pq.write_table(pa.table({"secret": [42]}), outside / "other.parquet")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    segments = root / "segments"
    yield {
        "store": str(root),
        "seg": str(segments / sorted(os.listdir(segments))[0]),
        "outside": str(outside),
        "parquet": str(outside / "other.parquet"),
    }


def _tree(top: Path) -> dict[str, str]:
    """Every file and directory under ``top``: a content hash, or 'dir'."""
    out = {}
    for base, dirs, files in os.walk(top):
        for d in dirs:
            out[os.path.join(base, d)] = "dir"
        for f in files:
            path = os.path.join(base, f)
            with open(path, "rb") as fh:
                out[path] = hashlib.sha256(fh.read()).hexdigest()
    return out


def _statuses(store: str) -> list[str]:
    with EventLog(store) as log:
        return [e.status for e in log.replay() if isinstance(e, Outcome)]


@pytest.mark.parametrize("template", HOSTILE)
def test_hostile_sql_is_refused_and_touches_no_file(
    sandbox: dict[str, str], template: str, capsys: pytest.CaptureFixture[str]
) -> None:
    query = template.format(**sandbox)
    top = Path(sandbox["store"]).parent
    before = _tree(top)
    with pytest.raises((RefusedQueryError, QueryError)) as caught:
        Projections(sandbox["store"]).sql(query)
    assert "\n" not in str(caught.value)
    with Memory(sandbox["store"]) as mem:
        tree = _tree(top)  # opening a writer may create its lock file, nothing more
        with pytest.raises((RefusedQueryError, QueryError)):
            mem.sql(query)
        assert _tree(top) == tree
    code = main(["--store", sandbox["store"], "sql", query])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("evolog: error: ") and err.count("\n") == 1, err
    after = _tree(top)
    assert {p: h for p, h in after.items() if p in before} == before
    assert set(after) - set(before) <= {os.path.join(sandbox["store"], "write.lock")}
    assert os.listdir(".") == []
    assert _statuses(sandbox["store"]) == ["success", "success"]


@pytest.mark.parametrize("template", HOSTILE)
def test_read_only_connection_reaches_no_file(sandbox: dict[str, str], template: str) -> None:
    # No statement check here: whatever runs, DuckDB has no file system to run it on.
    query = template.format(**sandbox)
    top = Path(sandbox["store"]).parent
    before = _tree(top)
    con = Projections(sandbox["store"]).connect(read_only=True)
    try:
        with contextlib.suppress(duckdb.Error):
            con.execute(query).fetchall()
        assert con.sql("SELECT status FROM outcomes ORDER BY seq").fetchall() == [
            ("success",),
            ("success",),
        ]
    finally:
        con.close()
    assert _tree(top) == before
    assert os.listdir(".") == []


@pytest.mark.parametrize(
    "template",
    [
        "COPY (SELECT 1 AS a) TO '{seg}' (FORMAT parquet, USE_TMP_FILE false)",
        "COPY events TO '{outside}/events.csv'",
        "SELECT * FROM read_text('/etc/hostname')",
        "SELECT count(*) FROM read_parquet('{seg}')",
        "SELECT * FROM read_parquet('{parquet}')",
    ],
)
def test_read_only_connection_refuses_file_access(sandbox: dict[str, str], template: str) -> None:
    con = Projections(sandbox["store"]).connect(read_only=True)
    try:
        with pytest.raises(duckdb.PermissionException):
            con.execute(template.format(**sandbox))
    finally:
        con.close()


@pytest.mark.parametrize(
    "query",
    [
        "SELECT count(*) AS n FROM events",
        "EXPLAIN ANALYZE SELECT count(*) FROM events",
        "EXPLAIN (ANALYZE, FORMAT json) SELECT count(*) FROM events",
        "EXPLAIN (SELECT 1) UNION (SELECT 2)",
        "SELECT * FROM outcomes ORDER BY seq",
        "WITH o AS (SELECT * FROM outcomes) SELECT status, count(*) FROM o GROUP BY ALL",
        # table functions that sound like writes but have only the in-memory database
        "SELECT * FROM checkpoint()",
        "SELECT * FROM truncate_duckdb_logs()",
        # persistent secrets live in ~/.duckdb: with no file system, there are none to list
        "SELECT * FROM duckdb_secrets()",
    ],
)
def test_read_only_queries_still_run_and_write_nothing(sandbox: dict[str, str], query: str) -> None:
    top = Path(sandbox["store"]).parent
    before = _tree(top)
    assert isinstance(Projections(sandbox["store"]).sql(query.format(**sandbox)), pa.Table)
    assert _tree(top) == before and os.listdir(".") == []


def test_spilling_is_off(sandbox: dict[str, str]) -> None:
    # DuckDB's default spill directory (<cwd>/.tmp) is also a directory it lets queries
    # read and write; with spilling off there is none.
    got = Projections(sandbox["store"]).sql(
        "SELECT current_setting('temp_directory') AS t, "
        "current_setting('allowed_directories') AS d, current_setting('allowed_paths') AS p"
    )
    row = got.to_pylist()[0]
    assert row["t"] == "" and row["d"] == [] and row["p"] == []


def test_read_only_connection_still_answers(sandbox: dict[str, str]) -> None:
    con = Projections(sandbox["store"]).connect()
    try:
        assert con.sql("SELECT count(*) FROM events").fetchall() == [(4,)]
        assert con.sql("SELECT count(*) FROM traces").fetchall() == [(1,)]
        assert con.sql("SELECT min(ts) FROM events").fetchall()[0][0].year == 2026
    finally:
        con.close()
    with Projections(sandbox["store"]).connect(as_of=2) as con:
        assert con.sql("SELECT count(*) FROM events").fetchall() == [(2,)]


# -- --out and export ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "target",
    [
        "{store}/manifest.json",
        "{store}/segments/new.parquet",
        "{seg}",
        "{store}",
        "{store}/wal/../x.parquet",
        "{outside}/../store/EVOLOG",
        "link-to-segments/x.parquet",
        "link-to-manifest",
        "link-to-segments/../manifest.json",
        "link-to-store-parent/store/q.parquet",
    ],
)
def test_out_inside_the_store_is_refused(
    sandbox: dict[str, str], target: str, capsys: pytest.CaptureFixture[str]
) -> None:
    store = Path(sandbox["store"])
    os.symlink(store / "segments", "link-to-segments")
    os.symlink(store / "manifest.json", "link-to-manifest")
    os.symlink(store.parent, "link-to-store-parent")
    top = store.parent
    before = _tree(top)
    code = main(["--store", str(store), "sql", "SELECT 1 AS a", "--out", target.format(**sandbox)])
    err = capsys.readouterr().err
    assert code == 2 and "--out: expected a path outside the store" in err
    assert err.count("\n") == 1
    assert _tree(top) == before


def test_out_outside_the_store_is_written(
    sandbox: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    os.symlink(sandbox["outside"], "out-link")
    argv = ["--store", sandbox["store"], "sql", "SELECT 7 AS a", "--out", "out-link/r.parquet"]
    code = main(argv)
    assert code == 0 and capsys.readouterr().out
    assert pq.read_table(Path(sandbox["outside"]) / "r.parquet").to_pylist() == [{"a": 7}]
    assert sorted(os.listdir(sandbox["outside"])) == ["other.parquet", "r.parquet"]


@pytest.mark.parametrize("target", ["{store}", "{store}/segments", "{store}/exports"])
def test_export_inside_the_store_is_refused(sandbox: dict[str, str], target: str) -> None:
    top = Path(sandbox["store"]).parent
    before = _tree(top)
    with pytest.raises(RefusedQueryError, match="export directory: expected a path outside"):
        Projections(sandbox["store"]).export(target.format(**sandbox))
    assert _tree(top) == before
