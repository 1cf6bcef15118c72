"""The local worker as a real process: its auth, bad payloads, several sessions at once, the
``SessionStart`` command that posts to it with curl or falls back to the command hook (which
starts it), and one worker per store."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from _server_util import free_port

from evolog import Memory
from evolog.worker._files import read_token
from evolog.worker._settings import session_start

EVOLOG = str(Path(sys.executable).with_name("evolog"))


def _evolog(store: str, *args: str, port: int, check: bool = True) -> dict[str, Any]:
    env = {**os.environ, "EVOLOG_WORKER_PORT": str(port)}
    done = subprocess.run([EVOLOG, "--store", store, *args], env=env, capture_output=True,
                          text=True, check=check)  # fmt: skip
    out: dict[str, Any] = json.loads(done.stdout)
    return out


def _events(store: str) -> list[dict[str, Any]]:
    out = subprocess.run([EVOLOG, "--store", store, "replay"], capture_output=True, text=True,
                         check=True).stdout  # fmt: skip
    return [json.loads(line) for line in out.splitlines()]


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    store = str(tmp_path_factory.mktemp("worker") / "store")
    with Memory(store) as memory:
        memory.remember("proj", "ORCA-12: build the gizmo with make -j4")
    port = free_port()
    first = _evolog(store, "worker", "start", "--dream-after", "-1", port=port)
    assert first["started"] is True and first["ready"] is True
    try:
        yield store, port
    finally:
        stopped = _evolog(store, "worker", "stop", port=port)
        assert stopped["stopped"] is True
        assert _evolog(store, "worker", "status", port=port, check=False)["running"] is False


def _post(port: int, body: bytes, token: str | None) -> httpx.Response:
    headers = {"content-type": "application/json"}
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    return httpx.post(f"http://127.0.0.1:{port}/hook/claude-code", content=body,
                      headers=headers, timeout=30)  # fmt: skip


def test_one_worker_per_store(worker: tuple[str, int]) -> None:
    store, port = worker
    again = _evolog(store, "worker", "start", port=port)
    status = _evolog(store, "worker", "status", port=port)
    assert again["started"] is False and again["pid"] == status["pid"]
    assert status["hook_url"] == f"http://127.0.0.1:{port}/hook/claude-code"
    assert os.stat(Path(store, "worker", "token")).st_mode & 0o777 == 0o600


def test_the_hook_route_refuses_strangers_and_bad_payloads(worker: tuple[str, int]) -> None:
    store, port = worker
    before = len(_events(store))
    prompt = json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": "x",
                         "prompt": "build the gizmo"}).encode()  # fmt: skip
    none = _post(port, prompt, None)
    assert none.status_code == 401 and "Authorization" in none.json()["error"]
    assert _post(port, prompt, "not-the-token").status_code == 401
    bad = _post(port, b"{not json", read_token(store))
    assert bad.status_code == 400 and "expected a JSON hook payload" in bad.json()["error"]
    listed = _post(port, b"[1, 2]", read_token(store))
    assert listed.status_code == 400
    assert listed.json()["error"] == "expected a JSON object as the hook payload; got list"
    assert len(_events(store)) == before


def test_several_sessions_at_once_are_each_recorded_whole(worker: tuple[str, int]) -> None:
    store, port = worker
    token = read_token(store)

    def session(n: int) -> list[httpx.Response]:
        sid = f"par-{n}"
        payloads: list[dict[str, Any]] = [
            {"hook_event_name": "UserPromptSubmit", "session_id": sid, "prompt": "build the gizmo"}
        ]
        for k in range(3):
            payloads.append({"hook_event_name": "PostToolUse", "session_id": sid,
                             "tool_name": "Bash", "tool_use_id": f"t{n}-{k}",
                             "tool_input": {"command": f"make step{k}"},
                             "tool_response": {"stdout": "ok", "stderr": ""}})  # fmt: skip
        payloads.append({"hook_event_name": "Stop", "session_id": sid})
        return [_post(port, json.dumps(p).encode(), token) for p in payloads]

    answers: dict[int, list[httpx.Response]] = {}
    threads = [threading.Thread(target=lambda n=n: answers.update({n: session(n)}))
               for n in range(6)]  # fmt: skip
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for n in range(6):
        assert [r.status_code for r in answers[n]] == [200] * 5
        # The prompt's answer is the context the command hook would print.
        context = answers[n][0].json()["hookSpecificOutput"]["additionalContext"]
        assert "ORCA-12" in context
    # Stop is answered before it is recorded: wait for the six outcomes.
    deadline = time.monotonic() + 60
    while True:
        events = _events(store)
        done = {e["session"] for e in events if e["kind"] == "outcome"}
        if {f"par-{n}" for n in range(6)} <= done or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    for n in range(6):
        mine = [e for e in events if e.get("session") == f"par-{n}"]
        (attempt,) = [e for e in mine if e["kind"] == "attempt"]
        steps = [e for e in mine if e["kind"] == "step"]
        assert [s["action"] for s in steps] == [f"Bash make step{k}" for k in range(3)]
        assert {s["action_id"] for s in steps} == {attempt["action_id"]}
        (outcome,) = [e for e in mine if e["kind"] == "outcome"]
        assert (outcome["action_id"], outcome["status"]) == (attempt["action_id"], "success")
    assert not Path(store, "dead-letter.ndjson").exists()


@pytest.mark.skipif(shutil.which("curl") is None, reason="the SessionStart command uses curl")
def test_session_start_posts_with_curl_else_the_command_hook_starts_the_worker(
    tmp_path: Path,
) -> None:
    store = str(tmp_path / "it's a store")  # the command quotes what the shell would split
    with Memory(store) as memory:
        memory.remember("proj", "ORCA-12: build the gizmo with make -j4")
    port = free_port()
    command = session_start(store, port, f"{EVOLOG} hook claude-code")
    env = {**os.environ, "EVOLOG_WORKER_DREAM_AFTER": "-1"}

    def start(n: int) -> dict[str, Any]:
        payload = {"hook_event_name": "SessionStart", "session_id": f"s{n}", "cwd": "/w/proj",
                   "source": "startup"}  # fmt: skip
        done = subprocess.run(["sh", "-c", command], input=json.dumps(payload), env=env,
                              capture_output=True, text=True, check=True, timeout=60)  # fmt: skip
        out: dict[str, Any] = json.loads(done.stdout)
        return out

    try:
        # No worker: curl is refused, the command hook answers and starts the worker.
        assert "ORCA-12" in start(1)["hookSpecificOutput"]["additionalContext"]
        status = _evolog(store, "worker", "status", port=port)
        assert status["running"] is True
        # Now curl reaches the worker, which answers the same.
        assert "ORCA-12" in start(2)["hookSpecificOutput"]["additionalContext"]
        assert _evolog(store, "worker", "status", port=port)["pid"] == status["pid"]
        auth = {"authorization": f"Bearer {read_token(store)}"}
        metrics = httpx.get(f"http://127.0.0.1:{port}/metrics", headers=auth, timeout=30).text
        assert 'evolog_http_requests_total{route="hook",status="200"} 1' in metrics
    finally:
        _evolog(store, "worker", "stop", port=port)
    starts = [e for e in _events(store) if e["kind"] == "signal"]
    assert [e["session"] for e in starts] == ["s1", "s2"]  # each recorded once
    assert os.stat(Path(store, "worker", "worker.log")).st_mode & 0o777 == 0o600


def test_a_record_naming_another_program_is_no_worker(tmp_path: Path) -> None:
    from evolog.worker._files import Record, write_record

    store = str(tmp_path / "store")
    Memory(store).close()
    write_record(store, Record(pid=os.getpid(), port=1, ready=True))  # alive, but not a worker
    assert _evolog(store, "worker", "status", port=1, check=False)["running"] is False


def test_the_session_start_hook_with_a_worker_running_stays_lean(worker: tuple[str, int]) -> None:
    store, port = worker
    code = (
        "import sys\n"
        "from evolog.cli._main import main\n"
        "code = main(['--store', sys.argv[1], 'hook', 'claude-code', '--start-worker'])\n"
        "names = ('starlette', 'uvicorn', 'mcp', 'duckdb', 'pyarrow', 'anthropic')\n"
        "heavy = sorted(m for m in names if m in sys.modules)\n"
        "print(code, heavy)\n"
    )
    payload = json.dumps({"hook_event_name": "SessionStart", "session_id": "lean", "cwd": "/w"})
    env = {**os.environ, "EVOLOG_WORKER_PORT": str(port)}
    done = subprocess.run([sys.executable, "-c", code, store], input=payload, env=env,
                          capture_output=True, text=True, check=True)  # fmt: skip
    assert done.stdout.splitlines()[-1] == "0 []"
    assert _evolog(store, "worker", "status", port=port)["running"] is True


@pytest.mark.parametrize(
    ("args", "env", "error"),
    [
        (["start", "--port", "0"], {}, "--port: expected a TCP port from 1 to 65535; got 0"),
        (["start"], {"EVOLOG_WORKER_PORT": "eighty"},
         "EVOLOG_WORKER_PORT: expected a TCP port from 1 to 65535; got 'eighty'"),
        (["run"], {"EVOLOG_WORKER_DREAM_AFTER": "soon"},
         "EVOLOG_WORKER_DREAM_AFTER: expected seconds (a number); got 'soon'"),
        (["start", "--evolve", "ace >>"], {}, "expression 'ace >>': expected a strategy name"),
        (["status"], {}, None),
        (["stop"], {}, None),
    ],
)  # fmt: skip
def test_a_refused_start_and_a_status_leave_no_store_behind(
    tmp_path: Path, args: list[str], env: dict[str, str], error: str | None
) -> None:
    store = tmp_path / "none"
    done = subprocess.run([EVOLOG, "--store", str(store), "worker", *args],
                          env={**os.environ, **env}, capture_output=True, text=True)  # fmt: skip
    if error is None:
        assert done.returncode == (1 if args == ["status"] else 0)
        assert json.loads(done.stdout)["store"] == str(store)
    else:
        assert done.returncode == 2
        assert done.stderr.startswith(f"evolog: error: {error}")
        assert done.stderr.count("\n") == 1
    assert not store.exists()


def test_the_worker_dreams_then_evolves_after_a_stop(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    Memory(store).close()
    port = free_port()
    _evolog(store, "worker", "start", "--dream-after", "0.1", "--evolve", "ace >> reme", port=port)
    token = read_token(store)
    try:
        for payload in (
            {"hook_event_name": "UserPromptSubmit", "session_id": "e", "prompt": "tidy the logs"},
            {"hook_event_name": "PostToolUse", "session_id": "e", "tool_name": "Bash",
             "tool_use_id": "t1", "tool_input": {"command": "logrotate -f"},
             "tool_response": {"stdout": "rotated", "stderr": ""}},
            {"hook_event_name": "Stop", "session_id": "e"},
        ):  # fmt: skip
            assert _post(port, json.dumps(payload).encode(), token).status_code == 200
        log = Path(store, "worker", "worker.log")
        deadline = time.monotonic() + 60
        while "evolved in" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        _evolog(store, "worker", "stop", port=port)
    text = log.read_text()
    assert text.index("dreamt in") < text.index("evolved in"), text
    assert [e["kind"] for e in _events(store) if e["kind"] == "dream_end"] == ["dream_end"]


def _on_a_thread(work: Any) -> Any:
    """``work()`` off the main thread, as the worker's hook thread runs it (no SIGALRM)."""
    box: list[Any] = []
    thread = threading.Thread(target=lambda: box.append(work()))
    thread.start()
    thread.join(120)
    assert box, "the work did not finish"
    return box[0]


def test_a_recall_past_the_answers_due_time_injects_nothing_and_is_recorded_as_none(
    tmp_path: Path,
) -> None:
    """Off the main thread SIGALRM cannot bound recall; the worker's due time does: a recall
    that would inject is given up on, and the attempt names nothing the agent was not shown."""
    from evolog.hook._hooks import answer_claude_code
    from evolog.hook._recall import _Overrun, answer_by, within

    store = str(tmp_path / "store")
    with Memory(store) as memory:
        memory.remember("proj", "ORCA-12: build the gizmo with make -j4")

    def prompt(session: str, due: float | None) -> bytes:
        payload = {"hook_event_name": "UserPromptSubmit", "session_id": session, "cwd": "/w/proj",
                   "prompt": "how do I build the gizmo with make"}  # fmt: skip
        if due is None:
            return answer_claude_code(payload, store)
        with answer_by(due):
            return answer_claude_code(payload, store)

    assert b"ORCA-12" in _on_a_thread(lambda: prompt("in-time", None))
    assert _on_a_thread(lambda: prompt("late", time.monotonic())) == b""
    events = _events(store)
    attempts = {e["session"]: e for e in events if e["kind"] == "attempt"}
    assert attempts["in-time"]["supported_by"] and not attempts["late"].get("supported_by")
    assert not attempts["late"].get("decided_by")
    recalls = [e["session"] for e in events if e["kind"] == "recall"]
    assert recalls == ["in-time"]

    def slow() -> None:
        with pytest.raises(_Overrun):
            within(0.05, lambda: time.sleep(30))  # abandoned, not waited for

    _on_a_thread(lambda: slow() or True)


def test_a_worker_of_another_version_is_reported_and_replaced_at_the_next_start(
    tmp_path: Path,
) -> None:
    from importlib.metadata import version

    from evolog.doctor._checks import check_worker
    from evolog.worker._files import _alive

    store = str(tmp_path / "store")
    Memory(store).close()
    port = free_port()
    first = _evolog(store, "worker", "start", "--dream-after", "-1", port=port)
    record_path = Path(store, "worker", "worker.json")
    try:
        record = json.loads(record_path.read_text())
        assert record["version"] == version("evolog") == first["version"]
        assert record["prefix"] == sys.prefix and os.path.isabs(record["executable"])
        assert check_worker(store).level == "ok"
        # What an evolog from before the upgrade wrote: no version, no environment.
        old = {"pid": record["pid"], "port": port, "host": "127.0.0.1", "ready": True}
        record_path.write_text(json.dumps(old))
        doctor = check_worker(store)
        assert doctor.level == "FIX" and "runs another evolog (version unrecorded" in doctor.text
        payload = json.dumps({"hook_event_name": "SessionStart", "session_id": "up", "cwd": "/w"})
        env = {**os.environ, "EVOLOG_WORKER_PORT": str(port), "EVOLOG_WORKER_DREAM_AFTER": "-1"}
        subprocess.run([EVOLOG, "--store", store, "hook", "claude-code", "--start-worker"],
                       input=payload, env=env, capture_output=True, text=True, check=True,
                       timeout=60)  # fmt: skip
        now = _evolog(store, "worker", "status", port=port)
        assert now["pid"] != first["pid"] and now["version"] == version("evolog")
        assert not _alive(first["pid"])
        assert check_worker(store).level == "ok"
    finally:
        _evolog(store, "worker", "stop", port=port)
