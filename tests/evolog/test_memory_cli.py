"""`evolog remember|recall|feedback|compress`: JSON out, one-line errors, nothing written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from evolog.advice.recall import short_id
from evolog.eventlog import EventLog


def evolog(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evolog", "--store", str(store), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "EVOLOG_STORE": ""},
    )


def head(store: Path) -> int:
    with EventLog(store) as log:
        return log.snapshot().head_seq


def test_remember_recall_feedback_compress(tmp_path: Path) -> None:
    store = tmp_path / "s"
    assert evolog(store, "init").returncode == 0
    r = evolog(
        store,
        "remember",
        "deploy",
        "Deploy the web service with the blue green script.",
        "--tag",
        "ops",
    )
    assert r.returncode == 0, r.stderr
    item = json.loads(r.stdout)["item"]
    again = json.loads(
        evolog(
            store, "remember", "deploy", "deploy the web service with the blue-green script"
        ).stdout
    )
    assert again["item"] == item and again["superseded"] is True

    text = evolog(store, "recall", "deploy the web service", "--no-record")
    shown = short_id(item)  # the block shows a long id by a short one, fetchable by either
    assert text.returncode == 0 and shown in text.stdout and "<evolog-memory>" in text.stdout
    assert head(store) == 2
    js = json.loads(
        evolog(
            store, "recall", "deploy the web service", "--format", "json", "--budget", "500"
        ).stdout
    )
    assert js["items"][0]["id"] == item and js["chars"] <= 500 and js["recorded"] == 3
    assert evolog(store, "recall", "bake bread at home").stdout == ""

    fb = evolog(store, "feedback", item, "helpful", "--note", "worked")
    assert fb.returncode == 0 and json.loads(fb.stdout)["verdict"] == "helpful"
    js = json.loads(
        evolog(store, "recall", "deploy the web service", "--format", "json", "--no-record").stdout
    )
    assert js["items"][0]["helpful"] == 1
    # A verdict about one attempt replaces what that attempt's outcome said of the item.
    outcome = json.dumps({"kind": "outcome", "action_id": "a1", "status": "success",
                          "supported_by": [item]})  # fmt: skip
    assert evolog(store, "append", outcome).returncode == 0
    fb = evolog(store, "feedback", item, "harmful", "--action-id", "a1")
    assert fb.returncode == 0, fb.stderr
    js = json.loads(
        evolog(store, "recall", "deploy the web service", "--format", "json", "--no-record").stdout
    )
    assert (js["items"][0]["helpful"], js["items"][0]["harmful"]) == (1, 1)
    assert json.loads(evolog(store, "compress").stdout)["archived"] == {}


def test_errors_are_one_line_exit_2_and_write_nothing(tmp_path: Path) -> None:
    store = tmp_path / "s"
    evolog(store, "init")
    evolog(store, "remember", "b", "keep this")
    before = head(store)
    for args in (
        ("remember", "", "text"),
        ("remember", "b", " "),
        ("feedback", "nope", "helpful"),
        ("feedback", "nope", "great"),
        ("recall", "q", "--budget", "-5"),
        ("recall", "q", "--format", "xml"),
        ("compress", "--undo", "nope"),
    ):
        r = evolog(store, *args)
        assert r.returncode == 2, (args, r.stderr)
        assert r.stderr.startswith("evolog: error: ") and r.stderr.count("\n") == 1, r.stderr
    assert head(store) == before


def test_a_missing_store_is_exit_1(tmp_path: Path) -> None:
    r = evolog(tmp_path / "none", "recall", "anything")
    assert r.returncode == 1 and "expected an evolog store" in r.stderr


def test_bad_memory_config_is_one_line(tmp_path: Path) -> None:
    store = tmp_path / "s"
    evolog(store, "init")
    (store / "memory.json").write_text('{"injection": {"top": 3}}')
    r = evolog(store, "recall", "anything")
    assert r.returncode == 2 and "unknown key injection.top" in r.stderr
    (store / "memory.json").write_text('{"decay": {"lambda": -1}}')
    r = evolog(store, "recall", "anything")
    assert r.returncode == 2 and "decay_lambda" in r.stderr
