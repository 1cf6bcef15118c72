"""``evolog mcp`` over stdio and ``/mcp`` over streamable HTTP, driven by the mcp SDK's client."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from _server_util import LiveServer, new_store

pytest.importorskip("mcp", reason="the server extra (evolog[server]) is not installed")

from evolog.eventlog import Attempt, EventLog, Outcome
from mcp import Client
from mcp.client.stdio import StdioServerParameters

TOOLS = {"advise", "recall", "record_outcome", "remember", "route", "search_events", "sql"}


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


async def _session(target: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    async with Client(target) as c:
        tools = (await c.list_tools()).tools
        out["tools"] = {t.name: t for t in tools}

        async def call(name: str, args: dict[str, Any]) -> tuple[bool, Any]:
            r = await c.call_tool(name, args)
            text = r.content[0].text  # type: ignore[union-attr]
            return r.is_error, (text if r.is_error else json.loads(text))

        out["advise"] = await call(
            "advise", {"signals": ["test_failure"], "genes": [{"type": "Gene", "id": "gene_retry"}]}
        )
        out["sql"] = await call("sql", {"query": "SELECT count(*) AS n FROM attempts"})
        out["sql_refused"] = await call("sql", {"query": "DELETE FROM events"})
        out["search"] = await call(
            "search_events", {"text": "TIMEOUT", "kinds": ["attempt"], "limit": 2}
        )
        out["search_bad"] = await call("search_events", {"kinds": ["nope"]})
        out["route"] = await call("route", {"task": "fix a flaky test"})
        out["outcome"] = await call(
            "record_outcome", {"status": "success", "action_id": "a9", "supported_by": ["note-1"]}
        )
        out["outcome_bad"] = await call("record_outcome", {"status": "great"})
        lesson = {"branch": "deploy", "text": "run the blue-green script, then check /health"}
        out["remember"] = await call("remember", lesson)
        query = {"query": "how do I deploy with the blue-green script", "action_id": "task-7"}
        out["recall"] = await call("recall", query)
        out["credit"] = await call("record_outcome", {"status": "success", "action_id": "task-7"})
    return out


def _check(out: dict[str, Any], store: str) -> None:
    assert set(out["tools"]) >= TOOLS
    for name in TOOLS:
        tool = out["tools"][name]
        assert "Example" in (tool.description or ""), name
        assert tool.input_schema["type"] == "object"
    assert out["tools"]["sql"].annotations.read_only_hint is True
    assert out["advise"][0] is False and out["advise"][1]["preferredGeneId"] == "gene_retry"
    assert out["sql"] == (
        False,
        {"columns": ["n"], "rows": [{"n": 3}], "row_count": 1, "truncated": False},
    )
    assert out["sql_refused"][0] is True and "read-only" in out["sql_refused"][1]
    err, found = out["search"]
    assert not err and [e["id"] for e in found["events"]] == ["a2", "a1"]
    assert out["search_bad"][0] is True and "kinds" in out["search_bad"][1]
    assert out["route"][1]["path"] == "zero_shot"
    assert out["outcome"][0] is False and out["outcome"][1]["seq"] == 7
    assert out["outcome_bad"][0] is True
    item = out["remember"][1]["item"]
    assert [i["id"] for i in out["recall"][1]["items"]] == [item]
    assert out["credit"] == (
        False,
        {"seq": out["credit"][1]["seq"], "id": out["credit"][1]["id"], "credited": [item]},
    )
    with EventLog(store) as log:
        events = {e.seq: e for e in log.replay()}
    first = events[out["outcome"][1]["seq"]]
    assert (first.action_id, first.supported_by) == ("a9", ["note-1"])  # type: ignore[attr-defined]
    credit = events[out["credit"][1]["seq"]]
    assert (credit.supported_by, credit.delta) == ([item], 1.0)  # type: ignore[attr-defined]


def test_mcp_over_stdio(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s")
    _seed(store)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "evolog", "--store", store, "mcp"], env=dict(os.environ)
    )
    _check(asyncio.run(_session(params)), store)


def test_mcp_over_http_inside_serve(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s")
    _seed(store)
    with LiveServer(store) as server:
        out = asyncio.run(_session(server.url + "/mcp"))
    _check(out, store)


def test_mcp_over_http_needs_a_write_token(tmp_path: Path) -> None:
    import httpx

    store = new_store(tmp_path / "s")
    token = "write-token-0123456789abcdef"
    with LiveServer(store, env={"EVOLOG_TOKEN": token}) as server:
        r = httpx.post(
            server.url + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        )
        assert r.status_code == 401 and r.json()["field"] == "Authorization"
