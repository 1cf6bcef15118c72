"""Query parameters and body types read exactly as documented, or refused naming the field.

``follow=maybe`` was once read as false (any text but 1/true/yes was), ``after=+5`` or
``after=1_000`` as integers (Python's ``int``), and an ``application/json-seq`` body was
accepted, then split on newlines with each record's RS (0x1E) left in the JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from _eventlog_util import hash_tree
from _server_util import NDJSON, LiveServer, client, new_store
from evolog.eventlog import EventLog, Note

from evolog.server._body import JSON_TYPES, NDJSON_TYPES
from evolog.server._http import BOOLEANS


def _store(tmp_path: Path) -> str:
    store = new_store(tmp_path / "s")
    with EventLog(store) as log:
        log.append_many([Note(id=f"n{i}", text=f"note {i}") for i in range(3)])
    return store


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    """One real server for the read-only cases: a stream opened by mistake (the old reading
    of ``follow``) answers 200 at once instead of hanging a test client."""
    with (
        LiveServer(_store(tmp_path_factory.mktemp("params"))) as server,
        httpx.Client(base_url=server.url, timeout=10.0) as http,
    ):
        yield http


def _get(http: httpx.Client, **params: str) -> tuple[int, str, bytes]:
    with http.stream("GET", "/v1/events", params=params) as r:
        ctype = r.headers.get("content-type", "")
        if ctype.startswith("text/event-stream"):
            return r.status_code, ctype, next(r.iter_lines()).encode()
        return r.status_code, ctype, r.read()


@pytest.mark.parametrize("value", ["maybe", "yes", "no", "on", "", "2", "truee", " true"])
def test_a_boolean_outside_the_set_is_a_400(live: httpx.Client, value: str) -> None:
    status, _, body = _get(live, follow=value)
    assert status == 400, body
    got = json.loads(body)
    assert got["field"] == "follow"
    assert f"follow: expected true, false, 1 or 0; got {value!r}" in got["error"], got


@pytest.mark.parametrize("value", ["false", "0", "FALSE", "False"])
def test_false_reads_the_events_as_ndjson(live: httpx.Client, value: str) -> None:
    status, ctype, body = _get(live, follow=value)
    assert status == 200 and ctype.startswith("application/x-ndjson"), body
    assert [json.loads(x)["id"] for x in body.splitlines()] == ["n0", "n1", "n2"]


def test_the_set_is_exactly_true_false_1_0() -> None:
    assert BOOLEANS == {"true": True, "1": True, "false": False, "0": False}


@pytest.mark.parametrize("value", ["1", "TRUE", "true"])
def test_true_follows_as_server_sent_events(live: httpx.Client, value: str) -> None:
    status, ctype, first = _get(live, follow=value)
    assert status == 200 and ctype.startswith("text/event-stream")
    assert first == b"retry: 1000"


@pytest.mark.parametrize("value", ["+5", " 5", "5 ", "1_000", "0x10", "5.0", "1e3",
                                   "\u0665", "--1", "99999999999999999999"])  # fmt: skip
@pytest.mark.parametrize("name", ["after", "limit"])
def test_an_integer_is_ascii_digits_only(live: httpx.Client, name: str, value: str) -> None:
    status, _, body = _get(live, **{name: value})
    assert status == 422, body
    assert json.loads(body)["field"] == name, body


def test_the_ledger_as_of_is_read_the_same_way(tmp_path: Path) -> None:
    with client(_store(tmp_path)) as c:
        assert c.get("/v1/ledger", params={"as_of": "2"}).status_code == 200
        r = c.get("/v1/ledger", params={"as_of": "1_0"})
        assert r.status_code == 422 and r.json()["field"] == "as_of", r.text


def test_json_seq_is_refused_with_415_and_nothing_is_written(tmp_path: Path) -> None:
    store = _store(tmp_path)
    before = hash_tree(Path(store))
    body = b"\x1e" + json.dumps({"kind": "note", "text": "seq"}).encode() + b"\n"
    with client(store) as c:
        r = c.post("/v1/events", content=body, headers={"content-type": "application/json-seq"})
        assert r.status_code == 415, r.text
        assert r.json()["field"] == "Content-Type"
        assert "got application/json-seq" in r.json()["error"]
        assert "application/x-ndjson" in r.json()["error"]
    assert hash_tree(Path(store)) == before


def test_the_body_types_accepted_are_the_ones_the_openapi_lists(tmp_path: Path) -> None:
    with client(_store(tmp_path)) as c:
        spec = c.get("/openapi.json").json()
        listed = set(spec["paths"]["/v1/events"]["post"]["requestBody"]["content"])
        assert listed == set(JSON_TYPES + NDJSON_TYPES)
        for ctype in NDJSON_TYPES:
            line = json.dumps({"kind": "note", "text": ctype}).encode() + b"\n"
            r = c.post("/v1/events", content=line * 2, headers={"content-type": ctype})
            assert r.status_code == 200 and r.json()["count"] == 2, r.text
        r = c.post("/v1/events", content=b'{"kind":"tick"}\n', headers=NDJSON)
        assert r.status_code == 200


@pytest.mark.parametrize("value", [b"\xb2", b"\xb9\xb2", b"9223372036854775808", b"-1", b"1.5"])
def test_a_bad_last_event_id_is_a_422(live: httpx.Client, value: bytes) -> None:
    headers = {"Accept": "text/event-stream", "Last-Event-ID": value}
    with live.stream("GET", "/v1/events", headers=headers) as r:
        assert r.status_code == 422, r.read()
        assert json.loads(r.read())["field"] == "Last-Event-ID"
