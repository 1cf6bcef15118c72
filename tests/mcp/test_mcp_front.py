"""``evolog mcp``'s fast start: the handshake answered from the SDK's last answers while the
SDK loads, against the SDK serving alone (``EVOLOG_MCP_FAST_START=0``)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

from _server_util import new_store
from evolog.eventlog import Attempt, EventLog, Outcome
from mcp import Client
from mcp.client.stdio import StdioServerParameters


def _seed(store: str) -> None:
    with EventLog(store) as log:
        for i in range(3):
            log.append(
                Attempt(
                    id=f"a{i}",
                    gene="gene_retry",
                    signals=["test_failure"],
                    task="fix the flaky timeout test",
                )
            )
            log.append(Outcome(action_id=f"a{i}", status="success", delta=1.0))


def _env(cache: Path, fast: bool) -> dict[str, str]:
    return {**os.environ, "XDG_CACHE_HOME": str(cache), "EVOLOG_MCP_FAST_START": "01"[fast]}


async def _session(store: str, env: dict[str, str]) -> dict[str, Any]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "evolog", "--store", store, "mcp"], env=env
    )
    async with Client(params) as c:
        tools = [t.model_dump(mode="json") for t in (await c.list_tools()).tools]
        prompts = (await c.list_prompts()).model_dump(mode="json")
        resources = (await c.list_resources()).model_dump(mode="json")
        calls = []
        genes = [{"type": "Gene", "id": "gene_retry"}]
        for name, args in (
            ("advise", {"signals": ["test_failure"], "genes": genes}),
            ("sql", {"query": "SELECT count(*) AS n FROM attempts"}),
            ("sql", {"query": "DELETE FROM events"}),
            ("route", {"task": "fix a flaky test"}),
        ):
            r = await c.call_tool(name, args)
            content = [x.model_dump(mode="json") for x in r.content]
            if name == "advise":  # its scores decay with the time since each outcome
                answer = json.loads(content[0]["text"])
                content = [answer[k] for k in ("preferredGeneId", "status", "explanation")]
            calls.append((r.is_error, content))
        return {
            "server": c.server_info.model_dump(mode="json") if c.server_info else None,
            "capabilities": c.server_capabilities.model_dump(mode="json"),
            "instructions": c.instructions,
            "protocol": c.protocol_version,
            "tools": tools,
            "prompts": prompts,
            "resources": resources,
            "calls": calls,
        }


def test_fast_start_answers_as_the_sdk_alone(tmp_path: Path) -> None:
    """A cold start (which fills the cache), a warm one (answered from it) and the SDK
    alone give the same session, handshake and tool answers alike."""
    cache = tmp_path / "cache"
    results = []
    for i, fast in enumerate((False, True, True)):
        store = new_store(tmp_path / f"s{i}")
        _seed(store)
        results.append(asyncio.run(_session(store, _env(cache, fast))))
        if i == 1:
            saved = json.loads((cache / "evolog" / "mcp-handshake.json").read_text())
            tools = saved["lists"]["tools/list"]["tools"]
            assert {t["name"] for t in tools} >= {"recall", "remember"}
    sdk, cold, warm = results
    assert sdk == cold == warm
    assert sdk["calls"][1][0] is False and sdk["calls"][2][0] is True  # read-only sql


def _send(stdin: IO[str], message: dict[str, Any]) -> None:
    stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    stdin.flush()


def _read(stdout: IO[str]) -> dict[str, Any]:
    line = stdout.readline()
    assert line, "the server closed its stdout"
    message: dict[str, Any] = json.loads(line)
    return message


def _handshake(proc: subprocess.Popen[str]) -> list[dict[str, Any]]:
    """initialize, initialized, tools/list; then every message up to the tools/list answer."""
    assert proc.stdin is not None and proc.stdout is not None
    init = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    }
    _send(proc.stdin, {"id": 1, "method": "initialize", "params": init})
    assert _read(proc.stdout)["id"] == 1
    _send(proc.stdin, {"method": "notifications/initialized"})
    _send(proc.stdin, {"id": 2, "method": "tools/list", "params": {}})
    seen = [_read(proc.stdout)]
    while seen[-1].get("id") != 2:
        seen.append(_read(proc.stdout))
    return seen


def test_a_stale_cached_tool_list_is_corrected_and_announced(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s")
    cache = tmp_path / "cache"
    env = _env(cache, True)
    cmd = [sys.executable, "-m", "evolog", "--store", store, "mcp"]

    def start() -> subprocess.Popen[str]:
        return subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True
        )

    proc = start()
    real = _handshake(proc)[-1]["result"]
    proc.communicate(timeout=60)
    path = cache / "evolog" / "mcp-handshake.json"
    saved = json.loads(path.read_text())
    assert saved["lists"]["tools/list"] == real
    stale = {
        "tools": [{"name": "gone", "description": "an old tool", "inputSchema": {"type": "object"}}]
    }
    path.write_text(json.dumps({**saved, "lists": {**saved["lists"], "tools/list": stale}}))

    proc = start()
    assert proc.stdin is not None and proc.stdout is not None
    assert _handshake(proc)[-1]["result"] == stale  # only the cache could have said that
    assert _read(proc.stdout) == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    _send(proc.stdin, {"id": 3, "method": "tools/list", "params": {}})
    assert _read(proc.stdout)["result"] == real
    proc.communicate(timeout=60)
    assert json.loads(path.read_text())["lists"]["tools/list"] == real


def test_a_damaged_cache_only_costs_the_fast_start(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s")
    cache = tmp_path / "cache"
    (cache / "evolog").mkdir(parents=True)
    (cache / "evolog" / "mcp-handshake.json").write_text("{not json")
    proc = subprocess.Popen(
        [sys.executable, "-m", "evolog", "--store", store, "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=_env(cache, True),
        text=True,
    )
    tools = _handshake(proc)[-1]["result"]["tools"]
    assert "recall" in {t["name"] for t in tools}
    proc.communicate(timeout=60)
    saved = json.loads((cache / "evolog" / "mcp-handshake.json").read_text())
    assert saved["lists"]["tools/list"]["tools"] == tools


def test_the_shipped_handshake_is_what_the_sdk_answers() -> None:
    """evolog/mcp/handshake.json (what a first start answers with, before any cache) equals
    the installed SDK's own answers, byte for byte in its canonical form."""
    from evolog.mcp._seed import seed_path, seed_text

    with open(seed_path(), encoding="utf-8") as f:
        shipped = f.read()
    assert shipped == seed_text(), (
        "evolog/mcp/handshake.json is out of date: "
        "python -m evolog.mcp._seed > evolog/mcp/handshake.json"
    )


def test_a_first_start_answers_as_the_sdk_alone(tmp_path: Path) -> None:
    """With no cache at all (right after an install) the fast start's session, answered from
    the shipped handshake, is the SDK's."""
    results = []
    for i, fast in enumerate((False, True)):
        store = new_store(tmp_path / f"s{i}")
        _seed(store)
        cache = tmp_path / f"cache{i}"
        assert not cache.exists()
        results.append(asyncio.run(_session(store, _env(cache, fast))))
    assert results[0] == results[1]
