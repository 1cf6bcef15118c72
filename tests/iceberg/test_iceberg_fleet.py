"""A fleet shares one Iceberg table for real (issue 29 item 4): segments uploaded to an S3
server, the catalog in PostgreSQL, both real servers on loopback; the table read from a
process that can reach none of the stores' folders."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from _eventlog_util import REPO, hash_tree
from _iceberg_servers import SECRET_KEY, Postgres, S3Server, free_port, postgres, s3_server
from _iceberg_util import _events as events
from _iceberg_util import interleaved_stores, replay_rows, table_rows
from evolog.eventlog import EventLog

from evolog.iceberg import (
    CatalogError,
    IcebergError,
    IcebergInputError,
    iceberg_sql,
    publish,
)
from evolog.iceberg._storage import s3_properties

# On one worker: the module's servers (an S3 server, a PostgreSQL cluster) start once.
pytestmark = pytest.mark.xdist_group("iceberg_fleet")

QUERY = (
    "SELECT store_id, kind, count(*) AS n, min(seq) AS lo, max(seq) AS hi, "
    "count(score) AS scored FROM events GROUP BY store_id, kind ORDER BY store_id, kind"
)


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[S3Server, Postgres]]:
    with s3_server() as s3, postgres() as pg:
        yield s3, pg


@dataclass(frozen=True)
class Fleet:
    s3: S3Server
    catalog: str  # a PostgreSQL database of its own
    bucket: str
    warehouse: str

    @property
    def target(self) -> str:
        return f"{self.catalog}:evolog.events"

    def run(self, *args: str, cwd: Path = REPO, **env: str) -> subprocess.CompletedProcess[str]:
        """``evolog ARGS`` in a fresh interpreter that reaches the S3 server."""
        return subprocess.run(
            [sys.executable, "-m", "evolog", *args],
            capture_output=True,
            text=True,
            cwd=cwd,
            env=self.s3.env(**env),
            timeout=180,
            check=False,
        )

    def publish_cli(self, store: Path, store_id: str) -> dict[str, Any]:
        done = self.run(
            "--store",
            str(store),
            "publish",
            "iceberg",
            self.catalog,
            "--warehouse",
            self.warehouse,
            "--store-id",
            store_id,
        )
        assert done.returncode == 0, done.stderr
        result: dict[str, Any] = json.loads(done.stdout)
        return result


@pytest.fixture
def fleet(servers: tuple[S3Server, Postgres], monkeypatch: pytest.MonkeyPatch) -> Fleet:
    s3, pg = servers
    for key, value in s3.env().items():
        if key.startswith("AWS_"):
            monkeypatch.setenv(key, value)
    bucket = s3.new_bucket()
    return Fleet(s3, pg.new_database(), bucket, f"s3://{bucket}/fleet")


def test_a_fleet_table_in_s3_answers_from_a_process_that_reaches_no_store(
    tmp_path: Path, fleet: Fleet
) -> None:
    stores = interleaved_stores(tmp_path / "stores")
    segments = {n: len(_manifest(p)) for n, p in stores.items()}
    for name, path in stores.items():
        result = fleet.publish_cli(path, name)
        assert (result["operation"], result["store_id"]) == ("append", name)
        assert result["added_files"] == result["uploaded_files"] == segments[name]
    again = fleet.publish_cli(stores["alpha"], "alpha")
    assert (again["operation"], again["uploaded_files"]) == ("none", 0)

    # The same stores in a local table (data files in place): the answer to match.
    local = tmp_path / "local"
    for name, path in stores.items():
        publish(path, str(local), store_id=name)
    want = iceberg_sql(f"{local}:evolog.events", QUERY).to_pylist()
    rows = sorted(
        (r for n, p in stores.items() for r in replay_rows(p, n)),
        key=lambda r: (r["store_id"], r["seq"]),
    )
    assert sum(r["n"] for r in want) == len(rows) > 0

    # Every data file of the table is an object in the bucket, one per segment.
    from pyiceberg.catalog.sql import SqlCatalog

    cat = SqlCatalog("evolog", uri=_psycopg(fleet.catalog), **s3_properties())
    try:
        tbl = cat.load_table(("evolog", "events"))
        paths = [t.file.file_path for t in tbl.scan().plan_files()]
    finally:
        cat.engine.dispose()
    assert len(paths) == sum(segments.values())
    keys = set(fleet.s3.keys(fleet.bucket, "fleet/"))
    assert all(p.startswith(f"s3://{fleet.bucket}/fleet/") for p in paths)
    assert {p[len(f"s3://{fleet.bucket}/") :] for p in paths} <= keys

    # The stores and the local table are gone; the reader runs elsewhere.
    shutil.rmtree(tmp_path / "stores")
    shutil.rmtree(local)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # (The endpoint as an option this time, none in the environment.)
    options = ["--format", "json", "--s3-endpoint", fleet.s3.endpoint]
    done = fleet.run(
        "sql", "--iceberg", fleet.target, QUERY, *options, cwd=elsewhere, AWS_ENDPOINT_URL=""
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == want
    assert os.listdir(elsewhere) == []
    # pyiceberg reads the same table directly, row for row.
    assert table_rows(tbl.scan().to_arrow()) == rows


def test_kill_9_mid_upload_leaves_the_table_as_it_was(tmp_path: Path, fleet: Fleet) -> None:
    small = interleaved_stores(tmp_path / "stores", rounds=1)["alpha"]
    assert fleet.publish_cli(small, "alpha")["operation"] == "append"
    before = iceberg_sql(fleet.target, "SELECT * FROM events")
    snapshot = _snapshot(fleet)
    big = tmp_path / "big"
    with EventLog(big, create=True, auto_seal="off") as log:
        for i in range(60):  # 60 segments to upload
            log.append_many(events(random.Random(i), "big", 400))
            log.seal()
    total = len(_manifest(big))
    assert total == 60
    prefix = "fleet/evolog/events/data/segments/"
    existing = set(fleet.s3.keys(fleet.bucket, prefix))
    args = ["--store", str(big), "publish", "iceberg", fleet.catalog]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "evolog",
            *args,
            "--warehouse",
            fleet.warehouse,
            "--store-id",
            "big",
        ],
        cwd=REPO,
        env=fleet.s3.env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        seen: set[str] = set()
        deadline = time.monotonic() + 120
        while not seen and proc.poll() is None and time.monotonic() < deadline:
            seen = set(fleet.s3.keys(fleet.bucket, prefix)) - existing
        assert seen and proc.poll() is None, "the publisher was not caught uploading"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    orphans = set(fleet.s3.keys(fleet.bucket, prefix)) - existing
    assert 0 < len(orphans) < total  # killed mid-upload
    assert _snapshot(fleet) == snapshot
    assert table_rows(iceberg_sql(fleet.target, "SELECT * FROM events")) == table_rows(before)

    # One orphan damaged in place, its size kept: its hash no longer matches its key.
    damaged = sorted(orphans)[0]
    client: Any = fleet.s3.client()
    size = client.head_object(Bucket=fleet.bucket, Key=damaged)["ContentLength"]
    client.put_object(Bucket=fleet.bucket, Key=damaged, Body=b"\0" * size)

    # Publishing again finishes the job: the objects already there whole are not uploaded
    # again; the damaged one is.
    result = fleet.publish_cli(big, "big")
    assert (result["operation"], result["added_files"]) == ("append", total)
    assert result["uploaded_files"] == total - len(orphans) + 1
    assert client.head_object(Bucket=fleet.bucket, Key=damaged)["ContentLength"] == size
    counts = iceberg_sql(
        fleet.target,
        "SELECT count(*) AS n, count(DISTINCT (store_id, seq)) AS d FROM events",
    ).to_pylist()
    want = len(replay_rows(small, "alpha")) + len(replay_rows(big, "big"))
    assert counts == [{"n": want, "d": want}]
    got = table_rows(iceberg_sql(fleet.target, "SELECT * FROM events WHERE store_id = 'big'"))
    assert got == sorted(replay_rows(big, "big"), key=lambda r: r["seq"])
    assert len(set(fleet.s3.keys(fleet.bucket, prefix)) - existing) == total


def test_bad_targets_are_one_line_errors_and_change_nothing(tmp_path: Path, fleet: Fleet) -> None:
    store = interleaved_stores(tmp_path / "stores", rounds=1)["beta"]
    tree = hash_tree(store)
    closed = f"http://127.0.0.1:{free_port()}"
    missing = "s3://evolog-no-such-bucket/fleet"
    cases: list[tuple[dict[str, Any], type[IcebergError], str]] = [
        ({"s3_endpoint": closed}, CatalogError, "127.0.0.1"),
        ({"warehouse": missing}, CatalogError, "evolog-no-such-bucket"),
        ({"warehouse": "s3://Bad_Bucket/x"}, IcebergInputError, "expected s3://BUCKET"),
        ({"warehouse": "s3:///x"}, IcebergInputError, "expected s3://BUCKET"),
        ({"s3_endpoint": "ftp://127.0.0.1:1"}, IcebergInputError, "expected http(s)://"),
        ({"s3_region": "Mars 1"}, IcebergInputError, "S3 region"),
    ]
    for kwargs, kind, needle in cases:
        args = {"warehouse": fleet.warehouse, **kwargs}
        with pytest.raises(kind) as caught:
            publish(store, fleet.catalog, store_id="beta", **args)
        text = str(caught.value)
        assert needle in text and "\n" not in text and SECRET_KEY not in text, (kwargs, text)
    # A catalog that cannot be reached; its password is not in the message.
    unreachable = f"postgresql://evolog:hunter2@127.0.0.1:{free_port()}/nowhere"
    with pytest.raises(CatalogError) as caught:
        publish(store, unreachable, store_id="beta", warehouse=fleet.warehouse)
    assert "hunter2" not in str(caught.value) and "***" in str(caught.value)
    assert hash_tree(store) == tree
    # Nothing was published by any of them; a good publish then works.
    assert not any("/data/" in k for k in fleet.s3.keys(fleet.bucket))
    assert publish(store, fleet.catalog, store_id="beta", warehouse=fleet.warehouse).added_files
    assert hash_tree(store) == tree
    # An object of the table replaced behind its back (another size) is refused on read.
    client: Any = fleet.s3.client()
    key = next(k for k in fleet.s3.keys(fleet.bucket) if "/data/segments/" in k)
    client.put_object(Bucket=fleet.bucket, Key=key, Body=b"not a segment")
    with pytest.raises(CatalogError, match="expected a data file of") as caught:
        iceberg_sql(fleet.target, "SELECT count(*) FROM events")
    assert "\n" not in str(caught.value)


def test_wrong_credentials_are_one_line_errors(
    tmp_path: Path, servers: tuple[S3Server, Postgres]
) -> None:
    # An S3 server that checks credentials: after its first request (the bucket made
    # here) it accepts only keys it issued, and it issued none.
    with s3_server(INITIAL_NO_AUTH_ACTION_COUNT="1") as strict:
        bucket = strict.new_bucket()
        fleet = Fleet(strict, servers[1].new_database(), bucket, f"s3://{bucket}/fleet")
        store = interleaved_stores(tmp_path / "stores", rounds=1)["beta"]
        tree = hash_tree(store)
        wrong = fleet.run(
            "--store",
            str(store),
            "publish",
            "iceberg",
            fleet.catalog,
            "--warehouse",
            fleet.warehouse,
        )
        assert wrong.returncode == 1, wrong.stdout
        assert wrong.stderr.count("\n") == 1 and wrong.stderr.startswith("evolog: error: ")
        assert SECRET_KEY not in wrong.stderr
        assert "InvalidAccessKeyId" in wrong.stderr or "ACCESS_DENIED" in wrong.stderr, wrong.stderr
        read = fleet.run("sql", "--iceberg", fleet.target, "SELECT 1", cwd=tmp_path)
        assert read.returncode != 0 and read.stderr.count("\n") == 1, read.stderr
        assert hash_tree(store) == tree


def _manifest(store: Path) -> list[Any]:
    from evolog.eventlog.sealed._manifest import FileCommitter

    return list(FileCommitter(str(store / "manifest.json")).load().segments)


def _psycopg(uri: str) -> str:
    return uri.replace("postgresql://", "postgresql+psycopg://", 1)


def _snapshot(fleet: Fleet) -> int | None:
    from pyiceberg.catalog.sql import SqlCatalog

    cat = SqlCatalog("evolog", uri=_psycopg(fleet.catalog), **s3_properties())
    try:
        snap = cat.load_table(("evolog", "events")).current_snapshot()
        return None if snap is None else snap.snapshot_id
    finally:
        cat.engine.dispose()
