"""The ``evolog`` command under mistakes and hostile input: one line, never a traceback.

Each case once ended in a traceback, a screen of usage, a side effect of a failed command or
an input accepted that should not have been.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _eventlog_util import REPO, evolog, hash_tree
from _signals import default_sigint
from evolog.eventlog import EventLog, Note, Signal


def one_line_error(proc: subprocess.CompletedProcess[bytes], code: int = 2) -> str:
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == code, err
    assert len(err.splitlines()) == 1 and err.startswith("evolog: error: "), err
    return err


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "store"
    with EventLog(path, create=True) as log:
        log.append_many([Note(id=f"n{i}", ts=10 + i, text="sealed") for i in range(3)])
        log.seal()
        log.append(Note(id="tail", ts=20, text="in the WAL"))
    return path


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (["replay", "--bogus"], "evolog replay --help"),
        (["nosuchcommand"], "evolog --help"),
        ([], "evolog --help"),
        (["append", "outcome", "--ok", "--failed"], "evolog append --help"),
        (["sql"], "evolog sql --help"),
        (["compact", "--small-rows", "x"], "evolog compact --help"),
    ],
)
def test_argument_mistakes_are_one_line_with_a_hint(
    store: Path, args: list[str], hint: str
) -> None:
    assert hint in one_line_error(evolog(store, *args))


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["replay", "--as-of", "99999999999999999999999"], "--as-of: expected a seq up to"),
        (["sql", "SELECT count(*) FROM edges", "--now", "99999999999999999999"], "field 'ts'"),
        (["sql", "SELECT 1", "--as-of", "99999999999999999999"], "--as-of"),
        (["edges", "--now", "99999999999999999999"], "field 'ts'"),
        (["replay", "--as-of", "10000-01-02"], "--as-of"),
    ],
)
def test_huge_numbers_are_one_line(store: Path, args: list[str], expected: str) -> None:
    assert expected in one_line_error(evolog(store, *args))


def test_advise_refuses_a_lone_surrogate_in_one_line(store: Path, tmp_path: Path) -> None:
    genes = tmp_path / "genes.json"
    genes.write_text(json.dumps([{"type": "Gene", "id": "g"}]))
    bad = os.fsdecode(b"log_error,a\xed\xb3\xbf")  # invalid UTF-8 from a shell
    err = one_line_error(evolog(store, "advise", "--signals", bad, "--genes", str(genes)))
    assert "UTF-8" in err
    query = b'{"signals": ["\\udcff"], "genes": [{"type": "Gene", "id": "g"}]}'
    assert "UTF-8" in one_line_error(evolog(store, "advise", stdin=query))


def test_deep_json_to_append_is_one_line(store: Path) -> None:
    deep = "[" * 5000 + "]" * 5000
    before = hash_tree(store)
    assert "nested" in one_line_error(evolog(store, "append", f'{{"kind":"note","tags":{deep}}}'))
    line = f'{{"kind":"signal","observed":{{"a":{deep}}}}}\n'.encode()
    assert "nested" in one_line_error(evolog(store, "append", stdin=b'{"kind":"note"}\n' + line))
    assert hash_tree(store) == before


@pytest.mark.parametrize("damage", ["missing", "truncated"])
@pytest.mark.parametrize("command", [["replay"], ["stats"], ["ledger"]])
def test_a_damaged_segment_is_one_line(tmp_path: Path, command: list[str], damage: str) -> None:
    path = tmp_path / "s"
    with EventLog(path, create=True) as log:
        log.append_many([Note(id=f"n{i}", text="x") for i in range(3)])
        log.seal()
    for seg in (path / "segments").iterdir():
        if damage == "missing":
            seg.unlink()
        else:
            seg.write_bytes(seg.read_bytes()[: seg.stat().st_size // 2])
    proc = evolog(path, *command)
    assert b"Traceback" not in proc.stderr
    one_line_error(proc, proc.returncode)
    assert proc.returncode in (1, 2)


def test_init_says_whether_it_created_and_refuses_a_file(tmp_path: Path) -> None:
    target = tmp_path / "new"
    first, again = evolog(target, "init"), evolog(target, "init")
    assert json.loads(first.stdout)["created"] is True
    assert json.loads(again.stdout)["created"] is False
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert "got a file" in one_line_error(evolog(afile, "init"), 1)
    assert "Not a directory" in one_line_error(evolog(afile / "below", "init"), 1)
    assert afile.read_text() == "x"


def test_a_failed_dream_undo_leaves_no_lock_file(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with EventLog(path, create=True):
        pass
    before = hash_tree(path)
    assert "dream cycle" in one_line_error(evolog(path, "dream", "undo", "nope"))
    assert hash_tree(path) == before


@pytest.mark.parametrize(
    "command", [["replay"], ["sql", "--format", "csv", "SELECT * FROM events"]]
)
def test_a_reader_that_leaves_early_ends_the_command_quietly(
    tmp_path: Path, command: list[str]
) -> None:
    path = tmp_path / "s"
    with EventLog(path, create=True) as log:
        log.append_many([Note(text="x" * 200) for _ in range(20_000)])
    with subprocess.Popen(
        [sys.executable, "-m", "evolog", "--store", str(path), *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline()
        proc.stdout.close()  # `| head -1`
        err = proc.stderr.read()
        assert proc.wait(timeout=120) == 0
    assert err == b""


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["append", "outcome", "--action-id", "a", "--status", "sucess"], "status"),
        (["append", "outcome", "--action-id", "a"], "status"),
        (["append", "outcome", "--status", "success", "--score", "1"], "action_id"),
        (["append", "step", "--action-id", "a", "--index", "-1"], "index"),
        (["append", "note", "--ts", "253402300800000000"], "ts"),
        (["append", "note", "--ts", "-5"], "ts"),
        (["append", '{"kind":"outcome"}'], "action_id"),
        (["append", '{"kind":"note","ts":253402300800000000}'], "ts"),
    ],
)
def test_append_refuses_what_the_rules_refuse(store: Path, args: list[str], field: str) -> None:
    before = hash_tree(store)
    assert f"field '{field}'" in one_line_error(evolog(store, *args))
    lines = b'{"kind":"note"}\n{"kind":"outcome","action_id":"a","status":"sucess"}\n'
    assert "event 2" in one_line_error(evolog(store, "append", stdin=lines))
    assert hash_tree(store) == before


def test_signals_with_commas_come_whole_from_repeated_flags(tmp_path: Path) -> None:
    path = tmp_path / "s"
    sig = "errsig:ValueError: expected 2, got 3"
    evolog(path, "init")
    out = evolog(path, "append", "signal", "--signal", sig, "--signal", "log_error")
    assert out.returncode == 0, out.stderr
    with EventLog(path) as log:
        (event,) = log.replay()
        assert isinstance(event, Signal) and event.signals == [sig, "log_error"]
        want_key = event.key
    genes = tmp_path / "genes.json"
    genes.write_text(json.dumps([{"type": "Gene", "id": "g"}]))
    advice = evolog(path, "advise", "--signal", sig, "--signal", "log_error", "--genes", str(genes))
    assert advice.returncode == 0, advice.stderr
    assert json.loads(advice.stdout)["currentSignalKey"] == want_key
    edges = evolog(path, "edges", "--signal", sig, "--signals", "log_error")
    assert edges.returncode == 0, edges.stderr


def test_a_duplicate_with_other_content_says_so(tmp_path: Path) -> None:
    path = tmp_path / "s"
    evolog(path, "init")
    first = evolog(path, "append", "note", "--id", "n1", "--text", "hello")
    assert json.loads(first.stdout) == {"seq": 1, "id": "n1", "duplicate": False}
    same = evolog(path, "append", "note", "--id", "n1", "--text", "hello")
    assert json.loads(same.stdout) == {"seq": 1, "id": "n1", "duplicate": True, "differs": False}
    assert same.stderr == b""
    other = evolog(path, "append", stdin=b'{"kind":"note","id":"n1","text":"bye"}\n')
    assert json.loads(other.stdout) == [{"seq": 1, "id": "n1", "duplicate": True, "differs": True}]
    assert b"different content" in other.stderr and other.returncode == 0
    with EventLog(path) as log:
        assert [e.text for e in log.replay()] == ["hello"]  # type: ignore[attr-defined]


# Delivers SIGINT to the command itself the moment its imports reach the event log (where
# msgspec builds decoders in C; an interrupt there once crashed the interpreter).
_INTERRUPT_AT_IMPORT = """
import os, signal, sys
from importlib.abc import MetaPathFinder

class InterruptAt(MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "evolog.eventlog.wal._frames":
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, InterruptAt())
from evolog._entry import main
sys.argv = ["evolog", "--store", sys.argv[1], "append", '{"kind":"signal","signals":["a"]}']
sys.exit(main())
"""


def test_ctrl_c_during_start_up_exits_130_quietly_and_writes_nothing(tmp_path: Path) -> None:
    store = tmp_path / "s"
    EventLog(store, create=True).close()
    before = hash_tree(store)
    proc = subprocess.run(
        [sys.executable, "-c", _INTERRUPT_AT_IMPORT, str(store)],
        capture_output=True, cwd=REPO, timeout=60, check=False, preexec_fn=default_sigint,
    )  # fmt: skip
    assert proc.returncode == 130, proc.stderr.decode()
    assert proc.stderr == b"" and proc.stdout == b""
    assert hash_tree(store) == before
