"""``evolog serve`` over HTTP on this machine: appends, batches, advice latency, start-up, RSS.

    python bench/bench_serve.py                      # small sizes (a quick check)
    python bench/bench_serve.py --appends 100000 --store-events 1000000
    # RSS only, on stores started cold and warmed:
    python bench/bench_serve.py --appends 0 --batch-events 0 --store-events --rss-events 1e7

* single-event appends from ``--clients`` concurrent keep-alive connections (events/s, p50 and
  p99 latency) under ``--durability`` (batch by default);
* NDJSON batches of ``--batch-size`` events (events/s);
* ``/kg/advice`` and ``/v1/recall`` (not recorded, and recorded: a ``recall`` event appended
  per query) latency, warm, on stores of ``--store-events`` events (plus 400 memory notes):
  p50/p99 over ``--queries`` requests;
* time from starting ``evolog serve`` to its first answer on each such store, and its RSS;
* ``--rss-events``: stores of these sizes only started and warmed (one ``/kg/advice``, one
  recall of each kind, one append: what a server does first on a store it has not seen),
  with the time to ready, the RSS when ready and once warm, and the peak RSS (VmHWM).

The client is a minimal HTTP/1.1 client over asyncio streams (one process, one connection per
client), so that the client costs little of the machine the server shares. Figures are only
meaningful on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from evolog.eventlog import Attempt, EventLog, Note, Outcome, init_store

GENES = [f"gene_{i:02d}" for i in range(40)]
TOPICS = ["deploy", "database", "testing", "frontend", "security", "docs", "cloud", "git"]
#: Memory notes in each benchmark store (written as remember writes them: one item each).
NOTES = 400


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Server:
    def __init__(self, store: str, durability: str) -> None:
        self.port = free_port()
        started = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "evolog", "--store", store, "serve", "--port", str(self.port),
             "--durability", durability, "--no-mcp"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self.ready_s = self._wait(started)

    def _wait(self, started: float) -> float:
        while True:
            if self.proc.poll() is not None:
                raise SystemExit(f"the server exited with {self.proc.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                    s.sendall(
                        b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
                    )
                    if s.recv(64).startswith(b"HTTP/1.1 200"):
                        return time.perf_counter() - started
            except OSError:
                pass
            time.sleep(0.01)

    def rss_mib(self, field: str = "VmRSS") -> float:
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)


class Conn:
    """One keep-alive HTTP/1.1 connection."""

    def __init__(self, port: int) -> None:
        self.port = port

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)

    async def post(self, path: str, body: bytes, ctype: str = "application/json") -> bytes:
        head = b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: %s\r\n" % (
            path.encode(),
            ctype.encode(),
        )
        self.writer.write(head + b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = head[9:12]
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        data = await self.reader.readexactly(length)
        if status != b"200":
            raise RuntimeError(f"{path}: HTTP {status.decode()}: {data[:200]!r}")
        return data

    def close(self) -> None:
        self.writer.close()


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


async def appends(port: int, n: int, clients: int) -> dict[str, float]:
    conns = [Conn(port) for _ in range(clients)]
    for c in conns:
        await c.open()
    latencies: list[float] = []
    per = n // clients

    async def run(c: Conn, k: int) -> None:
        for i in range(per):
            body = b'{"kind":"note","text":"c%d-%d"}' % (k, i)
            t = time.perf_counter()
            await c.post("/v1/events", body)
            latencies.append(time.perf_counter() - t)

    started = time.perf_counter()
    await asyncio.gather(*(run(c, k) for k, c in enumerate(conns)))
    elapsed = time.perf_counter() - started
    for c in conns:
        c.close()
    return {
        "events": per * clients, "clients": clients, "events_per_s": per * clients / elapsed,
        "p50_ms": 1000 * pct(latencies, 0.5), "p99_ms": 1000 * pct(latencies, 0.99),
    }  # fmt: skip


async def batches(port: int, n: int, size: int) -> dict[str, float]:
    conn = Conn(port)
    await conn.open()
    lines = b"\n".join(b'{"kind":"note","text":"b%d"}' % i for i in range(size)) + b"\n"
    rounds = max(1, n // size)
    started = time.perf_counter()
    for _ in range(rounds):
        await conn.post("/v1/events", lines, "application/x-ndjson")
    elapsed = time.perf_counter() - started
    conn.close()
    return {"events": rounds * size, "batch": size, "events_per_s": rounds * size / elapsed}


async def latency(port: int, path: str, bodies: list[bytes], warm: int = 20) -> dict[str, float]:
    conn = Conn(port)
    await conn.open()
    for body in bodies[:warm]:
        await conn.post(path, body)
    times: list[float] = []
    for body in bodies:
        t = time.perf_counter()
        await conn.post(path, body)
        times.append(time.perf_counter() - t)
    conn.close()
    return {"queries": len(times), "p50_ms": 1000 * statistics.median(times),
            "p99_ms": 1000 * pct(times, 0.99)}  # fmt: skip


def build_store(path: str, events: int) -> None:
    """Evolver-like history: attempts and outcomes over 200 signal sets and 40 genes."""
    init_store(path)
    base = 1_772_323_200_000_000
    with EventLog(path, durability="none", auto_seal="off") as log:
        batch: list[Any] = []
        for i in range(events // 2):
            signals = [f"sig_{i % 200}", f"area_{i % 7}"]
            gene = GENES[(i * 7) % len(GENES)]
            ts = base + i * 1_000_000
            batch.append(Attempt(id=f"a{i}", ts=ts, signals=signals, gene=gene))
            ok = (i * 2654435761) % 100 < 40 + (GENES.index(gene) % 5) * 10
            batch.append(
                Outcome(action_id=f"a{i}", ts=ts + 1, status="success" if ok else "failed")
            )
            if len(batch) >= 20_000:
                log.append_many(batch)
                batch = []
        if batch:
            log.append_many(batch)
        log.append_many(
            Note(text=f"{TOPICS[i % len(TOPICS)]}: lesson {i} about {TOPICS[i % len(TOPICS)]} "
                 f"work, step {i % 13} before step {i % 7}", branch=TOPICS[i % len(TOPICS)])
            for i in range(NOTES)
        )  # fmt: skip
        log.seal()


def advice_bodies(n: int) -> list[bytes]:
    genes = [{"type": "Gene", "id": g, "category": "repair"} for g in GENES[:10]]
    return [
        json.dumps(
            {"signals": [f"sig_{i % 200}", f"area_{i % 7}"], "genes": genes, "driftEnabled": False}
        ).encode()
        for i in range(n)
    ]


def recall_bodies(n: int, record: bool) -> list[bytes]:
    return [
        json.dumps(
            {
                "query": f"{TOPICS[i % len(TOPICS)]} lesson {i % NOTES} about "
                f"{TOPICS[i % len(TOPICS)]} work",
                "record": record,
            }
        ).encode()
        for i in range(n)
    ]


async def warm(port: int) -> None:
    conn = Conn(port)
    await conn.open()
    await conn.post("/kg/advice", advice_bodies(1)[0])
    for record in (False, True):
        await conn.post("/v1/recall", recall_bodies(1, record)[0])
    await conn.post("/v1/events", b'{"kind":"note","text":"warm"}')
    conn.close()


def rss_row(path: str, n: int, durability: str) -> dict[str, Any]:
    server = Server(path, durability)
    try:
        row: dict[str, Any] = {"events": n, "ready_s": server.ready_s}
        row["rss_ready_mib"] = server.rss_mib()
        started = time.perf_counter()
        asyncio.run(warm(server.port))
        row["warm_s"] = time.perf_counter() - started
        row["rss_warm_mib"] = server.rss_mib()
        row["rss_peak_mib"] = server.rss_mib("VmHWM")
    finally:
        server.stop()
    return row


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--appends", type=int, default=2000, help="single-event appends in total")
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--batch-events", type=int, default=20_000, help="events sent in batches")
    p.add_argument("--batch-size", type=int, default=1000)
    p.add_argument("--durability", choices=["always", "batch", "none"], default="batch")
    p.add_argument("--store-events", type=int, nargs="*", default=[10_000])
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--rss-events", type=lambda v: int(float(v)), nargs="*", default=[],
                   help="store sizes only started and warmed, for RSS")  # fmt: skip
    p.add_argument("--json", help="also write the results to this file")
    args = p.parse_args()
    results: dict[str, Any] = {"durability": args.durability}
    with tempfile.TemporaryDirectory() as tmp:
        store = os.path.join(tmp, "appends")
        init_store(store)
        server = Server(store, args.durability)
        try:
            if args.appends:
                results["appends"] = asyncio.run(appends(server.port, args.appends, args.clients))
            if args.batch_events:
                results["batches"] = asyncio.run(
                    batches(server.port, args.batch_events, args.batch_size)
                )
        finally:
            server.stop()
        for n in args.store_events:
            path = os.path.join(tmp, f"store-{n}")
            build_store(path, n)
            server = Server(path, args.durability)
            try:
                row: dict[str, Any] = {"events": n, "ready_s": server.ready_s}
                row["kg_advice"] = asyncio.run(
                    latency(server.port, "/kg/advice", advice_bodies(args.queries))
                )
                for record in (False, True):
                    row[f"recall_record_{str(record).lower()}"] = asyncio.run(
                        latency(server.port, "/v1/recall", recall_bodies(args.queries, record))
                    )
                row["rss_mib"] = server.rss_mib()
            finally:
                server.stop()
            results.setdefault("stores", []).append(row)
            print(json.dumps(row), file=sys.stderr)
            shutil.rmtree(path)
        for n in args.rss_events:
            path = os.path.join(tmp, f"rss-{n}")
            build_store(path, n)
            row = rss_row(path, n, args.durability)
            results.setdefault("rss", []).append(row)
            print(json.dumps(row), file=sys.stderr)
            shutil.rmtree(path)
    text = json.dumps(results, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")


if __name__ == "__main__":
    main()
