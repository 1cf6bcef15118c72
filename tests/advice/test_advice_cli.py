"""``evolog advise`` / ``import evolver`` as commands: flags, stdin JSON, errors."""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from evolog.eventlog import EventLog

from evolog.cli._advice import add_advice_commands

EXAMPLES = Path(__file__).resolve().parents[1] / "data" / "evolver-examples"
REPO = Path(__file__).resolve().parents[2]
NOW = "2026-03-01T00:00:00.000Z"


def run(argv: list[str], stdin: str = "") -> tuple[int, str, str]:
    """Run one advice command in-process, as ``evolog`` would dispatch it."""
    parser = argparse.ArgumentParser(prog="evolog")
    parser.add_argument("--store")
    add_advice_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    out, err = io.StringIO(), io.StringIO()
    old = sys.stdin, sys.stdout, sys.stderr
    sys.stdin, sys.stdout, sys.stderr = io.StringIO(stdin), out, err
    try:
        code = args.func(args)
    finally:
        sys.stdin, sys.stdout, sys.stderr = old
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def store(tmp_path: Path) -> str:
    path = tmp_path / "store"
    EventLog(path, create=True).close()
    return str(path)


@pytest.fixture
def genes_file(tmp_path: Path) -> str:
    path = tmp_path / "genes.json"
    genes = [
        {"type": "Gene", "id": "gene_b", "category": "repair"},
        {"type": "Gene", "id": "gene_a", "category": "repair"},
    ]
    path.write_text(json.dumps({"version": 1, "genes": genes}))
    return str(path)


def test_import_then_advise_like_evolver(store: str, genes_file: str) -> None:
    code, out, _ = run(
        ["--store", store, "import", "evolver", str(EXAMPLES / "07_prior_ban.jsonl")]
    )
    assert code == 0 and json.loads(out)["imported"] == 12
    code, out, _ = run(
        ["--store", store, "import", "evolver", str(EXAMPLES / "07_prior_ban.jsonl")]
    )
    assert json.loads(out)["duplicates"] == 12
    want = json.loads((EXAMPLES / "07_prior_ban.expected.json").read_text())["results"][0]
    query = json.loads((EXAMPLES / "07_prior_ban.query.json").read_text())[0]
    query["now"] = NOW
    code, out, _ = run(["--store", store, "advise", "--policy", "evolver"], json.dumps(query))
    got = json.loads(out)
    assert code == 0
    assert list(got)[:4] == ["currentSignalKey", "preferredGeneId", "bannedGeneIds", "explanation"]
    assert got["bannedGeneIds"] == want["bannedGeneIdsInsertionOrder"]
    assert got["preferredGeneId"] == want["preferredGeneId"]
    assert got["explanation"] == want["explanation"]
    code, out, _ = run(["--store", store, "advise", "--now", NOW], json.dumps(query))
    ours = json.loads(out)
    assert ours["policy"] == "evolog" and ours["preferredGeneId"] != "gene_a"


def test_flags_and_stdin_query(store: str, genes_file: str) -> None:
    code, out, _ = run(["--store", store, "advise", "--signals", "a,b", "--genes", genes_file])
    got = json.loads(out)
    assert code == 0 and got["currentSignalKey"] == "a|b" and got["status"] == "explore"
    # Signals with commas only travel as JSON; flags override what stdin says.
    body = {
        "signals": ["errsig:a, b", "x"],
        "genes": [{"type": "Gene", "id": "g"}],
        "driftEnabled": False,
        "as_of": 0,
    }
    code, out, _ = run(["--store", store, "advise", "--drift"], json.dumps(body))
    got = json.loads(out)
    assert code == 0 and got["explanation"][-1] == "random_drift:enabled"
    assert got["currentSignalKey"].endswith("|x") and got["as_of"] == 0
    code, out, _ = run(["--store", store, "advise", "--genes", genes_file], json.dumps(body))
    assert [s["geneId"] for s in json.loads(out)["scored"]] == ["gene_b", "gene_a"]


@pytest.mark.parametrize(
    ("argv", "stdin", "message"),
    [
        (["advise", "--signals", "a"], "", "genes: expected --genes"),
        (["advise"], "{not json", "stdin: expected a JSON query object"),
        (["advise"], "[1]", "got a list"),
        (["advise", "--genes", "/nonexistent/genes.json", "--signals", "a"], "", "cannot read"),
        (["advise", "--now", "soon"], '{"signals": [], "genes": []}', "field 'ts'"),
        (["advise"], '{"signals": "a", "genes": []}', "signals: expected a list"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    store: str, argv: list[str], stdin: str, message: str
) -> None:
    code, out, err = run(["--store", store, *argv], stdin)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("evolog: error: ") and message in err


def test_import_of_a_missing_file_exits_1(store: str, tmp_path: Path) -> None:
    code, _, err = run(["--store", store, "import", "evolver", str(tmp_path / "none.jsonl")])
    assert code == 1 and "cannot open" in err


def test_cold_process_answers(store: str, genes_file: str) -> None:
    run(["--store", store, "import", "evolver", str(EXAMPLES / "09_tail_window.jsonl")])
    runner = (
        "import argparse, sys\n"
        "from evolog.cli._advice import add_advice_commands\n"
        "p = argparse.ArgumentParser(); p.add_argument('--store')\n"
        "add_advice_commands(p.add_subparsers(dest='c', required=True))\n"
        "a = p.parse_args(sys.argv[1:]); sys.exit(a.func(a))\n"
    )
    cmd = [
        sys.executable,
        "-c",
        runner,
        "--store",
        store,
        "advise",
        "--signals",
        "x",
        "--genes",
        genes_file,
        "--now",
        NOW,
    ]
    results: list[Any] = []
    for _ in range(2):  # the first run builds the cache, the second reads it
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        results.append(json.loads(proc.stdout))
    assert results[0] == results[1] and results[0]["preferredGeneId"] == "gene_a"
