"""A real ``evolog serve`` process on a free port, driven by httpx: concurrent appends, live
follow (SSE), a graceful stop that flushes, and kill -9 that loses nothing acknowledged."""

from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path

import httpx
import pytest
from _server_util import JSON, NDJSON, WRITE_TOKEN, LiveServer, new_store
from evolog.eventlog import EventLog


def _appender(url: str, prefix: str, acked: dict[str, int], stop: threading.Event) -> None:
    with httpx.Client(base_url=url, timeout=10.0) as client:
        i = 0
        while not stop.is_set():
            eid = f"{prefix}-{i}"
            try:
                r = client.post(
                    "/v1/events",
                    content=json.dumps({"kind": "note", "id": eid, "text": eid}),
                    headers=JSON,
                )
            except httpx.HTTPError:
                return  # the server died: this append was never acknowledged
            if r.status_code != 200:
                return
            acked[eid] = r.json()["seq"]
            i += 1


def _check_acknowledged(store: str, acked: dict[str, int]) -> None:
    with EventLog(store) as log:
        assert log.verify().ok
        stored = {e.id: e.seq for e in log.replay()}
    missing = {i: s for i, s in acked.items() if stored.get(i) != s}
    assert not missing, f"{len(missing)} acknowledged appends lost or moved: {list(missing)[:5]}"
    seqs = sorted(stored.values())
    assert seqs == list(range(1, len(seqs) + 1))


@pytest.mark.parametrize("durability", ["batch", "always"])
def test_kill_9_during_concurrent_appends_loses_nothing_acknowledged(
    tmp_path: Path, durability: str
) -> None:
    store = new_store(tmp_path / "s")
    acked: dict[str, int] = {}
    for round_ in range(2):
        with LiveServer(store, "--durability", durability) as server:
            stop = threading.Event()
            workers = [
                threading.Thread(target=_appender, args=(server.url, f"r{round_}w{n}", acked, stop))
                for n in range(6)
            ]
            for w in workers:
                w.start()
            deadline = time.monotonic() + 10
            while len(acked) < 150 * (round_ + 1) and time.monotonic() < deadline:
                time.sleep(0.02)
            server.proc.send_signal(signal.SIGKILL)  # mid-flight: appends are in progress
            server.proc.wait()
            stop.set()
            for w in workers:
                w.join()
        assert len(acked) >= 150 * (round_ + 1)
        _check_acknowledged(store, acked)


def test_graceful_stop_flushes_and_batches_are_atomic(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s")
    server = LiveServer(store, "--durability", "batch", env={"EVOLOG_TOKEN": WRITE_TOKEN})
    server.wait_ready()
    auth = {"authorization": f"Bearer {WRITE_TOKEN}"}
    with httpx.Client(base_url=server.url, headers=auth) as client:
        lines = b"\n".join(
            json.dumps({"kind": "note", "id": f"b{i}", "text": "x"}).encode() for i in range(500)
        )
        r = client.post("/v1/events", content=lines, headers=NDJSON)
        assert r.status_code == 200 and r.json()["count"] == 500
        bad = lines + b'\n{"kind":"note","text":5}\n'
        r = client.post("/v1/events", content=bad, headers=NDJSON)
        assert r.status_code == 422 and "line 501" in r.json()["error"]
    # uvicorn ends a graceful stop by re-raising the signal: killed by SIGTERM, after the flush.
    assert server.stop(signal.SIGTERM) in (0, -signal.SIGTERM)
    with EventLog(store) as log:
        assert [e.id for e in log.replay()] == [f"b{i}" for i in range(500)]


def test_follow_streams_appends_live_and_resumes(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s")
    with LiveServer(store) as server, httpx.Client(base_url=server.url, timeout=10.0) as client:
        client.post("/v1/events", content=b'{"kind":"tick","id":"t1"}', headers=JSON)
        got: list[tuple[int, str, dict[str, object]]] = []
        with client.stream("GET", "/v1/events?follow=true&after=0") as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            lines = stream.iter_lines()
            sent = False
            event: dict[str, str] = {}
            for line in lines:
                if line.startswith(("id:", "event:", "data:")):
                    name, _, value = line.partition(": ")
                    event[name] = value
                elif line == "" and "data" in event:
                    got.append((int(event["id"]), event["event"], json.loads(event["data"])))
                    event = {}
                    if not sent:
                        # Appended while the stream is open: it must arrive without a poll.
                        for i in (2, 3):
                            client.post(
                                "/v1/events",
                                content=json.dumps({"kind": "tick", "id": f"t{i}"}),
                                headers=JSON,
                            )
                        sent = True
                    if len(got) == 3:
                        break
        assert [(s, k, d["id"]) for s, k, d in got] == [
            (1, "tick", "t1"),
            (2, "tick", "t2"),
            (3, "tick", "t3"),
        ]
        # Resuming after seq 2 (Last-Event-ID) gives only what followed.
        with client.stream(
            "GET", "/v1/events", headers={"accept": "text/event-stream", "last-event-id": "2"}
        ) as stream:
            for line in stream.iter_lines():
                if line.startswith("id:"):
                    assert line == "id: 3"
                    break
