"""The SQL sandbox (issue 26, item 1): no read path can change a file of the store.

Every attack below goes through every entry point that runs user SQL: ``Projections.sql``
(also with the statement check switched off, so that the sandbox alone is what holds),
the ``evolog sql`` command, ``/v1/sql`` of a real ``evolog serve`` with a read token, a
write token and no token, MCP's ``sql`` tool through the mcp SDK's client, and
``evolog sql --iceberg`` over a table whose data files are the store's own segments.
Before and after each attack every file under the test's directory (store, warehouse, the
directory next to them) is hashed; any difference names the attack and the entry point.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _eventlog_util import REPO
from evolog.eventlog import Attempt, EventLog, Outcome, Signal
from evolog.projections import _api, _sqlguard
from evolog.projections._api import Projections
from evolog.projections._errors import ProjectionError, QueryError, RefusedQueryError

from evolog.cli._main import main

T0 = 1_767_225_600_000_000
READ_TOKEN = "read-token-0123456789abcdef"
WRITE_TOKEN = "write-token-0123456789abcdef"

#: ``{seg}`` a segment, ``{store}`` the store, ``{wal}`` its WAL file, ``{outside}`` a
#: directory next to it, ``{parquet}`` a Parquet file there. Each line says what it tries.
ATTACKS = [
    # the issue's own: a multi-byte character before ANALYZE shifted the guard's cuts
    "EXPLAIN /*é*/ ANALYZE COPY (SELECT 'SELECT 1 --' AS x) TO '{seg}' "
    "(FORMAT parquet, USE_TMP_FILE false)",
    "EXPLAIN /*🦆🦆*/ ANALYZE COPY (SELECT 'SELECT 1 --' AS x) TO '{seg}' (FORMAT parquet)",
    "EXPLAIN /*数据库*/ ANALYZE COPY (SELECT 'SELECT 1 --' AS x) TO '{seg}' (FORMAT parquet)",
    "EXPLAIN ANALYZE /*ééééééé*/ COPY (SELECT 'FROM events --' AS x) TO '{store}/manifest.json'",
    "EXPLAIN (ANALYZE) /*日本*/ COPY (SELECT 'x' AS x) TO '{wal}' (FORMAT csv)",
    "EXPLAIN /*é*/ (ANALYZE, FORMAT json) COPY (SELECT 'SELECT 1 --' AS x) TO '{seg}'",
    "EXPLAIN ANALYZE EXPORT DATABASE '{store}/cache/db'",
    # COPY to every kind of store file, dressed up or not
    "COPY (SELECT 1 AS a) TO '{seg}' (FORMAT parquet, USE_TMP_FILE false)",
    "COPY (SELECT 1 AS a) TO '{store}/manifest.json' (FORMAT csv)",
    "COPY (SELECT 1 AS a) TO '{wal}' (FORMAT csv)",
    "COPY (SELECT 1 AS a) TO '{store}/cache/x.parquet' (FORMAT parquet)",
    "COPY (SELECT 1 AS a) TO '{store}/segments/new.parquet'",
    "/* SELECT */ COPY (SELECT 1 AS a) TO '{seg}'",
    "-- SELECT\nCOPY (SELECT 1 AS a) TO '{seg}'",
    "COPY (WITH x AS (SELECT 1 AS a) SELECT * FROM x) TO '{seg}' (FORMAT parquet)",
    "WITH x AS (SELECT 1 AS a) COPY x TO '{seg}'",
    "COPY (PIVOT events ON kind USING count(*)) TO '{seg}' (FORMAT parquet)",
    "PIVOT (SELECT 'a' AS k, 1 AS v) ON k USING sum(v)",
    "SELECT 1; COPY (SELECT 1 AS a) TO '{seg}'",
    "EXPORT DATABASE '{outside}/db'",
    # other databases, extensions, settings
    "ATTACH '{store}/cache/x.duckdb' AS x",
    "ATTACH '{outside}/x.duckdb' AS x",
    "INSTALL httpfs",
    "LOAD parquet",
    "LOAD '{outside}/x.duckdb_extension'",
    "SET enable_external_access = true",
    "SET disabled_filesystems = ''",
    "SET lock_configuration = false",
    "RESET lock_configuration",
    "PRAGMA enable_profiling = 'json'",
    "PRAGMA profiling_output = '{outside}/p.json'",
    "CALL enable_logging(storage_path = '{outside}/logs')",
    "CREATE TABLE t AS SELECT 1 AS a",
    "CREATE TEMP TABLE t AS SELECT * FROM events",
    "CREATE MACRO m(x) AS x",
    "CHECKPOINT",
    # reading files, the store's own by path included
    "SELECT * FROM read_text('{store}/manifest.json')",
    "SELECT * FROM read_blob('{seg}')",
    "SELECT * FROM read_blob('{wal}')",
    "SELECT * FROM read_parquet('{seg}')",
    "SELECT * FROM parquet_scan('file://{seg}')",
    "SELECT * FROM '{seg}'",
    "SELECT * FROM glob('{store}/**')",
    "SELECT * FROM read_text('/etc/passwd')",
    "SELECT * FROM read_csv_auto('/etc/hosts')",
    "SELECT * FROM read_parquet('{parquet}')",
    "SELECT * FROM read_text(E'\\x2Fetc\\x2Fpasswd')",
    "SELECT * FROM read_text(concat(chr(47), 'etc', chr(47), 'passwd'))",
    "FROM read_text('{store}/EVOLOG')",
    "EXPLAIN ANALYZE SELECT * FROM read_text('/etc/passwd')",
    "SELECT * FROM query('COPY (SELECT 1 AS a) TO ''{seg}''')",
    "SELECT * FROM query_table('{seg}')",
    "SELECT * FROM sniff_csv('/etc/passwd')",
    # other file systems and devices
    "COPY (SELECT 1 AS a) TO '/dev/stdout'",
    "COPY (SELECT 1 AS a) TO 'pipe:/bin/sh'",
    "SELECT * FROM read_text('/proc/self/environ')",
    "SELECT * FROM read_csv('http://127.0.0.1:9/x.csv')",
    "COPY (SELECT 1 AS a) TO 's3://bucket/x.parquet'",
    "SELECT * FROM read_parquet('memory://x.parquet')",
]
#: One or two of each family above, for the entry points that cost a process or a round
#: trip per query (the command, HTTP per kind of token, MCP, Iceberg). Every attack runs
#: on the Python entry point, with and without the statement check, and the slow entry
#: points reach the same sandbox beneath: these show that each of them does.
SAMPLE = [
    ATTACKS[0],  # EXPLAIN ANALYZE COPY after a multi-byte character
    ATTACKS[4],  # EXPLAIN (ANALYZE) of a COPY onto the WAL
    "COPY (SELECT 1 AS a) TO '{seg}' (FORMAT parquet, USE_TMP_FILE false)",
    "ATTACH '{outside}/x.duckdb' AS x",
    "INSTALL httpfs",
    "SET enable_external_access = true",
    "SELECT * FROM read_text('/etc/passwd')",
    "SELECT * FROM read_parquet('{seg}')",
    "SELECT * FROM query('COPY (SELECT 1 AS a) TO ''{seg}''')",
    "COPY (SELECT 1 AS a) TO 'pipe:/bin/sh'",
]
assert set(SAMPLE) <= set(ATTACKS)


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


def _changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    return sorted(
        [f"changed {p}" for p in before if p in after and after[p] != before[p]]
        + [f"deleted {p}" for p in before if p not in after]
        + [f"created {p}" for p in after if p not in before]
    )


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with a segment and a WAL tail (built once, copied for each test)."""
    root = tmp_path_factory.mktemp("sandbox") / "store"
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


def _lay_out(template: Path, top: Path) -> dict[str, str]:
    """A copy of the template store in ``top``, a directory and a Parquet file beside it."""
    root = top / "store"
    shutil.copytree(template, root)
    outside = top / "outside"
    outside.mkdir()
    pq.write_table(pa.table({"secret": [42]}), outside / "other.parquet")
    (top / "cwd").mkdir()
    return {
        "store": str(root),
        "seg": str(root / "segments" / sorted(os.listdir(root / "segments"))[0]),
        "wal": str(root / "wal" / sorted(os.listdir(root / "wal"))[0]),
        "outside": str(outside),
        "parquet": str(outside / "other.parquet"),
    }


@pytest.fixture
def sandbox(
    template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, str]]:
    paths = _lay_out(template, tmp_path)
    monkeypatch.chdir(tmp_path / "cwd")
    yield paths


@pytest.fixture(scope="module")
def shared(template: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """One sandbox for the tests that attack through a server or a process: each attack
    still compares every file before and after it, so they need no copy of their own."""
    return _lay_out(template, tmp_path_factory.mktemp("shared"))


def _attack_all(
    sandbox: dict[str, str],
    run: Callable[[str], object],
    *,
    refused: bool = True,
    attacks: list[str] = ATTACKS,
) -> None:
    """Run each attack through ``run``; each must fail (``refused``) and change no file."""
    top = Path(sandbox["store"]).parent
    found = []
    for template in attacks:
        query = template.format(**sandbox)
        before = _tree(top)
        try:
            answer = run(query)
        except ProjectionError as exc:
            assert "\n" not in str(exc), (query, str(exc))
            answer = None
        changes = _changes(before, _tree(top))
        if changes:
            found.append(f"{query!r}: {changes}")
        elif refused and answer is not None:
            found.append(f"{query!r}: ran and answered {answer!r}")
    assert found == []
    assert _statuses(sandbox["store"]) == ["success", "success"]


def _statuses(store: str) -> list[str]:
    with EventLog(store) as log:
        return [e.status for e in log.replay() if isinstance(e, Outcome)]


# -- Python and the command ------------------------------------------------------------------
def test_projections_sql_changes_no_file(sandbox: dict[str, str]) -> None:
    _attack_all(sandbox, Projections(sandbox["store"]).sql)


def test_the_sandbox_holds_without_the_statement_check(
    sandbox: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The statement check is only the second lock: with it gone, every statement reaches
    # DuckDB, which has no file system to run it on.
    monkeypatch.setattr(_api, "check_query", lambda sql, con=None: sql)
    monkeypatch.setattr(_sqlguard, "check_query", lambda sql, con=None: sql)
    proj = Projections(sandbox["store"])

    def run(query: str) -> object:
        try:
            return proj.sql(query)
        except (RefusedQueryError, QueryError):
            return None
        except ProjectionError as exc:  # a DuckDB failure of another kind is fine too
            return None if "Error" in str(exc) else exc

    _attack_all(sandbox, run, refused=False)
    assert proj.sql("SELECT count(*) AS n FROM events")["n"].to_pylist() == [4]


def test_evolog_sql_changes_no_file(
    sandbox: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    def run(query: str) -> object:
        code = main(["--store", sandbox["store"], "sql", query])
        err = capsys.readouterr().err
        assert err.startswith("evolog: error: ") and err.count("\n") == 1, (query, err)
        return None if code == 2 else code

    _attack_all(sandbox, run, attacks=SAMPLE)


def test_the_issue_command_in_a_process(sandbox: dict[str, str]) -> None:
    top = Path(sandbox["store"]).parent
    before = _tree(top)
    query = ATTACKS[0].format(**sandbox)
    done = subprocess.run(
        [sys.executable, "-m", "evolog", "--store", sandbox["store"], "sql", query],
        cwd=REPO,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2 and b"EXPLAIN of a COPY statement" in done.stderr
    assert _changes(before, _tree(top)) == []
    check = [sys.executable, "-m", "evolog", "--store", sandbox["store"], "verify"]
    assert subprocess.run(check, cwd=REPO, capture_output=True, timeout=120).returncode == 0


@pytest.mark.parametrize(
    "query",
    [
        "EXPLAIN /*é*/ ANALYZE COPY (SELECT 'SELECT 1 --' AS x) TO 'x.parquet'",
        "EXPLAIN /*🦆*/ ANALYZE COPY (SELECT 'FROM events --' AS x) TO 'x.parquet'",
        "EXPLAIN /*数据*/ (ANALYZE) COPY (SELECT 'VALUES (1) --' AS x) TO 'x.parquet'",
    ],
)
def test_multibyte_text_before_an_explained_copy_is_refused(query: str) -> None:
    # The check alone (the tokenizer's offsets are bytes): it names the COPY.
    with pytest.raises(RefusedQueryError, match="EXPLAIN of a COPY statement"):
        _sqlguard.check_query(query)


def test_explain_of_reads_after_multibyte_text_still_runs(sandbox: dict[str, str]) -> None:
    proj = Projections(sandbox["store"])
    got = proj.sql("EXPLAIN /*é 🦆 数据*/ ANALYZE SELECT count(*) FROM events WHERE agent = 'é'")
    assert got.num_rows == 1


# -- the server: /v1/sql with each kind of token, MCP ---------------------------------------
pytest.importorskip("httpx", reason="the dev extra (httpx) is not installed")


NO_TOKENS = {k: "" for k in ("EVOLOG_TOKEN", "EVOLOG_READ_TOKEN", "MEMORY_GRAPH_REMOTE_KEY")}


def _server(store: str, env: dict[str, str]) -> Any:
    pytest.importorskip("starlette", reason="the server extra is not installed")
    from _server_util import LiveServer

    return LiveServer(store, env=env)


# One server per token configuration, shared by the tests that attack through it.
@pytest.fixture(scope="module")
def tokened_server(shared: dict[str, str]) -> Iterator[Any]:
    env = {"EVOLOG_TOKEN": WRITE_TOKEN, "EVOLOG_READ_TOKEN": READ_TOKEN}
    with _server(shared["store"], env) as server:
        yield server


@pytest.fixture(scope="module")
def open_server(shared: dict[str, str]) -> Iterator[Any]:
    with _server(shared["store"], NO_TOKENS) as server:
        yield server


def test_http_sql_changes_no_file_with_any_token(
    shared: dict[str, str], tokened_server: Any
) -> None:
    import httpx

    url = tokened_server.url
    warm = httpx.post(
        url + "/v1/sql",
        json={"query": "SELECT count(*) AS n FROM events"},
        headers={"Authorization": f"Bearer {READ_TOKEN}"},
        timeout=60,
    )
    assert warm.status_code == 200 and warm.json()["rows"] == [{"n": 4}]
    for token in (READ_TOKEN, WRITE_TOKEN, None):
        headers = {"Authorization": f"Bearer {token}"} if token else {}

        def run(query: str, headers: dict[str, str] = headers) -> object:
            r = httpx.post(url + "/v1/sql", json={"query": query}, headers=headers, timeout=60)
            want = (403, 400) if headers else (401,)
            return None if r.status_code in want and "error" in r.json() else r.text

        _attack_all(shared, run, attacks=SAMPLE)


def test_http_sql_without_tokens_changes_no_file(shared: dict[str, str], open_server: Any) -> None:
    import httpx

    def run(query: str) -> object:
        r = httpx.post(open_server.url + "/v1/sql", json={"query": query}, timeout=60)
        return None if r.status_code in (403, 400) and "error" in r.json() else r.text

    _attack_all(shared, run, attacks=SAMPLE)


async def _mcp_attacks(target: Any, sandbox: dict[str, str]) -> list[str]:
    from mcp import Client

    top = Path(sandbox["store"]).parent
    found = []
    async with Client(target) as c:
        ok = await c.call_tool("sql", {"query": "SELECT count(*) AS n FROM events"})
        assert not ok.is_error
        assert json.loads(ok.content[0].text)["rows"] == [{"n": 4}]  # type: ignore[union-attr]
        for template in SAMPLE:
            query = template.format(**sandbox)
            before = _tree(top)
            r = await c.call_tool("sql", {"query": query})
            changes = _changes(before, _tree(top))
            if changes or not r.is_error:
                found.append(f"{query!r}: {changes or r.content}")
    return found


def test_mcp_stdio_sql_changes_no_file(shared: dict[str, str]) -> None:
    pytest.importorskip("mcp", reason="the server extra is not installed")
    from mcp.client.stdio import StdioServerParameters

    argv = ["-m", "evolog", "--store", shared["store"], "mcp"]
    params = StdioServerParameters(command=sys.executable, args=argv, env=dict(os.environ))
    assert asyncio.run(_mcp_attacks(params, shared)) == []


def test_mcp_http_sql_changes_no_file(shared: dict[str, str], open_server: Any) -> None:
    pytest.importorskip("mcp", reason="the server extra is not installed")
    assert asyncio.run(_mcp_attacks(open_server.url + "/mcp", shared)) == []


# -- Iceberg: the table's data files are the store's segments -------------------------------
def test_iceberg_sql_changes_no_file(sandbox: dict[str, str]) -> None:
    pytest.importorskip("pyiceberg", reason="the iceberg extra is not installed")
    from evolog.iceberg import iceberg_sql
    from evolog.iceberg._publish import publish

    wh = str(Path(sandbox["store"]).parent / "wh")
    publish(sandbox["store"], wh, store_id="s")
    target = f"{wh}:evolog.events"
    got = iceberg_sql(target, "SELECT store_id, count(*) AS n FROM events GROUP BY 1")
    assert got.to_pylist() == [{"store_id": "s", "n": 3}]
    sealed = "SELECT current_setting('enable_external_access') AS e, "
    sealed += "current_setting('lock_configuration') AS l"
    assert iceberg_sql(target, sealed).to_pylist() == [{"e": False, "l": True}]
    from evolog.iceberg._errors import IcebergError

    def run(query: str) -> object:
        try:
            return iceberg_sql(target, query)
        except IcebergError:
            return None

    _attack_all(sandbox, run, attacks=SAMPLE)
