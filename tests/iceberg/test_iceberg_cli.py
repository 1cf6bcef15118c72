"""``evolog publish iceberg``, ``evolog sql --iceberg``, ``Memory.publish_iceberg`` and the
optional extra (issue 19)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from _eventlog_util import REPO, evolog
from _iceberg_util import add_events, blocked, interleaved_stores, replay_rows, sorted_rows

from evolog import Memory


def test_publish_and_query_from_the_shell(tmp_path: Path) -> None:
    stores = interleaved_stores(tmp_path, rounds=2)
    wh = tmp_path / "wh"
    for name, path in stores.items():
        done = evolog(path, "publish", "iceberg", str(wh), "--store-id", name)
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)
        assert (result["operation"], result["store_id"], result["table"]) == (
            "append",
            name,
            "evolog.events",
        )
    again = evolog(stores["alpha"], "publish", "iceberg", str(wh), "--store-id", "alpha")
    assert json.loads(again.stdout)["operation"] == "none"
    query = "SELECT store_id, count(*) AS n, max(seq) AS top FROM events GROUP BY 1 ORDER BY 1"
    done = evolog(tmp_path, "sql", "--iceberg", f"{wh}:evolog.events", query, "--format", "json")
    assert done.returncode == 0, done.stderr
    want = []
    for name, path in sorted(stores.items()):
        rows = replay_rows(path, name)
        want.append({"store_id": name, "n": len(rows), "top": max(r["seq"] for r in rows)})
    assert json.loads(done.stdout) == want


def test_publish_seal_flag_publishes_the_tail(tmp_path: Path) -> None:
    store = interleaved_stores(tmp_path, rounds=1)["beta"]
    add_events(store, 12, seed=5, seal=False)
    wh = tmp_path / "wh"
    done = evolog(store, "publish", "iceberg", str(wh), "--store-id", "b", "--seal")
    assert done.returncode == 0, done.stderr
    query = "SELECT count(*) AS n FROM events"
    out = evolog(tmp_path, "sql", "--iceberg", f"{wh}:events", query, "--format", "json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [{"n": len(replay_rows(store, "b"))}]


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    store = interleaved_stores(tmp_path, rounds=1)["alpha"]
    wh = tmp_path / "wh"
    assert evolog(store, "publish", "iceberg", str(wh), "--store-id", "a").returncode == 0
    cases = [
        (["sql", "--iceberg", f"{wh}:events", "COPY events TO 'x.csv'"], 2, "COPY statement"),
        (["sql", "--iceberg", "nowhere", "SELECT 1"], 2, "expected CATALOG:TABLE"),
        (["sql", "--iceberg", f"{wh}:events", "SELECT 1", "--snapshot", "7"], 2, "snapshot"),
        (["publish", "iceberg", str(wh), "--table", "a b"], 2, "expected NAME"),
        (
            ["sql", "--iceberg", f"{wh}:events", "SELECT 1", "--out", str(wh / "o.parquet")],
            2,
            "outside",
        ),
    ]
    for args, code, text in cases:
        done = evolog(store, *args)
        err = done.stderr.decode()
        assert done.returncode == code, (args, err)
        assert err.startswith("evolog: error: ") and err.count("\n") == 1 and text in err, err


def test_a_missing_extra_is_a_one_line_error_naming_it(tmp_path: Path) -> None:
    store = interleaved_stores(tmp_path, rounds=1)["alpha"]
    for args in (
        ["--store", str(store), "publish", "iceberg", str(tmp_path / "wh")],
        ["sql", "--iceberg", f"{tmp_path / 'wh'}:events", "SELECT 1"],
    ):
        done = blocked(*args)
        err = done.stderr.decode()
        assert done.returncode == 1, err
        assert err.count("\n") == 1 and "evolog[iceberg]" in err and "pyiceberg" in err, err
    assert not (tmp_path / "wh").exists()


def test_the_core_install_never_imports_pyiceberg(tmp_path: Path) -> None:
    store = interleaved_stores(tmp_path, rounds=1)["alpha"]
    code = (
        "import sys, evolog, evolog.iceberg; from evolog import Memory; "
        "from evolog.cli._main import build_parser; build_parser(); build_parser('sql'); "
        f"m = Memory({str(store)!r}); m.close(); "
        "print(sorted(k for k in sys.modules if k.split('.')[0] in ('pyiceberg', 'sqlalchemy')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"[]\n"
    # And a plain query of the store through the command.
    assert blocked("--store", str(store), "sql", "SELECT count(*) FROM events").returncode == 0


def test_memory_publish_iceberg(tmp_path: Path) -> None:
    store = interleaved_stores(tmp_path, rounds=2)["gamma"]
    wh = str(tmp_path / "wh")
    with Memory(store) as mem:
        first = mem.publish_iceberg(wh, store_id="g", seal=True)
        assert first.operation == "append" and first.added_rows == len(replay_rows(store, "g"))
        assert mem.publish_iceberg(wh, store_id="g").operation == "none"
    from evolog.iceberg import iceberg_sql

    got = iceberg_sql(f"{wh}:evolog.events", "SELECT * EXCLUDE (store_id) FROM events ORDER BY seq")
    assert sorted_rows([{"store_id": "g", **r} for r in got.to_pylist()]) == sorted_rows(
        replay_rows(store, "g")
    )
