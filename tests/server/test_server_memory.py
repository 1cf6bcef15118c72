"""``/v1/remember``, ``/v1/recall`` and ``/v1/feedback``: what the Memory facade answers."""

from __future__ import annotations

from pathlib import Path

from _server_util import READ_TOKEN, WRITE_TOKEN, client, new_store, tokens
from evolog.eventlog import EventLog, kind_of

from evolog import Memory


def test_remember_recall_feedback_over_http(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s")
    with client(store) as c:
        r = c.post(
            "/v1/remember",
            json={"branch": "deploy", "text": "run the blue-green script, then check /health",
                  "tags": ["ops"]},
        )  # fmt: skip
        assert r.status_code == 200, r.text
        item = r.json()["item"]
        assert r.json()["branch"] == "deploy" and not r.json()["superseded"]
        got = c.post(
            "/v1/recall",
            json={"query": "how do I deploy with the blue-green script", "action_id": "t1"},
        )
        body = got.json()
        assert [i["id"] for i in body["items"]] == [item]
        assert "blue-green" in body["text"] and body["recorded"]
        r = c.post("/v1/feedback", json={"item": item, "verdict": "helpful", "note": "worked"})
        assert r.status_code == 200 and r.json()["item"] == item
        r = c.post("/v1/feedback", json={"item": item, "verdict": "great"})
        assert r.status_code == 422 and r.json()["field"] == "verdict"
        r = c.post("/v1/remember", json={"branch": "", "text": "x"})
        assert r.status_code == 422 and r.json()["field"] == "branch"
        r = c.post("/v1/recall", json={"query": "x", "top_n": -1})
        assert r.status_code == 422 and r.json()["field"] == "top_n"
    with EventLog(store) as log:
        kinds = [kind_of(e) for e in log.replay()]
    assert kinds.count("recall") == 1 and "feedback" in kinds
    # The same recall, not recorded, through the facade: the same items in the same order.
    with Memory(store) as mem:
        again = mem.recall("how do I deploy with the blue-green script", record=False)
    assert [i.id for i in again.items] == [item]


def test_recall_that_records_needs_a_write_token(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s")
    with Memory(store) as mem:
        mem.remember("deploy", "run the blue-green script, then check /health")
    read = {"authorization": f"Bearer {READ_TOKEN}"}
    with client(store, tokens=tokens()) as c:
        r = c.post(
            "/v1/recall", json={"query": "how do I deploy with the blue-green script"}, headers=read
        )
        assert r.status_code == 403 and r.json()["field"] == "Authorization"
        r = c.post(
            "/v1/recall",
            json={"query": "how do I deploy with the blue-green script", "record": False},
            headers=read,
        )
        assert r.status_code == 200 and len(r.json()["items"]) == 1
        write = {"authorization": f"Bearer {WRITE_TOKEN}"}
        r = c.post(
            "/v1/recall",
            json={"query": "how do I deploy with the blue-green script"},
            headers=write,
        )
        assert r.status_code == 200 and r.json()["recorded"]


def test_recall_by_signals_and_feedback_on_an_attempt_over_http(tmp_path: Path) -> None:
    """Gene items are reached through the server as through the facade (``signals``), and a
    feedback names the attempt whose outcome's verdict it replaces (``action_id``)."""
    from evolog.eventlog import Attempt, Outcome

    store = new_store(tmp_path / "s")
    with Memory(store) as mem:
        mem.append_many(
            [
                Attempt(id="a1", action_id="a1", gene="gene_pin", signals=["dep_conflict"]),
                Outcome(action_id="a1", status="success", gene="gene_pin", delta=1.0),
            ]
        )
        expected = mem.recall("fix the build", signals=["dep_conflict"], record=False)
    with client(store) as c:
        body = c.post(
            "/v1/recall",
            json={"query": "fix the build", "signals": ["dep_conflict"], "record": False},
        ).json()
        assert [i["id"] for i in body["items"]] == [i.id for i in expected.items] == ["gene_pin"]
        r = c.post("/v1/recall", json={"query": "x", "signals": "dep_conflict"})
        assert r.status_code == 422 and r.json()["field"] == "signals"
        r = c.post(
            "/v1/feedback", json={"item": "gene_pin", "verdict": "harmful", "action_id": "a1"}
        )
        assert r.status_code == 200, r.text
    with Memory(store) as mem:
        after = mem.recall("fix the build", signals=["dep_conflict"], record=False, threshold=0.0)
    # The outcome's "helpful" for attempt a1 is replaced by the feedback's "harmful".
    assert (after.items[0].helpful, after.items[0].harmful) == (0, 1)
