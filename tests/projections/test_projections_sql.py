"""``evolog sql``/``edges``/``export``: read-only SQL, every refusal, output formats."""

from __future__ import annotations

import argparse
import io
import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from evolog.eventlog import Attempt, EventLog, Outcome, Signal
from evolog.projections._api import Projections
from evolog.projections._errors import QueryError, RefusedQueryError
from evolog.projections._sqlguard import check_query

from evolog.cli._sql import add_sql_commands, format_table, render

T0 = 1_767_225_600_000_000


@pytest.fixture
def proj(tmp_path: Path) -> Projections:
    with EventLog(tmp_path / "store", create=True, durability="none", auto_seal="off") as log:
        log.append_many(
            [
                Signal(signals=["a"], ts=T0, agent="x"),
                Attempt(action_id="a1", key="k", gene="g", ts=T0 + 1),
                Outcome(action_id="a1", status="success", ts=T0 + 2),
            ]
        )
        log.seal()
        log.append(Outcome(action_id="a1", status="failed", ts=T0 + 3))
    return Projections(tmp_path / "store")


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT count(*) FROM events",
        "with x as (select * from outcomes) select status from x",
        "FROM events SELECT kind",
        "DESCRIBE events",
        "SHOW TABLES",
        "SUMMARIZE steps",
        "VALUES (1, 2)",
        "EXPLAIN SELECT * FROM events",
        "SELECT * FROM traces",
        "SELECT * FROM edges JOIN gene_priors USING (gene)",
    ],
)
def test_read_only_queries_run(proj: Projections, sql: str) -> None:
    assert isinstance(proj.sql(sql, now=T0), pa.Table)


@pytest.mark.parametrize(
    ("sql", "why"),
    [
        ("COPY events TO '/tmp/evolog-x.csv'", "COPY statement"),
        ("COPY (SELECT 1) TO '/tmp/evolog-x.parquet' (FORMAT parquet)", "COPY statement"),
        ("ATTACH '/tmp/evolog-x.duckdb' AS x", "ATTACH statement"),
        ("DETACH memory", "DETACH statement"),
        ("INSTALL httpfs", "LOAD statement"),
        ("LOAD httpfs", "LOAD statement"),
        ("SET enable_external_access = true", "SET statement"),
        ("RESET lock_configuration", "SET statement"),
        ("PRAGMA enable_profiling", "PRAGMA statement"),
        ("CREATE TABLE t AS SELECT 1", "CREATE statement"),
        ("CREATE VIEW v AS SELECT 1", "CREATE statement"),
        ("INSERT INTO events SELECT * FROM events", "INSERT statement"),
        ("UPDATE events SET agent = 'x'", "UPDATE statement"),
        ("DELETE FROM events", "DELETE statement"),
        ("DROP VIEW events", "DROP statement"),
        ("EXPORT DATABASE '/tmp/evolog-x'", "EXPORT statement"),
        ("CALL pragma_version()", "CALL statement"),
        ("CHECKPOINT", "CALL statement"),
        ("BEGIN TRANSACTION", "TRANSACTION statement"),
        ("USE memory", "SET statement"),
        ("SELECT 1; SELECT 2", "exactly one SQL statement; got 2"),
        ("   ", "expected one SQL query"),
    ],
)
def test_statements_other_than_one_query_are_refused(proj: Projections, sql: str, why: str) -> None:
    with pytest.raises(RefusedQueryError, match=why):
        proj.sql(sql)
    assert not os.path.exists("/tmp/evolog-x.csv")


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM read_text('/etc/hostname')",
        "SELECT * FROM glob('/*')",
        "SELECT * FROM read_json('{store}/manifest.json')",
        "SELECT * FROM read_parquet('{outside}')",
        "SELECT * FROM read_text('{store}/EVOLOG')",
        "SELECT * FROM read_blob('{store}/wal/*')",
        "SELECT * FROM read_text('{store}/segments/../EVOLOG')",
    ],
)
def test_reaching_outside_the_segments_is_refused(
    proj: Projections, tmp_path: Path, sql: str
) -> None:
    outside = tmp_path / "outside.parquet"
    pq.write_table(pa.table({"a": [1]}), outside)
    with pytest.raises(RefusedQueryError, match="outside the store"):
        proj.sql(sql.format(store=proj.paths.root, outside=outside))


def test_a_file_name_as_a_table_is_not_read(proj: Projections) -> None:
    # Replacement scans are off, so a quoted path is just an unknown table name.
    with pytest.raises(QueryError, match="/etc/passwd does not exist"):
        proj.sql("SELECT * FROM '/etc/passwd'")


def test_segments_are_read_only_through_the_views(proj: Projections) -> None:
    # DuckDB has no file system at all: not even the snapshot's own segments open by path
    # (a path it could read was also one a COPY could overwrite).
    path = os.path.join(proj.paths.segments, os.listdir(proj.paths.segments)[0])
    with pytest.raises(RefusedQueryError, match="outside the store"):
        proj.sql(f"SELECT count(*) AS n FROM read_parquet('{path}')")
    assert proj.sql("SELECT count(*) AS n FROM events WHERE seq <= 3")["n"].to_pylist() == [3]


def test_python_variables_are_not_reachable(proj: Projections) -> None:
    secret = pa.table({"x": [42]})  # a replacement scan would find this local
    with pytest.raises(QueryError, match="secret"):
        proj.sql("SELECT * FROM secret")
    assert secret.num_rows == 1


def test_bad_sql_is_a_query_error(proj: Projections) -> None:
    with pytest.raises(QueryError, match="nosuch"):
        proj.sql("SELECT * FROM nosuch")
    with pytest.raises(QueryError, match="parse"):
        check_query("SELEC 1")


def test_read_only_connection_for_python_users(proj: Projections) -> None:
    con = proj.connect()
    try:
        assert con.sql("SELECT count(*) FROM outcomes").fetchall() == [(2,)]
        with pytest.raises(Exception, match="locked"):
            con.execute("SET enable_external_access = true")
    finally:
        con.close()


# -- the CLI ---------------------------------------------------------------------------------
def _run(proj: Projections, *argv: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    parser = argparse.ArgumentParser(prog="evolog")
    parser.add_argument("--store")
    add_sql_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["--store", proj.paths.root, *argv])
    code = args.func(args)
    out, err = capsys.readouterr()
    return code, out if code == 0 else err


def test_cli_sql_formats(proj: Projections, capsys: pytest.CaptureFixture[str]) -> None:
    q = "SELECT kind, count(*) AS n FROM events GROUP BY kind ORDER BY kind"
    code, out = _run(proj, "sql", q, "--format", "json", capsys=capsys)
    assert code == 0
    assert json.loads(out) == [
        {"kind": "attempt", "n": 1},
        {"kind": "outcome", "n": 2},
        {"kind": "signal", "n": 1},
    ]
    code, out = _run(proj, "sql", q, "--format", "csv", capsys=capsys)
    assert out.splitlines() == ["kind,n", "attempt,1", "outcome,2", "signal,1"]
    code, out = _run(proj, "sql", q, capsys=capsys)
    assert out.splitlines()[0].split() == ["kind", "|", "n"]
    assert out.splitlines()[-1] == "(3 rows)"
    code, out = _run(proj, "sql", q, "--as-of", "2", "--format", "csv", capsys=capsys)
    assert out.splitlines() == ["kind,n", "attempt,1", "signal,1"]


def test_cli_sql_out_parquet(
    proj: Projections, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "r.parquet"
    code, out = _run(proj, "sql", "SELECT * FROM events", "--out", str(target), capsys=capsys)
    assert code == 0 and json.loads(out)["rows"] == 4
    assert pq.read_table(target).num_rows == 4


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("COPY events TO '/tmp/evolog-y.csv'", "got a COPY statement"),
        ("SELECT * FROM read_csv('/etc/passwd')", "refused"),
        ("SELECT * FROM nosuch", "nosuch"),
    ],
)
def test_cli_sql_errors_exit_2(
    proj: Projections, capsys: pytest.CaptureFixture[str], query: str, message: str
) -> None:
    code, err = _run(proj, "sql", query, capsys=capsys)
    assert code == 2
    assert err.startswith("evolog: error: ") and message in err and len(err.splitlines()) <= 2


def test_cli_edges_and_export(
    proj: Projections, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _run(proj, "edges", "--key", "k", "--now", "2026-01-02T00:00:00Z", capsys=capsys)
    rows = json.loads(out)
    assert code == 0 and [(r["success"], r["fail"]) for r in rows] == [(1, 1)]
    assert rows[0]["weight"] == pytest.approx(0.5 ** (1 / 30), rel=1e-9)
    code, out = _run(
        proj, "edges", "--priors", "--mode", "per_event", "--format", "csv", capsys=capsys
    )
    assert out.splitlines()[0].startswith("gene,success,fail")
    code, out = _run(proj, "edges", "--signals", "nothing,here", capsys=capsys)
    assert json.loads(out) == []
    code, err = _run(proj, "edges", "--half-life", "-3", capsys=capsys)
    assert code == 2 and "half_life_days" in err
    code, out = _run(proj, "export", str(tmp_path / "x"), "--format", "csv", capsys=capsys)
    assert code == 0 and len(json.loads(out)["written"]) >= 4


def test_table_formatter_aligns_and_cuts() -> None:
    text = format_table(["name", "n"], [{"name": "a" * 100, "n": 1.5}, {"name": None, "n": 10}])
    lines = text.splitlines()
    assert lines[2].endswith("1.5") and lines[3].endswith(" 10")
    assert "…" in lines[2] and "NULL" in lines[3] and lines[-1] == "(2 rows)"
    buf = io.StringIO()
    render(pa.table({"x": [[1, 2]], "y": [{"a": 1}]}), "csv", buf)
    assert buf.getvalue().splitlines()[1] == '"[1, 2]","{""a"": 1}"'


def test_internal_arrow_queries_leave_the_warning_filters_alone(tmp_path: Path) -> None:
    # Queries run on several threads at once (DuckDB releases the GIL while it works); a
    # helper that swapped the process-wide filters around each query could leave another
    # thread's temporary filter installed for good.
    import threading
    import warnings

    from evolog.projections._source import arrow, cursor

    seg = tmp_path / "t.parquet"
    pq.write_table(pa.table({"x": list(range(50_000))}), seg)
    before = list(warnings.filters)
    errors: list[BaseException] = []

    def work() -> None:
        try:
            with cursor() as con:
                for _ in range(40):
                    got = arrow(
                        con, f"SELECT sum(x) AS s FROM read_parquet('{seg}') WHERE x > ?", [1]
                    )
                    assert got["s"].to_pylist() == [sum(range(2, 50_000))]
        except BaseException as exc:  # reported below, on the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert list(warnings.filters) == before
