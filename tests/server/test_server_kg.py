"""evolver's remote memory graph (/kg): shapes as the real adapter sends them, lossless ingest,
advice equal to ``evolog advise`` on the same history."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from _server_util import client, new_store
from evolog.advice import to_evolver
from evolog.eventlog import EventLog

SIGNALS = ["log_error", "errsig:TypeError: x is undefined"]
KEY = "errsig_norm:17b5394b|log_error"
GENES = [
    {"id": "gene_guard", "category": "repair", "type": "Gene"},
    {"id": "gene_retry", "category": "repair", "type": "Gene"},
]

# What evolver 1.94.0's remote adapter sent for one cycle (captured from the real package).
SIGNAL = {
    "type": "MemoryGraphEvent", "kind": "signal", "id": "mge_1795654718024_69e925da",
    "ts": "2026-11-26T00:58:38.024Z",
    "signal": {"key": KEY, "signals": SIGNALS, "error_signature": "typeerror: x is undefined"},
    "observed": {"note": "x"},
}  # fmt: skip
HYPOTHESIS = {"hypothesisId": "hyp_1795654718095_c85b421b", "signalKey": KEY}
ATTEMPT = {"actionId": "act_1795654718098_ce758f0a", "signalKey": KEY}


def outcome(n: int, status: str = "success", gene: str = "gene_guard") -> dict[str, Any]:
    return {
        "type": "MemoryGraphEvent", "kind": "outcome", "id": f"mge_17956547184{n:02d}_fb405706",
        "ts": f"2026-11-26T00:58:{n:02d}.440Z",
        "signal": {"key": KEY, "signals": SIGNALS, "error_signature": None},
        "mutation": None, "personality": None, "gene": {"id": gene, "category": "repair"},
        "action": {"id": f"act_{n}"}, "hypothesis": {"id": "hyp_1795654718095_c85b421b"},
        "outcome": {
            "status": status, "score": 0.93, "note": "error_cleared|heuristic_delta|predictive",
            "observed": {"current_signals": ["all_clear"]},
            "predictive": {
                "signal_clarity": 1, "trajectory_trend": 0.08, "frontier_touched": False,
            },
        },
        "confidence": {"half_life_days": 30}, "observed": {}, "baseline": {},
        "capsules": {"used": []},
    }  # fmt: skip


def _ingest(c: Any, kind: str, event: dict[str, Any]) -> dict[str, Any]:
    r = c.post("/kg/ingest", json={"kind": kind, "event": event})
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def test_ingest_keeps_every_field_exactly(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s")
    sent = [
        ("signal", SIGNAL),
        ("hypothesis", HYPOTHESIS),
        ("attempt", ATTEMPT),
        ("outcome", outcome(1)),
        # A field no evolver writes yet, anywhere in the event: kept, never refused.
        ("outcome", {**outcome(2), "future": {"x": [1, 2.5, None]}}),
    ]
    with client(store) as c:
        seqs = [_ingest(c, kind, copy.deepcopy(event))["seq"] for kind, event in sent]
    assert seqs == [1, 2, 3, 4, 5]
    with EventLog(store) as log:
        events = list(log.replay())
    assert [to_evolver(e) for e in events] == [event for _, event in sent]
    # The attempt is open under its action id (its outcome names it), with the key sent.
    attempt = events[2]
    assert (attempt.action_id, attempt.key) == (ATTEMPT["actionId"], KEY)  # type: ignore[attr-defined]
    assert events[3].gene == "gene_guard"  # type: ignore[attr-defined]


def test_ingest_is_idempotent_and_keeps_a_reused_id_with_other_content(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s")
    with client(store) as c:
        first = _ingest(c, "signal", SIGNAL)
        again = _ingest(c, "signal", SIGNAL)
        assert again["duplicate"] and again["seq"] == first["seq"]
        other = {**SIGNAL, "observed": {"note": "another snapshot in the same millisecond"}}
        third = _ingest(c, "signal", other)
        assert not third["duplicate"] and third["seq"] == 2 and third["id"] != SIGNAL["id"]
        assert _ingest(c, "signal", other)["seq"] == 2  # and that is idempotent too
        r = c.post("/kg/ingest", json={"kind": "telemetry", "event": {"a": 1}})
        assert r.status_code == 202 and r.json()["stored"] is False
        r = c.post("/kg/ingest", json={"event": {}})
        assert r.status_code == 422 and r.json()["field"] == "kind"
        r = c.post("/kg/ingest", json={"kind": "signal", "event": [1]})
        assert r.status_code == 422 and r.json()["field"] == "event"
    with EventLog(store) as log:
        assert [to_evolver(e) for e in log.replay()] == [SIGNAL, other]


def test_advice_is_what_evolog_advise_answers(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s")
    query = {
        "signals": SIGNALS,
        "genes": GENES,
        "driftEnabled": False,
        "now": "2026-11-27T00:00:00Z",
    }
    with client(store) as c:
        _ingest(c, "signal", SIGNAL)
        for n, (status, gene) in enumerate(
            [("success", "gene_guard"), ("failed", "gene_retry"), ("failed", "gene_retry"),
             ("success", "gene_guard"), ("failed", "gene_retry")], 1
        ):  # fmt: skip
            _ingest(c, "attempt", {"actionId": f"act_{n}", "signalKey": KEY})
            _ingest(c, "outcome", outcome(n, status, gene))
        got = c.post("/kg/advice", json=query).json()
    for policy in ("evolver", "evolog"):
        cli = subprocess.run(
            [sys.executable, "-m", "evolog", "--store", store, "advise", "--policy", policy],
            input=json.dumps(query), capture_output=True, text=True, check=True,
        )  # fmt: skip
        want = json.loads(cli.stdout)
        if policy == "evolver":
            assert got == want
    assert got["preferredGeneId"] == "gene_guard" and got["policy"] == "evolver"
    assert {"currentSignalKey", "preferredGeneId", "bannedGeneIds", "explanation"} <= set(got)
    with client(store, kg_policy="evolog") as c:
        assert c.post("/kg/advice", json=query).json() == want


def test_advice_takes_what_evolver_sends(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s")
    with client(store) as c:
        # An empty history: evolver's own rule prefers the first gene with no history.
        r = c.post("/kg/advice", json={"signals": SIGNALS, "genes": GENES, "driftEnabled": False})
        assert r.status_code == 200 and r.json()["currentSignalKey"] == KEY
        r = c.post("/kg/advice", json={"signals": "log_error", "genes": GENES})
        assert r.status_code == 422 and r.json()["field"] == "signals"
        r = c.post("/kg/advice", content=b"not json", headers={"content-type": "application/json"})
        assert r.status_code == 400


def test_warm_advice_follows_the_window_as_evolog_advise_answers(tmp_path: Path) -> None:
    # The server answers evolver's policy from summaries of the window kept as the log
    # advances; after appends that push rows out of the window the answer is still the one
    # a fresh `evolog advise --policy evolver` reads from the whole window.
    store = new_store(tmp_path / "s")
    genes = [{"id": f"g{i}", "category": "repair", "type": "Gene"} for i in range(4)]
    query = {"signals": ["s1", "area1"], "genes": genes, "now": "2026-12-01T00:00:00Z"}

    def batch(start: int, count: int) -> bytes:
        lines = []
        for i in range(start, start + count):
            signals, ts = [f"s{i % 5}", f"area{i % 2}"], f"2026-11-{1 + i % 28:02d}T00:00:00Z"
            lines.append({"kind": "attempt", "id": f"a{i}", "ts": ts, "action_id": f"x{i}",
                          "signals": signals, "gene": f"g{i % 4}"})  # fmt: skip
            status = "success" if (i * 31) % 7 < 2 + i % 4 else "failed"
            lines.append({"kind": "outcome", "id": f"o{i}", "ts": ts, "action_id": f"x{i}",
                          "status": status})  # fmt: skip
        return b"".join(json.dumps(line).encode() + b"\n" for line in lines)

    def cli() -> dict[str, Any]:
        out = subprocess.run(
            [sys.executable, "-m", "evolog", "--store", store, "advise", "--policy", "evolver"],
            input=json.dumps(query), capture_output=True, text=True, check=True,
        )  # fmt: skip
        answer: dict[str, Any] = json.loads(out.stdout)
        return answer

    ndjson = {"content-type": "application/x-ndjson"}
    with client(store) as c:
        start = 0
        for count in (40, 600, 1, 500, 300):
            assert c.post("/v1/events", content=batch(start, count), headers=ndjson).is_success
            start += count
            got = c.post("/kg/advice", json=query).json()
            if count in (600, 300):  # before and after rows left the window
                assert got == cli()
    assert start * 2 > 2000
