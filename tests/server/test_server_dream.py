"""``POST /v1/dream``: JSON, or Server-Sent Events with real progress."""

from __future__ import annotations

import json
from pathlib import Path

from _server_util import client, new_store
from evolog.eventlog import Attempt, EventLog, Outcome, Step


def _traces(store: str, n: int) -> None:
    with EventLog(store) as log:
        for i in range(n):
            log.append_many([
                Attempt(id=f"a{i}", task="fix a flaky test", signals=["test_failure"],
                        gene="gene_retry", decided_by=["gene_retry"]),
                Step(action_id=f"a{i}", index=0, action="add a retry", ok=True),
                Outcome(action_id=f"a{i}", status="success", delta=1.0),
            ])  # fmt: skip


def _events(text: str) -> list[tuple[str, dict[str, object]]]:
    out = []
    for block in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        out.append((fields["event"], json.loads(fields["data"])))
    return out


def test_dream_streams_progress_then_the_report(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s")
    _traces(store, 3)
    with client(store) as c:
        r = c.post("/v1/dream", json={"batch_size": 1}, headers={"accept": "text/event-stream"})
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        events = _events(r.text)
        names = [name for name, _ in events]
        assert names[0] == "started" and names[-1] == "completed"
        progress = [data for name, data in events if name == "progress"]
        assert progress and progress[-1] == {"done": 3, "total": 3}
        assert events[-1][1]["traces_dreamed"] == 3
        # Dreamed: the task now routes to memory, and a second dream has nothing left.
        route = c.post("/v1/route", json={"task": "a test is flaky, fix it"}).json()
        assert route["path"] == "memory_traversal"
        again = c.post("/v1/dream", json={}).json()
        assert again["traces_dreamed"] == 0
        r = c.post("/v1/dream", json={"max_traces": 0})
        assert r.status_code == 422 and r.json()["field"] == "max_traces"
