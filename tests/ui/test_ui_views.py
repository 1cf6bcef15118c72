"""The viewer over HTTP against a real ``evolog serve`` with read and write tokens, on a store
written by the real command hook and an offline dream: each view, its escaping, its errors,
time travel, and steering appended as events."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from _server_util import READ_TOKEN, WRITE_TOKEN, LiveServer
from _ui_util import NOTE, build_store, dream, events, ledger_entry

VIEWS = ("timeline", "memory", "survival", "edges")
# One store and server for the module: the tests read and steer the same one, in order.
pytestmark = pytest.mark.xdist_group("ui_views")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    base = tmp_path_factory.mktemp("ui")
    store = str(base / "store")
    build_store(store)
    dream(store)
    tokens = base / "tokens"
    tokens.write_text(f"read {READ_TOKEN}\nwrite {WRITE_TOKEN}\n")
    with LiveServer(store, "--token-file", str(tokens)) as live:
        # an agent fetches a recalled note's details by id for the failed attempt
        attempt = next(e for e in events(store) if e["kind"] == "attempt"
                       and e["session"] == "sess-bad")  # fmt: skip
        fetched = httpx.get(f"{live.url}/v1/memory/{_note_id(store, NOTE)}", timeout=60,
                            params={"action_id": attempt["action_id"]},
                            headers={"authorization": f"Bearer {WRITE_TOKEN}"})  # fmt: skip
        assert fetched.status_code == 200, fetched.text
        yield live


def _get(server: LiveServer, path: str, token: str | None = READ_TOKEN) -> httpx.Response:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    return httpx.get(server.url + path, headers=headers, timeout=60)


def _act(server: LiveServer, body: dict[str, Any], token: str = WRITE_TOKEN) -> httpx.Response:
    return httpx.post(server.url + "/ui/action", json=body, timeout=60,
                      headers={"authorization": f"Bearer {token}"})  # fmt: skip


def _note_id(store: str, text: str) -> str:
    (found,) = [e for e in events(store) if e["kind"] == "note" and e.get("text") == text]
    return str(found["id"])


def test_the_frame_is_open_carries_no_data_and_loads_only_its_own_files(
    server: LiveServer,
) -> None:
    page = _get(server, "/ui", token=None)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    csp = page.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "script-src 'self'" in csp and "unsafe" not in csp
    scripts = re.findall(r"<script[^>]*>", page.text)
    assert scripts == ['<script src="/ui/static/ui.js" defer>']
    assert "<style" not in page.text and " on" not in page.text.replace(" only", "")
    for name, kind in (("ui.js", "text/javascript"), ("ui.css", "text/css")):
        got = _get(server, f"/ui/static/{name}", token=None)
        assert got.status_code == 200 and got.headers["content-type"].startswith(kind)
        # nothing from another host: no absolute URL at all
        assert not re.search(r"(https?:)?//[a-z0-9]", got.text.replace("// ", "")), name
    assert _get(server, "/ui/static/../_page.py", token=None).status_code == 404
    missing = _get(server, "/ui/static/evil.js", token=None)
    assert missing.status_code == 404
    assert missing.json()["error"] == "name: expected one of ui.css, ui.js; got 'evil.js'"


def test_views_need_a_read_token(server: LiveServer) -> None:
    for view in VIEWS:
        assert _get(server, f"/ui/view/{view}", token=None).status_code == 401
        assert _get(server, f"/ui/view/{view}", token="wrong").status_code == 401


def test_each_view_shows_the_store(server: LiveServer) -> None:
    got = {v: _get(server, f"/ui/view/{v}") for v in VIEWS}
    assert {v: r.status_code for v, r in got.items()} == dict.fromkeys(VIEWS, 200)
    for r in got.values():
        assert "default-src 'self'" in r.headers["content-security-policy"]
        assert r.headers["server-timing"].startswith("render;dur=")
    timeline = got["timeline"].text
    assert "session sess-ok" in timeline and "session sess-bad" in timeline
    assert timeline.count('class="step ok"') == 2 and timeline.count('class="step failed"') == 1
    assert "make: *** [step2] Error 2" in timeline
    assert 'class="outcome success"' in timeline and 'class="outcome failed"' in timeline
    assert NOTE in timeline and "injected block" in timeline and "credit to" in timeline
    assert re.search(r'class="fetched">fetched by id: <code>[0-9A-Z]+</code> \(\d+ chars, via '
                     r"http\)", timeline)  # fmt: skip
    memory = got["memory"].text
    assert NOTE in memory and 'class="mem strategy"' in memory and "dreamed in cycle" in memory
    assert re.search(r'data-op="undo" data-cycle="dream-[0-9a-f]+"', memory)
    assert "<svg" in memory and "<polyline" in memory  # the success-rate plot
    survival = got["survival"].text
    assert "energy of the strongest entries" in survival and "<polyline" in survival
    assert 'data-op="forget"' in survival
    assert "<h2>Edges</h2>" in got["edges"].text and "<svg" in got["edges"].text
    recall = _get(server, "/ui/view/memory?q=build+the+gizmo").text
    assert 'class="recalled"' in recall and "similarity" in recall and NOTE in recall


def test_recorded_text_is_escaped_everywhere(server: LiveServer) -> None:
    for view in VIEWS:
        body = _get(server, f"/ui/view/{view}?q=note+says").text
        assert "<script" not in body and "<img" not in body, view
    assert "&lt;script&gt;" in _get(server, "/ui/view/timeline").text


@pytest.mark.parametrize(
    ("query", "status", "error"),
    [
        ("view/nope", 404, "view: expected one of timeline, memory, survival, edges; got 'nope'"),
        ("view/timeline?as_of=x", 422, "as_of: expected an integer in [0, 4611686018427387904]; "
         "got 'x'"),
        ("view/timeline?as_of=-1", 422, "as_of: expected an integer in [0, 4611686018427387904];"
         " got '-1'"),
        ("view/timeline?since=yesterday", 422, "since: expected an ISO-8601 time "
         "(YYYY-MM-DD[THH:MM[:SS]]); got 'yesterday'"),
        ("view/timeline?since=2026-02-02&until=2026-01-01", 422, "until: expected a time after "
         "since (2026-02-02); got '2026-01-01'"),
        ("view/memory?limit=0", 422, "limit: expected an integer in [1, 500]; got 0"),
        ("view/edges?colour=red", 422, "colour: expected one of agent, as_of, at, limit, q, "
         "session, since, until; got 'colour'"),
        ("view/memory?q=" + "x" * 401, 422, "q: expected at most 400 characters; got 401"),
    ],
)  # fmt: skip
def test_bad_parameters_are_one_line_errors(
    server: LiveServer, query: str, status: int, error: str
) -> None:
    got = _get(server, "/ui/" + query)
    assert got.status_code == status and got.json()["error"] == error


def _page_at(server: LiveServer, view: str, seq: int) -> str:
    """The view as of ``seq``, less the head it reports (the one thing allowed to change)."""
    return re.sub(r' data-head="\d+"', "", _get(server, f"/ui/view/{view}?as_of={seq}").text)


def test_a_page_as_of_a_seq_is_the_same_after_the_log_grows(server: LiveServer) -> None:
    head = int(_get(server, "/ui/view/timeline").headers["x-evolog-head-seq"])
    before = {v: _page_at(server, v, head) for v in VIEWS}
    remembered = httpx.post(server.url + "/v1/remember", timeout=60,
                            json={"branch": "proj", "text": "a later note about linking"},
                            headers={"authorization": f"Bearer {WRITE_TOKEN}"})  # fmt: skip
    assert remembered.status_code == 200
    after = {v: _page_at(server, v, head) for v in VIEWS}
    for view in VIEWS:
        assert after[view] == before[view], view
    now = _get(server, "/ui/view/memory").text
    assert "a later note about linking" in now and "a later note" not in before["memory"]
    early = _get(server, "/ui/view/timeline?as_of=2").text
    assert 'data-seq="2"' in early and "sess-ok" not in early  # the notes, no session yet
    by_time = _get(server, "/ui/view/timeline?at=2000-01-01").text
    assert 'data-seq="0"' in by_time


def test_steering_actions_are_events_and_undo_is_a_retraction(server: LiveServer) -> None:
    store = server.store
    note = _note_id(store, NOTE)
    assert ledger_entry(store, note)["alive"]
    refused = _act(server, {"op": "forget", "entry": note}, token=READ_TOKEN)
    assert refused.status_code == 403
    forgot = _act(server, {"op": "forget", "entry": note})
    assert forgot.status_code == 200, forgot.text
    (event,) = [e for e in events(store) if e["id"] == forgot.json()["id"]]
    assert (event["kind"], event["op"], event["entry"], event["agent"]) == (
        "lifecycle", "forget", note, "evolog-ui")  # fmt: skip
    assert ledger_entry(store, note) == {"alive": False, "cause": "forgotten", "pinned": False}
    again = _act(server, {"op": "forget", "entry": note})
    assert again.status_code == 409 and "is dead (forgotten)" in again.json()["error"]
    steering = _get(server, "/ui/view/timeline").text
    assert f'data-op="retract" data-target="{forgot.json()["id"]}"' in steering
    undone = _act(server, {"op": "retract", "target": forgot.json()["id"]})
    assert undone.status_code == 200 and ledger_entry(store, note)["alive"]
    assert _act(server, {"op": "retract", "target": forgot.json()["id"]}).status_code == 409
    assert _act(server, {"op": "pin", "entry": note}).status_code == 200
    assert ledger_entry(store, note)["pinned"]
    pinned = _act(server, {"op": "forget", "entry": note})
    assert pinned.status_code == 409 and "pinned" in pinned.json()["error"]
    assert _act(server, {"op": "unpin", "entry": note}).status_code == 200
    edited = _act(server, {"op": "edit", "item": note, "text": "ORCA-12: use make -j8"})
    assert edited.status_code == 200
    assert "ORCA-12: use make -j8" in _get(server, "/ui/view/memory").text
    cycle = next(e["cycle"] for e in events(store) if e["kind"] == "dream_begin")
    undo = _act(server, {"op": "undo", "cycle": cycle})
    assert undo.status_code == 200 and undo.json()["ids"] == [f"undo.{cycle}"]
    assert any(e["kind"] == "retraction" and e.get("target_cycle") == cycle
               for e in events(store))  # fmt: skip
    assert "undone" in _get(server, "/ui/view/memory").text
    twice = _act(server, {"op": "undo", "cycle": cycle})
    assert twice.status_code == 409 and "already undone" in twice.json()["error"]


@pytest.mark.parametrize(
    ("body", "status", "error"),
    [
        ({"op": "explode"}, 422, "op: expected one of edit, forget, pin, retract, undo, unpin; "
         "got 'explode'"),
        ({"op": "forget"}, 422, "entry: expected an id (1-200 characters) for forget; got ''"),
        ({"op": "forget", "entry": "nobody"}, 404, "entry: 'nobody' was never born in this log"),
        ({"op": "edit", "item": "nobody", "text": "x"}, 404, "item: no note 'nobody' in this log"),
        ({"op": "retract", "target": "nothing"}, 404, "target: no event 'nothing' in this log"),
        ({"op": "undo", "cycle": "dream-0"}, 409, "cycle: expected the id of a dream cycle; got "
         "'dream-0'"),
        ({"op": "pin", "colour": 1}, 422, "body: Object contains unknown field `colour`"),
    ],
)  # fmt: skip
def test_bad_actions_are_one_line_errors_and_append_nothing(
    server: LiveServer, body: dict[str, Any], status: int, error: str
) -> None:
    before = len(events(server.store))
    got = _act(server, body)
    assert got.status_code == status and got.json()["error"].startswith(error), got.text
    assert len(events(server.store)) == before


def test_the_wheel_data_is_declared(tmp_path: Path) -> None:
    import tomllib

    repo = Path(__file__).resolve().parents[2]
    data = tomllib.loads((repo / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert data["package-data"]["evolog.ui"] == ["static/*.js", "static/*.css"]
