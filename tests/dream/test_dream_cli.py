"""The dream CLI commands, driven through argparse exactly as ``evolog`` registers them."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path

import pytest
from evolog.eventlog import EventLog

from evolog.cli._common import ProgressBar
from evolog.cli._dream import add_dream_commands, demo_dream
from tests.dream.test_dream_cycle import trace_events


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, object, str]:
    parser = argparse.ArgumentParser(prog="evolog")
    parser.add_argument("--store")
    add_dream_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(list(argv))
    code = args.func(args)
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.strip() else None, err


@pytest.fixture
def store(tmp_path: Path) -> str:
    path = tmp_path / "store"
    with EventLog(path, create=True) as log:
        log.append_many(
            trace_events("t1", "renew the expired tls certificate", ["renew", "install"])
        )
        log.append_many(
            trace_events(
                "t2",
                "debug the crashing kubernetes pod",
                ["describe", "logs", "fix env"],
                status="failed",
                failing=[2],
                error="OOMKilled",
            )
        )
    return str(path)


def test_isa_parse_and_run(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    source = tmp_path / "p.isa"
    source.write_text('BUILD_PARENT "g" "s" 0.5\nBUILD_CHILD $LAST_PARENT 0 r a x\nHALT\n')
    code, out, _ = cli(capsys, "isa", "parse", str(source))
    assert code == 0 and isinstance(out, dict) and out["ok"]
    assert [(i["opcode"], i["line"]) for i in out["instructions"]] == [
        ("BUILD_PARENT", 1), ("BUILD_CHILD", 2), ("HALT", 3),
    ]  # fmt: skip
    code, out, _ = cli(capsys, "isa", "run", str(source))
    assert code == 0 and isinstance(out, dict) and out["success"]
    assert [e["kind"] for e in out["events"]] == ["node", "child_step"]
    source.write_text("BUILD_CHILD nowhere 0 r a x\nFROB\n")
    code, out, _ = cli(capsys, "isa", "run", str(source))
    assert code == 1 and isinstance(out, dict)
    assert out["diagnostics"][0]["code"] == "unknown-opcode"
    assert "'nowhere' does not exist" in out["error"]
    code, _, err = cli(capsys, "isa", "parse", str(tmp_path / "missing.isa"))
    assert code == 2 and "expected a readable UTF-8 ISA file" in err


def test_dream_route_graph_undo(capsys: pytest.CaptureFixture[str], store: str) -> None:
    code, out, err = cli(capsys, "--store", store, "dream", "--embedder", "hashing")
    assert code == 0 and isinstance(out, dict) and out["traces_dreamed"] == 2
    assert err == ""  # no progress bar when stderr is not a terminal
    cycle = out["cycles"][0]["cycle"]
    code, out, _ = cli(capsys, "--store", store, "route", "the tls certificate expired, renew it")
    assert code == 0 and isinstance(out, dict) and out["path"] == "memory_traversal"
    assert [s["action"] for s in out["plan"]["steps"]] == ["renew", "install"]
    code, out, _ = cli(capsys, "--store", store, "route", "bake a cake")
    assert isinstance(out, dict) and out["path"] == "zero_shot"
    code, out, _ = cli(capsys, "--store", store, "graph")
    assert isinstance(out, dict) and out["live"] == 2
    k8s = next(n for n in out["nodes"] if "kubernetes" in n["goal"])
    assert k8s["constraints"][0]["failure_class"] == "unknown_failure"
    code, out, _ = cli(capsys, "--store", store, "dream", "cycles")
    assert isinstance(out, dict) and out["cycles"][0]["cycle"] == cycle
    code, out, _ = cli(capsys, "--store", store, "dream", "undo", cycle)
    assert code == 0 and out == {"undone": [cycle]}
    code, _, err = cli(capsys, "--store", store, "dream", "undo", cycle)
    assert code == 2 and "already undone" in err
    code, out, _ = cli(capsys, "--store", store, "graph")
    assert isinstance(out, dict) and out["nodes"] == []
    code, _, err = cli(capsys, "--store", store, "graph", "--node", "nope")
    assert code == 2 and "expected a node" in err


def test_progress_bar_draws_only_on_a_terminal() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Tty()
    bar = ProgressBar("dreaming", stream, width=10)
    bar(5, 10)
    bar(10, 10)
    bar.close()
    assert "\rdreaming [#####.....] 5/10" in stream.getvalue()
    assert stream.getvalue().endswith("[##########] 10/10\n")
    quiet = io.StringIO()
    ProgressBar("x", quiet)(1, 2)
    assert quiet.getvalue() == ""


def test_demo_dreams_and_routes(store: str) -> None:
    out = io.StringIO()
    demo_dream(store, out)
    text = out.getvalue()
    assert "dreamed 2 traces in 1 cycle(s)" in text
    assert "route 'bake a chocolate cake': zero_shot" in text
