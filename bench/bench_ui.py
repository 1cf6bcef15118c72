"""Server time of each viewer page (issue 31: <= 300 ms at 1e5 events, <= 1 s at 1e6).

    python bench/bench_ui.py                      # 1e5 and 1e6 events
    python bench/bench_ui.py --events 1e5 --repeat 3

Stores are synthetic and built here: evolver-shaped cycles written as Parquet segments the
fast way (``bench_advice_latency.make_store``), then hook-shaped sessions (an attempt, the
recall of two notes, three steps with one failing at times, an outcome crediting the notes)
and the notes themselves, appended through ``EventLog`` and sealed. A real ``evolog serve``
answers each page; the figure is its own ``Server-Timing`` (the render on the server, not
the HTTP round trip), first on a cold ``cache/`` (the first page after the server starts)
and then the median of ``--repeat`` warm calls. ``memory@half`` and ``timeline@half`` are
the pages as of the middle of the log (time travel, no checkpoint for that point).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx
from bench_advice_latency import key_sets, make_store
from evolog.eventlog import Attempt, EventLog, Note, Outcome, Recall, Step

PAGES = ("timeline", "memory", "survival", "edges", "timeline@half", "memory@half")
EVOLOG = str(Path(sys.executable).with_name("evolog"))


def build(path: Path, events: int, notes: int) -> float:
    """``events`` in all: 80% evolver cycles, the rest hook sessions (6 events each)."""
    t = time.perf_counter()
    sessions = events // 5 // 6
    make_store(path, events - sessions * 6 - notes, key_sets(1000, seed=1000))
    with EventLog(str(path), durability="none", auto_seal="off") as log:
        ids = [f"note-{i}" for i in range(notes)]
        log.append_many(Note(id=ids[i], text=f"lesson {i}: run step {i % 13} before step "
                             f"{i % 7}", branch="proj") for i in range(notes))  # fmt: skip

        def session(n: int) -> list[object]:
            aid, sid = f"act-{n}", f"sess-{n // 4}"
            used = [ids[n % notes], ids[(n * 7) % notes]]
            failed = n % 3 == 0
            out: list[object] = [
                Attempt(action_id=aid, task=f"task {n}: run the steps", session=sid,
                        agent="claude-code", supported_by=used),
                Recall(action_id=aid, items=used, scores=[0.9, 0.5], chars=300, budget=4000,
                       session=sid, agent="claude-code"),
            ]  # fmt: skip
            out += [Step(action_id=aid, index=k, action=f"Bash make step{k}", tool="Bash",
                         ok=not (failed and k == 2), duration_ms=10.0 * k, session=sid,
                         agent="claude-code") for k in range(3)]  # fmt: skip
            out.append(Outcome(action_id=aid, status="failed" if failed else "success",
                               supported_by=used, delta=-1.0 if failed else 1.0, session=sid,
                               agent="claude-code"))  # fmt: skip
            return out

        for first in range(0, sessions, 10_000):
            batch = [e for n in range(first, min(sessions, first + 10_000)) for e in session(n)]
            log.append_many(batch)  # type: ignore[arg-type]
        log.seal()
    return time.perf_counter() - t


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _page(url: str, page: str, half: int) -> tuple[float, float, int]:
    """Server wall and CPU time of one page (s), and its size."""
    view, _, at = page.partition("@")
    query = f"?as_of={half}" if at else ""
    r = httpx.get(f"{url}/ui/view/{view}{query}", timeout=600)
    assert r.status_code == 200, r.text
    timing = dict(part.strip().split(";dur=") for part in r.headers["server-timing"].split(","))
    return float(timing["render"]) / 1000, float(timing["cpu"]) / 1000, len(r.content)


def measure(store: Path, repeat: int) -> dict[str, tuple[float, ...]]:
    shutil.rmtree(store / "cache", ignore_errors=True)
    port = _port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([EVOLOG, "--store", str(store), "serve", "--port", str(port),
                             "--no-mcp"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline and proc.poll() is None, "server did not start"
            time.sleep(0.1)
        head = int(httpx.get(url + "/healthz").json()["head_seq"])
        out = {}
        for page in PAGES:
            first, first_cpu, size = _page(url, page, head // 2)
            warm = [_page(url, page, head // 2) for _ in range(repeat)]
            out[page] = (first, first_cpu, statistics.median(w[0] for w in warm),
                         statistics.median(w[1] for w in warm), size)  # fmt: skip
        return out
    finally:
        proc.terminate()
        proc.wait(30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", nargs="+", type=float, default=[1e5, 1e6])
    ap.add_argument("--notes", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=5, help="warm calls per page (median)")
    ap.add_argument("--dir", help="build the stores here (default: a temporary directory)")
    args = ap.parse_args()
    base = Path(args.dir or tempfile.mkdtemp(prefix="bench-ui-"))
    print(f"cpus {os.cpu_count()}, load {os.getloadavg()[0]:.1f}; server time per page (s)")
    print("first: the page on a cold cache/; warm: the median of --repeat more; cpu: the")
    print("server process's CPU time meanwhile (DuckDB's threads included)")
    print(f"{'events':>9} {'page':<14} {'first':>7} {'cpu':>7} {'warm':>7} {'cpu':>7} {'KiB':>6}")
    try:
        for n in (int(e) for e in args.events):
            store = base / f"store-{n}"
            if not store.exists():
                took = build(store, n, args.notes)
                print(f"built {n} events in {took:.1f} s", flush=True)
            for page, (first, fcpu, warm, wcpu, size) in measure(store, args.repeat).items():
                print(f"{n:>9} {page:<14} {first:7.3f} {fcpu:7.3f} {warm:7.3f} {wcpu:7.3f} "
                      f"{size / 1024:6.0f}", flush=True)  # fmt: skip
    finally:
        if not args.dir:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
