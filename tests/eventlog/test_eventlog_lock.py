"""Waiting for a held lock: real processes hold the store's flock (or are stopped with it).

The hook gives up within its bounded time and keeps the payload in the dead letter;
interactive commands name the holder on stderr while they wait, or give up after
``--lock-timeout``; nothing is written by a command that gave up.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from evolog.eventlog import EventLog, LockTimeoutError, Note

HOLD = (
    "import fcntl, os, sys, time\n"
    "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)\n"
    "fcntl.flock(fd, fcntl.LOCK_EX)\n"
    "print('held', flush=True)\n"
    "time.sleep(120)\n"
)

BATCH_WRITER = (
    "import sys\n"
    "from evolog.eventlog import EventLog, Note\n"
    "log = EventLog(sys.argv[1], durability='batch', group_ms=60_000)\n"
    "log.append(Note(text='held open'))\n"  # opens a group: the write lock stays held
    "print('held', flush=True)\n"
    "sys.stdin.read()\n"
    "log.close()\n"
)

PROMPT = {"session_id": "s1", "hook_event_name": "UserPromptSubmit", "prompt": "fix it"}


def _evolog(store: Path, *args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evolog", "--store", str(store), *args],
        capture_output=True,
        text=True,
        timeout=60,
        **kw,  # type: ignore[call-overload]
    )


@pytest.fixture
def made(store: Path) -> Path:
    EventLog(store, create=True).close()
    return store


def _hold(path: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    return proc


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.kill()
    proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


@pytest.fixture
def holder(made: Path) -> Iterator[subprocess.Popen[str]]:
    proc = _hold(made / "write.lock")
    yield proc
    _stop(proc)


def _count(store: Path) -> int:
    with EventLog(store) as log:
        return len(list(log.replay()))


def _dead_letters(store: Path) -> list[dict[str, object]]:
    path = store / "dead-letter.ndjson"
    lines = path.read_text().splitlines() if path.exists() else []
    return [json.loads(line) for line in lines]


def test_hook_gives_up_on_a_held_write_lock_within_about_two_seconds(
    made: Path, holder: subprocess.Popen[str]
) -> None:
    env = {k: v for k, v in os.environ.items() if k != "EVOLOG_HOOK_LOCK_TIMEOUT"}
    start = time.monotonic()
    result = _evolog(made, "hook", "claude-code", input=json.dumps(PROMPT), env=env)
    took = time.monotonic() - start
    assert result.returncode == 0
    assert 1.9 <= took < 8, took  # the default bound is 2 s (plus interpreter start-up)
    assert len(result.stderr.strip().splitlines()) == 1
    assert f"pid {holder.pid}" in result.stderr
    (letter,) = _dead_letters(made)
    assert json.loads(str(letter["payload"])) == PROMPT
    assert "LockTimeoutError" in str(letter["error"])
    _stop(holder)
    assert _count(made) == 0


def test_hook_lock_timeout_is_configurable(made: Path, holder: subprocess.Popen[str]) -> None:
    env = {**os.environ, "EVOLOG_HOOK_LOCK_TIMEOUT": "0.2"}
    result = _evolog(made, "hook", "claude-code", input=json.dumps(PROMPT), env=env)
    assert result.returncode == 0
    (letter,) = _dead_letters(made)
    # The bound the lock wait used, as its error states it: the wall time of the whole hook
    # process (interpreter start-up included) says little on a loaded machine.
    waited = re.search(r"expected the lock within (\d+\.\d) s", str(letter["error"]))
    assert waited is not None, letter
    assert float(waited[1]) <= 0.2, letter


def test_hook_gives_up_on_a_stopped_batch_writer(made: Path) -> None:
    writer = subprocess.Popen(
        [sys.executable, "-c", BATCH_WRITER, str(made)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout is not None and writer.stdin is not None
    try:
        assert writer.stdout.readline() == "held\n"
        os.kill(writer.pid, signal.SIGSTOP)
        env = {**os.environ, "EVOLOG_HOOK_LOCK_TIMEOUT": "1"}
        start = time.monotonic()
        result = _evolog(made, "hook", "claude-code", input=json.dumps(PROMPT), env=env)
        assert result.returncode == 0
        assert time.monotonic() - start < 6
        assert f"pid {writer.pid}" in result.stderr
        assert len(_dead_letters(made)) == 1
    finally:
        os.kill(writer.pid, signal.SIGCONT)
        writer.stdin.close()
        assert writer.wait(timeout=60) == 0
        writer.stdout.close()
    assert _count(made) == 1  # the batch writer's own event, committed at its close


def test_append_names_the_holder_while_it_waits_then_appends(
    made: Path, holder: subprocess.Popen[str]
) -> None:
    append = subprocess.Popen(
        [sys.executable, "-m", "evolog", "--store", str(made), "append", '{"kind":"note"}'],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert append.stderr is not None
    line = append.stderr.readline()  # printed while it waits, before the lock is free
    assert f"held by pid {holder.pid}" in line and "waiting" in line
    assert append.poll() is None
    _stop(holder)
    out, rest = append.communicate(timeout=60)
    err = line + rest
    assert append.returncode == 0, err
    assert json.loads(out)["seq"] == 1
    assert err == line  # one line in all


def test_append_lock_timeout_gives_up_and_writes_nothing(
    made: Path, holder: subprocess.Popen[str]
) -> None:
    result = _evolog(made, "append", "--lock-timeout", "0.3", '{"kind":"note"}')
    assert result.returncode == 1
    err = result.stderr.strip().splitlines()
    assert err[-1].startswith("evolog: error: ") and f"pid {holder.pid}" in err[-1]
    assert "within 0.3 s" in err[-1]
    _stop(holder)
    assert _count(made) == 0


def test_seal_names_the_holder_of_the_seal_lock(made: Path) -> None:
    with EventLog(made) as log:
        log.append(Note(text="x"))
    proc = _hold(made / "seal.lock")
    try:
        result = _evolog(made, "seal", "--lock-timeout", "0.8")
        assert result.returncode == 1
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 2  # "waiting ..." then the error
        assert all(f"pid {proc.pid}" in line for line in lines)
        assert "[Errno" not in result.stderr
    finally:
        _stop(proc)
    assert _evolog(made, "seal").returncode == 0


def test_library_lock_timeout(made: Path, holder: subprocess.Popen[str]) -> None:
    seen: list[str] = []
    with EventLog(made, lock_timeout=0.7, on_lock_wait=seen.append) as log:
        with pytest.raises(LockTimeoutError) as info:
            log.append(Note(text="x"))
        assert info.value.holder == holder.pid
        assert len(seen) == 1 and f"pid {holder.pid}" in seen[0]
        _stop(holder)
        assert log.append(Note(text="y")) == 1


def test_close_after_an_append_does_not_fail_on_a_held_lock(made: Path) -> None:
    log = EventLog(made, lock_timeout=0.2)
    assert log.append(Note(id="x1", text="x")) == 1  # its id waits to be indexed (in a group)
    proc = _hold(made / "write.lock")
    try:
        log.close()  # appended and acknowledged: closing must not report a failure
    finally:
        _stop(proc)
    with EventLog(made) as again:
        assert again.append_receipts([Note(id="x1")])[0].duplicate
    assert _count(made) == 1
