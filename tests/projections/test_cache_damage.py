"""Every cache file damaged by one flipped bit is detected and rebuilt (issue 26.5).

A real store gets every kind of cache file (traces, a dream, routes, recalls, advice, the
ledger, SQL); then, for each file under ``cache/`` and a few bit positions in it (first
byte, header, middle, last byte, one seeded at random), one bit is flipped in a copy of the
store and the answers are asked again: they must equal the undamaged store's, and the file
must have been rewritten or its damage noted in ``cache/damage.log``. Files that a process
keeps in memory once read (the tokenizer, the generic sample) are asked about in a fresh
process; the others through a fresh :class:`Memory`.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

import evolog
from evolog import Memory

_NOW = 1796161336329941  # advice as of a fixed clock: answers comparable across runs
_TASKS = [
    ("fix the failing import", "pin the dependency", "success"),
    ("repair the broken import", "pin the version", "success"),
    ("speed up the slow test suite", "run tests in parallel", "success"),
    ("make the flaky network test stable", "add retries", "failed"),
]
#: Files read once per process and kept: damaged in a copy, asked about in a new process.
_PROCESS_WIDE = ("bpe-", "null-")
_HERE = Path(__file__).resolve().parent  # a fresh process imports answers() from here
#: The edge checkpoint is DuckDB's file and write-ahead log: DuckDB checks their blocks and
#: entries itself, and a file it refuses is deleted and rebuilt (projections/_cache.py). A
#: byte it does not use for the data (a header field) may be flipped with no effect: for
#: these only the answers are compared.
_DUCKDB = "projections/"


def _strip(value: Any) -> Any:
    # The clock and the seqs of events appended by a question are not the cache's doing.
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in ("now", "now_us")}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def answers(store: str) -> str:
    """Everything the caches speed up, as canonical JSON."""
    out: dict[str, Any] = {}
    with Memory(store) as mem:
        for task in ("fix the failing import", "bake a cake"):
            out[f"route {task}"] = msgspec.to_builtins(mem.route(task))
        out["recall signals"] = msgspec.to_builtins(
            mem.recall("tests are slow", record=False, signals=["log_error"])
        )
        out["advise"] = msgspec.to_builtins(mem.advise(["log_error"], ["g0", "g1"], now=_NOW))
        view = mem.ledger()
        out["ledger"] = [msgspec.to_builtins(e) for e in view.entries()]
        out["ledger summary"] = msgspec.to_builtins(view.summary())
        # One query over the events and the edge checkpoint (DuckDB): SQL is the slow part.
        query = (
            "select signal_key, gene, success, fail, attempts, (select count(*) from events) n"
            " from edges order by 1, 2"
        )
        out["sql"] = mem.sql(query).to_pylist()
        out["dream"] = msgspec.to_builtins(mem.dream())  # nothing new: reads its watermark
    return json.dumps(_strip(out), sort_keys=True, default=str)


def _build(store: Path) -> None:
    with Memory(str(store)) as mem:
        for i, (task, action, status) in enumerate(_TASKS):
            mem.append(evolog.Signal(signals=["log_error"]))
            mem.append(evolog.Attempt(id=f"a{i}", gene=f"g{i % 2}", task=task))
            mem.append(evolog.Step(action_id=f"a{i}", index=0, action=action, ok=True))
            mem.append(evolog.Outcome(action_id=f"a{i}", status=status, delta=1.0))
        mem.remember("main", "pin dependencies when imports fail")
        mem.remember("main", "run slow tests in parallel workers")
        mem.dream()
    # The caches the questions use, written first by a process that has not imported numpy
    # (as a cold hook or CLI call is): only such a process takes the lean route that writes
    # the tokenizer and null-sample files; a worker of a parallel run may have numpy loaded.
    _in_new_process(store)
    answers(str(store))


def _current(cache: Path) -> list[str]:
    """The cache files the store uses now (not those of replaced checkpoint generations,
    nor locks and the damage log), relative to ``cache``."""
    from evolog.projections.graph._checkpoint import read_head

    head = read_head(str(cache / "graph"))
    assert head is not None
    generations = {head.generation, head.state_generation}
    found = []
    for path in sorted(cache.rglob("*")):
        name = path.name
        if not path.is_file() or not path.stat().st_size or name == "damage.log":
            continue
        stale = name.split("-", 1)[-1].split(".")[0] not in generations
        if path.parent.name == "graph" and "-" in name and stale:
            continue
        found.append(str(path.relative_to(cache)))
    return found


def _positions(size: int, rng: random.Random) -> list[int]:
    return sorted({0, min(size - 1, 12), size // 2, size - 1, rng.randrange(size)})


def _flip(path: Path, pos: int, bit: int) -> bytes:
    data = bytearray(path.read_bytes())
    data[pos] ^= 1 << bit
    path.write_bytes(bytes(data))
    return bytes(data)


def _in_new_process(store: Path) -> str:
    code = "import sys; from test_cache_damage import answers; print(answers(sys.argv[1]))"
    paths = [str(_HERE), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    run = subprocess.run(
        [sys.executable, "-c", code, str(store)], capture_output=True, text=True, env=env
    )
    assert run.returncode == 0, run.stderr
    return run.stdout.strip()


def _reported(store: Path, rel: str) -> bool:
    """Whether verify names the file (for one none of the questions opens)."""
    with Memory(str(store)) as mem:
        return any(rel in p for p in mem.verify().problems)


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    store = tmp_path_factory.mktemp("clean") / "s"
    _build(store)
    return store, answers(str(store))


def _kind(rel: str) -> str:
    return rel.split("-")[0].split(".")[0].split("/")[0]


#: Every kind of cache file the store of ``_build`` has; files of any other kind are flipped
#: under "other", so a new kind is damaged too before it is named here.
_KINDS = ("advice", "bpe", "graph", "ledger", "memory", "null", "projections", "vectors")


# One test per kind so that the workers of a parallel run share the flips (one test over
# every file was the suite's slowest).
@pytest.mark.parametrize("kind", [*_KINDS, "other"])
def test_every_cache_file_damaged_by_one_bit_is_rebuilt_with_the_same_answers(
    clean: tuple[Path, str], tmp_path: Path, kind: str
) -> None:
    store, expected = clean
    every = _current(store / "cache")
    files = [f for f in every if (_kind(f) if _kind(f) in _KINDS else "other") == kind]
    # Every kind is there, or the test would prove less than it says.
    assert files or kind == "other", f"no {kind} file in {every}"
    wrong = []
    for rel in files:
        rng = random.Random(f"26 {rel}")  # the same positions whichever kinds run
        size = (store / "cache" / rel).stat().st_size
        for pos in _positions(size, rng):
            copy = tmp_path / f"c{len(wrong)}"
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(store, copy)
            path = copy / "cache" / rel
            flipped = _flip(path, pos, rng.randrange(8))
            fresh = rel.startswith(_PROCESS_WIDE)
            try:
                got = _in_new_process(copy) if fresh else answers(str(copy))
            except Exception as exc:  # listed with the rest: every damaged file is named
                got = f"raised {exc!r}"
            log = copy / "cache" / "damage.log"
            noted = log.exists() and rel in log.read_text()
            rebuilt = not path.exists() or path.read_bytes() != flipped
            checks_itself = rel.startswith(_DUCKDB)
            kept = checks_itself or noted or rebuilt or _reported(copy, rel)
            if got != expected or not kept:
                wrong.append((rel, pos, "same" if got == expected else got[:60]))
            shutil.rmtree(copy)
    assert wrong == [], "\n".join(map(str, wrong))


def test_verify_reports_a_damaged_cache_and_the_damage_readers_rebuilt(
    clean: tuple[Path, str], tmp_path: Path
) -> None:
    store, expected = clean
    copy = tmp_path / "s"
    shutil.copytree(store, copy)
    (rows,) = (copy / "cache").glob("vectors-*.rows")
    _flip(rows, rows.stat().st_size // 2, 3)
    with Memory(str(copy)) as mem:
        report = mem.verify()
    assert not report.ok
    assert [p for p in report.problems if "cache/" in p] == [
        f"cache/{rows.name}: damaged (its checksum does not match); not used, rebuilt from "
        "the log on next use (or delete it)"
    ]
    assert answers(str(copy)) == expected
    with Memory(str(copy)) as mem:
        report = mem.verify()
    assert report.ok, report.problems
    assert any(rows.name in n and "rebuilt" in n for n in report.notes)
