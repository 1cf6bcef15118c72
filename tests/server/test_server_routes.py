"""The native API (/v1) through Starlette's test client: bodies, errors, atomicity."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from _server_util import JSON, NDJSON, client, new_store
from evolog.eventlog import Attempt, EventLog, to_json

from evolog.server.routes._search import search_events


def _ndjson(events: list[dict[str, object]]) -> bytes:
    return b"\n".join(json.dumps(e).encode() for e in events) + b"\n"


def _replay(store: str) -> list[bytes]:
    with EventLog(store) as log:
        return [to_json(e) for e in log.replay()]


def test_append_one_and_a_batch_return_seqs_and_are_idempotent(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s")
    with client(store) as c:
        r = c.post("/v1/events", content=b'{"kind":"signal","signals":["log_error"]}', headers=JSON)
        assert r.status_code == 200 and r.json()["seq"] == 1 and not r.json()["duplicate"]
        batch = [{"kind": "attempt", "id": f"a{i}", "gene": "g"} for i in range(3)]
        r = c.post("/v1/events", content=_ndjson(batch), headers=NDJSON)
        assert r.status_code == 200
        assert [x["seq"] for x in r.json()["receipts"]] == [2, 3, 4]
        again = c.post("/v1/events", content=_ndjson(batch), headers=NDJSON).json()
        assert again["duplicates"] == 3 and [x["seq"] for x in again["receipts"]] == [2, 3, 4]
    assert len(_replay(store)) == 4


def test_a_bad_line_fails_the_whole_batch_and_names_line_and_field(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s")
    with client(store) as c:
        c.post("/v1/events", content=b'{"kind":"signal","signals":["x"]}', headers=JSON)
        before = _replay(store)
        lines = _ndjson([{"kind": "attempt", "id": "ok1"}]) + b'{"kind":"step","index":-1}\n'
        r = c.post("/v1/events", content=lines, headers=NDJSON)
        assert r.status_code == 422
        body = r.json()
        assert body["field"] == "index" and "event 2" in body["error"], body
        r = c.post("/v1/events", content=b'{"kind":"signal","signalz":[]}', headers=JSON)
        assert r.status_code == 422 and r.json()["field"] == "signalz"
        r = c.post("/v1/events", content=b'{"kind":"signal"', headers=JSON)
        assert r.status_code == 422 and "malformed JSON" in r.json()["error"]
        r = c.post(
            "/v1/events", content=b'{"kind":"signal"}', headers={"content-type": "text/plain"}
        )
        assert r.status_code == 415 and r.json()["field"] == "Content-Type"
    assert _replay(store) == before


def test_body_size_limit_is_413_and_nothing_is_written(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s")
    with client(store, max_body=1000) as c:
        big = _ndjson([{"kind": "note", "text": "x" * 100} for _ in range(20)])
        r = c.post("/v1/events", content=big, headers=NDJSON)
        assert r.status_code == 413 and r.json()["field"] == "body"
    assert _replay(store) == []


def test_events_after_a_seq_as_ndjson(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s")
    with EventLog(store) as log:
        log.append_many(
            [msgspec.convert({"kind": "note", "text": f"n{i}"}, _any()) for i in range(5)]
        )
        log.seal()
        log.append_many([msgspec.convert({"kind": "tick"}, _any()) for _ in range(3)])
    with client(store) as c:
        r = c.get("/v1/events?after=3")
        assert r.status_code == 200 and r.headers["content-type"].startswith("application/x-ndjson")
        seqs = [json.loads(line)["seq"] for line in r.text.splitlines()]
        assert seqs == [4, 5, 6, 7, 8]
        assert r.text.encode().splitlines() == _replay(store)[3:]
        r = c.get("/v1/events?after=1&limit=2&kinds=note")
        assert [json.loads(x)["seq"] for x in r.text.splitlines()] == [2, 3]
        assert r.headers["x-evolog-next-after"] == "3"
        r = c.get("/v1/events?after=0&kinds=tick,bogus")
        assert r.status_code == 422 and r.json()["field"] == "kinds"
        assert c.get("/v1/events?after=-1").json()["field"] == "after"
        assert c.get("/v1/events?after=99").text == ""


def _any() -> object:
    from evolog.eventlog import AnyEvent

    return AnyEvent


def _seed(store: str) -> None:
    from evolog.eventlog import Attempt, Outcome

    with EventLog(store) as log:
        for i in range(3):
            log.append(Attempt(id=f"a{i}", gene="gene_retry", signals=["test_failure"]))
            log.append(Outcome(action_id=f"a{i}", status="success", delta=1.0))


def test_sql_json_csv_arrow_and_refusals(tmp_path: Path) -> None:
    import pyarrow as pa

    store = new_store(tmp_path / "s")
    _seed(store)
    with client(store) as c:
        q = "SELECT kind, count(*) AS n FROM events GROUP BY kind ORDER BY kind"
        r = c.post("/v1/sql", json={"query": q})
        assert r.json()["rows"] == [{"kind": "attempt", "n": 3}, {"kind": "outcome", "n": 3}]
        r = c.post("/v1/sql", json={"query": q, "format": "csv"})
        assert r.text == "kind,n\nattempt,3\noutcome,3\n"
        r = c.post("/v1/sql", json={"query": q, "format": "arrow"})
        table = pa.ipc.open_stream(r.content).read_all()
        assert table.to_pylist() == [{"kind": "attempt", "n": 3}, {"kind": "outcome", "n": 3}]
        r = c.post("/v1/sql", json={"query": "SELECT seq FROM events", "max_rows": 2})
        assert r.json()["truncated"] and r.json()["row_count"] == 2
        target = tmp_path / "leak.csv"
        for bad in (f"COPY events TO '{target}'", "SELECT * FROM read_csv('/etc/passwd')",
                    "ATTACH 'x.db'", "SELECT 1; SELECT 2"):  # fmt: skip
            r = c.post("/v1/sql", json={"query": bad})
            assert r.status_code in (400, 403) and r.json()["field"] == "query", (bad, r.json())
        assert not target.exists()
        r = c.post("/v1/sql", json={"query": "SELECT nope FROM events"})
        assert r.status_code == 400 and r.json()["field"] == "query"
        r = c.post("/v1/sql", json={"query": q, "format": "xml"})
        assert r.status_code == 422 and r.json()["field"] == "format"
        r = c.post("/v1/sql", json={"query": q, "limit": 3})
        assert r.status_code == 422 and r.json()["field"] == "limit"


def test_search_finds_events_by_text_as_the_mcp_tool_does(tmp_path: Path) -> None:
    from evolog.eventlog import Note

    store = new_store(tmp_path / "s")
    _seed(store)
    with EventLog(store) as log:
        log.append(Note(id="n1", text="The deploy hit a TIMEOUT at step 3"))
        log.append(Attempt(id="a9", task="raise the timeout", gene="gene_wait"))
    with client(store) as c:
        r = c.post("/v1/search", json={"text": "timeout"})
        body = r.json()
        assert [e["id"] for e in body["events"]] == ["a9", "n1"] and body["count"] == 2
        assert "session" not in body["events"][0]  # null fields are left out
        r = c.post("/v1/search", json={"text": "Timeout", "kinds": ["note"], "limit": 5})
        assert [e["id"] for e in r.json()["events"]] == ["n1"]
        assert c.post("/v1/search", json={"limit": 2}).json()["count"] == 2  # '' matches all
        with EventLog(store) as log:
            mcp = search_events(log.paths, "timeout", None, 20)
        assert c.post("/v1/search", json={"text": "timeout"}).json()["events"] == json.loads(
            msgspec.json.encode(mcp)
        )
        for bad, field in (({"kinds": ["nope"]}, "kinds"), ({"limit": 0}, "limit"),
                           ({"text": 3}, "text"), ({"query": "x"}, "query")):  # fmt: skip
            r = c.post("/v1/search", json=bad)
            assert r.status_code == 422 and r.json()["field"] == field, (bad, r.json())
        doc = c.get("/openapi.json").json()["paths"]["/v1/search"]["post"]
        assert doc["requestBody"]["content"]["application/json"]["schema"]


def test_edges_advise_route_ledger_stats_verify(tmp_path: Path) -> None:
    from evolog import Memory

    store = new_store(tmp_path / "s")
    _seed(store)
    genes = [{"type": "Gene", "id": "gene_retry"}, {"type": "Gene", "id": "gene_other"}]
    with client(store) as c:
        rows = c.post("/v1/edges", json={"signals": ["test_failure"]}).json()["rows"]
        assert [(r["gene"], r["success"]) for r in rows] == [("gene_retry", 3)]
        now = "2026-06-01T00:00:00Z"
        got = c.post("/v1/advise", json={"signals": ["test_failure"], "genes": genes, "now": now})
        with Memory(store) as mem:
            want = mem.advise(["test_failure"], genes, now=now).to_json()
        assert got.json() == json.loads(json.dumps(want))
        r = c.post("/v1/advise", json={"signals": "test_failure", "genes": genes})
        assert r.status_code == 422 and r.json()["field"] == "signals"
        r = c.post("/v1/route", json={"task": "fix a flaky test", "top_k": 0})
        assert r.status_code == 422 and r.json()["field"] == "top_k"
        assert c.post("/v1/route", json={"task": "fix a flaky test"}).json()["path"] == "zero_shot"
        ledger = c.get("/v1/ledger").json()
        assert "gene_retry" in {e["id"] for e in ledger["entries"]}
        assert c.get("/v1/ledger?entry=nobody").status_code == 404
        assert c.get("/v1/stats").json()["events"] == 6
        assert c.post("/v1/verify").json()["ok"] is True


def test_healthz_metrics_and_openapi(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s")
    with client(store) as c:
        c.post("/v1/events", content=b'{"kind":"tick"}', headers=JSON)
        assert c.get("/healthz").json()["head_seq"] == 1
        text = c.get("/metrics").text
        assert 'evolog_http_requests_total{route="append",status="200"} 1' in text
        assert "evolog_events_appended_total 1" in text and "evolog_head_seq 1" in text
        doc = c.get("/openapi.json").json()
        assert doc["openapi"].startswith("3.1")
        sql = doc["paths"]["/v1/sql"]["post"]["requestBody"]["content"]["application/json"]
        ref = sql["schema"]["$ref"].rsplit("/", 1)[1]
        schema = doc["components"]["schemas"][ref]
        assert sorted(schema["properties"]["format"]["enum"]) == ["arrow", "csv", "json"]
        assert {"/v1/events", "/kg/advice", "/kg/ingest", "/healthz"} <= set(doc["paths"])
        (param,) = doc["paths"]["/cte/nodes/{node_id}"]["get"]["parameters"]
        assert param["in"] == "path" and param["required"] is True


def test_unknown_route_and_method(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s")
    with client(store) as c:
        assert c.get("/v1/nothing").status_code == 404
        assert c.delete("/v1/events").status_code == 405
        # Routes of a fixed path skip Starlette's router; everything else still reaches it.
        assert c.head("/healthz").status_code == 200
        r = c.post("/v1/events/", content=b'{"kind":"tick"}', headers=JSON, follow_redirects=False)
        assert r.status_code == 307 and r.headers["location"].endswith("/v1/events")
        assert c.get("/cte/nodes/nothing").status_code == 404
        assert c.get("/v1/stats").json()["events"] == 0


@pytest.mark.parametrize("durability", ["always", "batch", "none"])
def test_every_durability_appends(tmp_path: Path, durability: str) -> None:
    store = new_store(tmp_path / "s")
    with client(store, durability=durability) as c:
        for i in range(3):
            assert (
                c.post("/v1/events", content=b'{"kind":"tick"}', headers=JSON).json()["seq"]
                == i + 1
            )
    assert len(_replay(store)) == 3
