"""One limit on the text of a query (``MAX_TASK_CHARS``): a route's task, a recall's query,
an advise signal. Refused before any work, naming the limit, from the Python API, HTTP and
MCP alike.

A 5.7 MB MCP ``route`` task once never answered (and kept a core busy after its client had
gone); 608 KB over HTTP took 11.9 s.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from _eventlog_util import REPO, hash_tree
from _server_util import JSON, client, new_store
from evolog.advice import MAX_TASK_CHARS, InvalidInputError, InvalidTaskError
from evolog.projections import ProjectionError

from evolog import Memory

_LIMIT_TEXT = re.escape(f"expected at most {MAX_TASK_CHARS} characters (MAX_TASK_CHARS)")
_GENES = [{"type": "Gene", "id": "gene_retry"}]


def _over(n: int = MAX_TASK_CHARS + 1) -> str:
    return ("flaky deploy " * (n // 13 + 1))[:n]


def test_the_python_api_refuses_a_task_past_the_limit(tmp_path: Path) -> None:
    store = Path(new_store(tmp_path / "s"))
    before = hash_tree(store)
    with Memory(store) as m:
        with pytest.raises(InvalidTaskError, match=rf"^task: {_LIMIT_TEXT}; got 16385$"):
            m.route(_over())
        with pytest.raises(ProjectionError, match=rf"^query: {_LIMIT_TEXT}; got 16385$"):
            m.recall(_over())  # it would record a recall event: none is written
        with pytest.raises(InvalidInputError, match=rf"^signals\[1\]: {_LIMIT_TEXT}; got 16385$"):
            m.advise(["ok", _over()], _GENES)
    assert hash_tree(store) == before


def test_text_at_the_limit_is_accepted(tmp_path: Path) -> None:
    with Memory(new_store(tmp_path / "s")) as m:
        at = _over(MAX_TASK_CHARS)
        assert m.route(at).path is not None
        assert m.recall(at, record=False).items == []
        assert m.advise([at], _GENES).to_json()["status"]


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/route", {"task": "x"}, "task"),
        ("/v1/recall", {"query": "x", "record": False}, "query"),
    ],
)
def test_http_refuses_in_the_decoder(tmp_path: Path, path: str, body: dict, field: str) -> None:
    big = _over(608_000)
    with client(new_store(tmp_path / "s")) as c:
        start = time.monotonic()
        r = c.post(path, content=json.dumps({**body, field: big}), headers=JSON)
        took = time.monotonic() - start
    assert r.status_code == 422, r.text
    assert r.json()["field"] == field and str(MAX_TASK_CHARS) in r.json()["error"], r.json()
    assert took < 5, took  # once 11.9 s: a sanity bound far from the expected milliseconds


def test_http_advise_names_the_signal(tmp_path: Path) -> None:
    with client(new_store(tmp_path / "s")) as c:
        body = {"signals": [_over(600_000)], "genes": _GENES}
        r = c.post("/v1/advise", content=json.dumps(body), headers=JSON)
    assert r.status_code == 422, r.text
    assert r.json()["field"] == "signals[0]", r.json()
    assert re.match(rf"signals\[0\]: {_LIMIT_TEXT}; got 600000$", r.json()["error"]), r.json()


def _rpc(proc: subprocess.Popen[bytes], msg: dict) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(msg).encode() + b"\n")
    proc.stdin.flush()


def _answer(proc: subprocess.Popen[bytes], ident: int) -> dict:
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        assert line, "the server closed stdout before answering"
        msg = json.loads(line)
        if msg.get("id") == ident:
            return msg  # type: ignore[no-any-return]


def _mcp(tmp_path: Path, fast_start: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "EVOLOG_MCP_FAST_START": fast_start}  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "evolog", "--store", new_store(tmp_path / "s"), "mcp"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO,
        env=env,
    )  # fmt: skip
    # A server that never answers is killed, so a read of its stdout ends (in a failure).
    killer = threading.Timer(90, proc.kill)
    killer.daemon = True
    killer.start()
    _rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"}}})  # fmt: skip
    assert "result" in _answer(proc, 1)
    _rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    return proc


def _finish(proc: subprocess.Popen[bytes]) -> None:
    proc.kill()
    proc.wait()
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()


def _call(proc: subprocess.Popen[bytes], ident: int, tool: str, **arguments: object) -> None:
    _rpc(proc, {"jsonrpc": "2.0", "id": ident, "method": "tools/call",
                "params": {"name": tool, "arguments": arguments}})  # fmt: skip


# "0": the SDK alone; "1": the front that answers the handshake while the SDK loads.
@pytest.mark.parametrize("fast_start", ["0", "1"])
def test_mcp_refuses_a_huge_route_task(tmp_path: Path, fast_start: str) -> None:
    proc = _mcp(tmp_path, fast_start)
    try:
        start = time.monotonic()
        _call(proc, 2, "route", task=_over(5_700_000))
        reply = _answer(proc, 2)
        took = time.monotonic() - start
        assert reply["result"]["isError"] is True
        text = reply["result"]["content"][0]["text"]
        assert f"task: expected at most {MAX_TASK_CHARS} characters" in text, text
        assert took < 10, took  # the SDK's own start-up included, on the front's path
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=10)
    finally:
        _finish(proc)


@pytest.mark.parametrize("fast_start", ["0", "1"])
def test_mcp_exits_soon_after_stdin_closes_while_a_tool_runs(
    tmp_path: Path, fast_start: str
) -> None:
    from evolog.mcp._server import EXIT_GRACE_S

    proc = _mcp(tmp_path, fast_start)
    try:
        _call(proc, 3, "ping_me_not", x=1)  # an unknown tool: answered once the SDK is up
        _answer(proc, 3)
        # A call that runs for many seconds on its thread (advice over 60000 genes: far past
        # the grace even on an idle machine, where 15000 could finish within it; a query
        # would be interrupted when the session ends, this cannot be).
        genes = [{"type": "Gene", "id": f"g{i}", "signals_match": [f"s{j}" for j in range(20)]}
                 for i in range(60_000)]  # fmt: skip
        _call(proc, 2, "advise", signals=["s1", "s2"], genes=genes)
        time.sleep(1.0)  # it is running
        assert proc.poll() is None
        assert proc.stdin is not None
        proc.stdin.close()
        start = time.monotonic()
        proc.wait(timeout=EXIT_GRACE_S + 10)
        assert time.monotonic() - start >= EXIT_GRACE_S - 0.5  # the grace was given
        assert proc.stderr is not None
        assert b"the client closed stdin" in proc.stderr.read()
    finally:
        _finish(proc)
