"""The evolving-memory compatible routes (/cte), with the reference's defects fixed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

from _server_util import NDJSON, client, new_store


def _trace(goal: str, outcome: str = "success", **extra: Any) -> dict[str, Any]:
    actions = [
        {
            "reasoning": "the test times out",
            "action_payload": "TOOLCALL: raise the timeout",
            "result": "ok",
        },
        {
            "reasoning": "check it passes",
            "actionPayload": "TOOLCALL: run pytest",
            "result": "passed",
        },
    ]
    return {"goal": goal, "outcome": outcome, "confidence": 0.8, "actions": actions, **extra}


def test_traces_dream_route_nodes_and_export(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s")
    with client(store) as c:
        assert c.get("/cte/health").json() == {"status": "ok"}
        ids = [
            c.post("/cte/traces", json=_trace("fix the flaky timeout test")).json()
            for _ in range(3)
        ]
        assert all(set(i) == {"trace_id", "session_id"} for i in ids)
        assert len({i["session_id"] for i in ids}) == 3  # each trace its own session
        c.post(
            "/cte/traces",
            json=_trace("bake bread", "failure", source="sim_2d", tags=["domain:kitchen"]),
        )
        stats = c.get("/cte/stats").json()
        assert stats["traces"] == 4 and stats["sessions"] == 4 and stats["parent_nodes"] == 0
        r = c.post("/cte/dream/stream", json={}, headers={"accept": "text/event-stream"})
        events = [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: ")]
        names = [line[7:] for line in r.text.splitlines() if line.startswith("event: ")]
        assert names[0] == "started" and names[-1] == "completed" and "progress" in names
        assert events[-1]["traces_processed"] == 4 and events[-1]["nodes_created"] >= 1
        stats = c.get("/cte/stats").json()
        assert stats["parent_nodes"] >= 1 and stats["dream_cycles"] >= 1
        # Queries only read: the same query gives the same answer, top_k is honoured.
        first = c.get("/cte/query", params={"q": "the flaky timeout test fails"}).json()
        assert first == c.get("/cte/query", params={"q": "the flaky timeout test fails"}).json()
        assert first["path"] == "memory_traversal"
        node_id = first["entry_point"]["node_id"]
        routed = c.post("/cte/route", json={"query": "the flaky timeout test fails", "top_k": 1})
        assert routed.json()["entry_point"] == {
            k: first["entry_point"][k] for k in ("node_id", "goal", "summary")
        }
        node = c.get(f"/cte/nodes/{node_id}").json()
        assert node["type"] == "parent" and node["child_count"] >= 1 and node["success_rate"] == 1.0
        children = c.get(f"/cte/nodes/{node_id}/children").json()
        assert [ch["step_index"] for ch in children] == list(range(len(children)))
        child = c.get(f"/cte/nodes/{quote(children[0]['node_id'], safe='')}").json()
        assert child["type"] == "child" and child["parent_node_id"] == node_id
        traverse = c.get(f"/cte/nodes/{node_id}/traverse").json()
        assert traverse["node_id"] == node_id
        assert {e["type"] for e in traverse["edges_in"]} == {"is_child_of"}
        missing = c.get("/cte/nodes/nope")
        assert missing.status_code == 404 and missing.json()["detail"] == "Node not found"
        assert c.get("/cte/nodes/nope/children").json() == []
        assert c.get("/cte/domains").json() == {"domains": ["default", "kitchen"]}
        assert c.get("/cte/isa/version").json()["current"] == "1.0"
        r = c.get("/cte/export/training-data", params={"outcome": "success"})
        assert r.headers["content-disposition"] == "attachment; filename=training_data.jsonl"
        lines = [json.loads(x) for x in r.text.splitlines()]
        assert len(lines) == 6  # 3 successful traces x 2 actions
        assert [m["role"] for m in lines[0]["messages"]] == ["system", "user", "assistant"]
        assert lines[1]["messages"][2]["content"] == "TOOLCALL: run pytest"
        assert c.get("/cte/export/training-data", params={"source": "sim_2d"}).text.count("\n") == 2
        assert c.get("/cte/export/training-data", params={"min_actions": 3}).text == ""


def test_bad_values_are_422_naming_the_field(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s")
    with client(store) as c:
        for body, field in (
            ({"goal": "g", "outcome": "great"}, "outcome"),
            ({"goal": "g", "source": "mars"}, "source"),
            ({"goal": "g", "hierarchy_level": 7}, "hierarchy_level"),
            ({"outcome": "success"}, "goal"),
            ({"goal": "g", "actions": [{"reasoning": 1}]}, "actions[0].reasoning"),
        ):
            r = c.post("/cte/traces", json=body)
            assert r.status_code == 422 and r.json()["field"] == field, (body, r.json())
            assert r.json()["detail"]
        assert c.post("/cte/route", json={"query": "x", "top_k": 0}).json()["field"] == "top_k"
        assert c.get("/cte/query").json()["field"] == "q"
        assert (
            c.get("/cte/export/training-data", params={"outcome": "won"}).json()["field"]
            == "outcome"
        )
        assert c.get("/cte/stats").json()["traces"] == 0


def test_dreaming_a_domain_dreams_only_its_traces(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s")
    with client(store) as c:
        for goal in ("fix the flaky timeout test", "speed up the build"):
            c.post("/cte/traces", json=_trace(goal))
        for goal in ("bake bread", "boil pasta"):
            c.post("/cte/traces", json=_trace(goal, tags=["domain:kitchen", "oven"]))
        c.post("/cte/traces", json=_trace("water plants", tags=["domain:garden"]))
        nothing = c.post("/cte/domains/attic/dream")
        assert nothing.status_code == 200 and nothing.json()["traces_processed"] == 0
        kitchen = c.post("/cte/domains/kitchen/dream").json()
        assert set(kitchen) == {
            "domain", "journal_id", "traces_processed", "nodes_created", "nodes_merged"
        }  # fmt: skip
        assert kitchen["domain"] == "kitchen" and kitchen["traces_processed"] == 2
        goals = {n["entry_point"]["goal"] for n in _routes(c, ["bake bread", "boil pasta"])}
        assert goals == {"bake bread", "boil pasta"}
        assert c.get("/cte/stats").json()["dream_cycles"] == 1
        # The default domain: traces without a domain tag (and traces not posted here).
        c.post("/v1/events", content=b"".join(_native_trace()), headers=NDJSON)
        r = c.post("/cte/dream/stream", json={"domain": "default"},
                   headers={"accept": "text/event-stream"})  # fmt: skip
        done = json.loads(r.text.strip().splitlines()[-1][6:])
        assert done["domain"] == "default" and done["traces_processed"] == 3
        assert c.post("/cte/domains/kitchen/dream").json()["traces_processed"] == 0
        rest = c.post("/cte/dream/run").json()  # no domain: every undreamed trace
        assert rest["traces_processed"] == 1  # the garden's
        assert c.post("/cte/dream/run", json={}).json()["traces_processed"] == 0


def _routes(c: Any, queries: list[str]) -> list[dict[str, Any]]:
    return [c.get("/cte/query", params={"q": q}).json() for q in queries]


def _native_trace() -> list[bytes]:
    lines = [
        {"kind": "attempt", "id": "n1", "action_id": "n1", "task": "rotate the logs"},
        {"kind": "step", "id": "n1.s0", "action_id": "n1", "index": 0, "action": "logrotate"},
        {"kind": "outcome", "id": "n1.o", "action_id": "n1", "status": "success"},
    ]
    return [json.dumps(line).encode() + b"\n" for line in lines]
