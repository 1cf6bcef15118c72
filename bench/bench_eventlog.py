"""Event log benchmarks; every figure is a ratio to a baseline measured in the same run.

    python bench/bench_eventlog.py            # full sizes (1e6-event replay)
    python bench/bench_eventlog.py --quick    # small sizes, a smoke run

Prints one line per figure; paste them into bench/RESULTS.md with the command.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import evolog.eventlog as eventlog
from evolog.eventlog import EventLog, Outcome, Signal
from evolog.eventlog.schema import _codec
from evolog.eventlog.wal import _frames as fr

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _median_run(cmd: list[str], n: int, env: dict[str, str] | None = None) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def cold_append(tmp: Path, runs: int, history: list[int]) -> None:
    """Cold CLI append (fsync) vs a bare `python -c "import msgspec"`, interleaved.

    Our modules are byte-compiled first, as a regular install does (an editable install
    under PYTHONDONTWRITEBYTECODE would otherwise recompile them on every run).
    """
    import compileall

    for pkg in ("eventlog", "evolog", "advice"):
        compileall.compile_dir(str(ROOT / pkg), quiet=1)
    evolog = str(BIN / "evolog")
    for size in history:
        store = tmp / f"cold-{size}"
        with EventLog(store, create=True, durability="none", auto_seal="off") as log:
            for i in range(0, size, 10_000):
                log.append_many(_signals(min(10_000, size - i)))
        env = dict(os.environ, EVOLOG_STORE=str(store))
        base, ours = [], []
        for _ in range(runs):
            base.append(_median_run([sys.executable, "-c", "import msgspec"], 1))
            ours.append(
                _median_run([evolog, "append", '{"kind":"signal","signals":["a"]}'], 1, env)
            )
        b, o = statistics.median(base), statistics.median(ours)
        print(
            f"cold append, history {size:>7} events (WAL): {o * 1000:6.1f} ms vs import msgspec "
            f"{b * 1000:5.1f} ms -> ratio {o / b:.2f} (goal <= 1.5)"
        )


def _signals(n: int) -> list[Signal]:
    return [Signal(signals=["log_error", f"errsig:boom {i % 50}"], agent="bench") for i in range(n)]


def _spread(values: list[float], fmt: str = "{:.0f}") -> str:
    """``median (min-max)`` of a figure measured in several rounds."""
    lo, mid, hi = min(values), statistics.median(values), max(values)
    return f"{fmt.format(mid)} ({fmt.format(lo)}-{fmt.format(hi)})"


def durable_appends(tmp: Path, n: int, rounds: int) -> None:
    """append() under `always` vs os.write+fdatasync of the same frame bytes, in
    alternating rounds: fdatasync's speed drifts on a shared machine, so each round's ratio
    takes its baseline right after it."""
    ratios, ours, raws = [], [], []
    for r in range(rounds):
        with EventLog(
            tmp / f"durable-{r}", create=True, durability="always", auto_seal="off"
        ) as log:
            events = _signals(n)
            t = time.perf_counter()
            for e in events:
                log.append(e)
            ours.append(n / (time.perf_counter() - t))
        frame = fr.encode_frames([(1, _codec.encode(events[0]))])
        fd = os.open(tmp / f"raw-{r}.bin", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        t = time.perf_counter()
        for _ in range(n):
            os.write(fd, frame)
            os.fdatasync(fd)
        raws.append(n / (time.perf_counter() - t))
        os.close(fd)
        ratios.append(ours[-1] / raws[-1])
    print(
        f"durable appends (always), {rounds} rounds of {n}: {_spread(ours)}/s vs raw "
        f"write+fdatasync {_spread(raws)}/s -> ratio {_spread(ratios, '{:.2f}')} (goal >= 0.7)"
    )


def group_commit(tmp: Path, n: int, rounds: int) -> None:
    single, many = [], []
    for r in range(rounds):
        with EventLog(
            tmp / f"batch-{r}", create=True, durability="batch", auto_seal="off", group_size=1000
        ) as log:
            events = _signals(n)
            t = time.perf_counter()
            for e in events:
                log.append(e)
            log.flush()
            single.append(n / (time.perf_counter() - t))
        with EventLog(tmp / f"many-{r}", create=True, durability="always", auto_seal="off") as log:
            events = _signals(n)
            t = time.perf_counter()
            for i in range(0, n, 1000):
                log.append_many(events[i : i + 1000])
            many.append(n / (time.perf_counter() - t))
    print(
        f"group commit, {rounds} rounds of {n}: batch policy append() {_spread(single)}/s; "
        f"append_many(1000) under always {_spread(many)}/s (goal >= 200,000/s)"
    )


def index_inserts(tmp: Path, n: int, rounds: int) -> None:
    """The id index's slot inserts in C against the Python loop they replace."""
    from evolog.eventlog.index import _idindex, _idtable
    from evolog.eventlog.schema._ids import new_ids

    native = _idtable._native_insert, _idtable._native_key
    got: dict[str, list[float]] = {"C": [], "Python": []}
    for r in range(rounds):
        for label in got:
            index = _idindex.IdIndex(str(tmp / f"index-{label}-{r}"))
            items = [(eid, seq) for seq, eid in enumerate(new_ids(n), 1)]
            if label == "Python":
                _idtable._native_insert = _idtable._native_key = None
            t = time.perf_counter()
            index.insert_many(items)
            got[label].append((time.perf_counter() - t) / n * 1e6)
            _idtable._native_insert, _idtable._native_key = native
            index.close()
    print(
        f"id index inserts, {rounds} rounds of {n} ids: C {_spread(got['C'], '{:.2f}')} us/id, "
        f"Python {_spread(got['Python'], '{:.2f}')} us/id (key hashing included)"
    )


def _demo_events(n: int, strip_ids: bool = False) -> list[eventlog.Event]:
    """``n`` events of the demo's mix (several simulated lives), ids kept or left to the log."""
    import msgspec

    from evolog._demo import simulate

    events: list[eventlog.Event] = []
    cycles = 0
    while len(events) < n:
        batch = [e for b in simulate(500, seed=cycles) for e in b]
        if strip_ids:
            batch = [msgspec.structs.replace(e, id="") for e in batch]
        events.extend(batch)
        cycles += 1
    return events[:n]


def sealing(tmp: Path, n: int) -> None:
    """Seal throughput; the one-time import of the Parquet machinery is timed apart."""
    t = time.perf_counter()
    import evolog.eventlog.sealed._seal  # noqa: F401  (pyarrow, numpy and the segment writer)

    print(f"seal: importing the Parquet machinery once: {(time.perf_counter() - t) * 1000:.0f} ms")
    for label, strip_ids in (("demo ids", False), ("generated ids", True)):
        store = tmp / f"seal-{label.replace(' ', '-')}"
        events = _demo_events(n, strip_ids)
        fill_store(store, events)
        with EventLog(store, durability="none", auto_seal="off") as log:
            t = time.perf_counter()
            res = log.seal()
            dt = time.perf_counter() - t
            seg = sum(s.bytes for s in log.snapshot().segments)
        jsonl = sum(len(eventlog.to_json(e)) + 1 for e in events)
        print(
            f"seal {res.rows} demo-mix events ({label}): {res.rows / dt:9.0f} events/s "
            f"(goal >= 500,000/s); {seg / res.rows:5.1f} B/event vs {jsonl / res.rows:5.0f} "
            f"B/event as JSONL (goal <= 60)"
        )


def fill_store(store: Path, events: list[eventlog.Event]) -> None:
    """A new store holding ``events`` in its WAL, appended 10k at a time without fsync."""
    with EventLog(store, create=True, durability="none", auto_seal="off") as log:
        for i in range(0, len(events), 10_000):
            log.append_many(events[i : i + 10_000])


_FRESH_SEAL = """
import sys, time
import evolog.eventlog.sealed._seal  # the Parquet machinery, timed apart
import evolog.eventlog.sealed._segments
{setup}
from evolog.eventlog import EventLog
with EventLog(sys.argv[1]) as log:
    t = time.perf_counter()
    rows = log.seal().rows
    print(rows / (time.perf_counter() - t))
"""


def fresh_seal_rate(store: Path, setup: str = "") -> float:
    """Events/s of sealing ``store`` in a process of its own (``setup``: a line run first)."""
    code = _FRESH_SEAL.format(setup=setup)
    out = subprocess.run([sys.executable, "-c", code, str(store)], check=True, capture_output=True)
    return float(out.stdout)


def sealing_fresh(tmp: Path, n: int, runs: int) -> None:
    """Seal in a process of its own, as `evolog seal` and an auto-seal do."""
    events = _demo_events(n)
    rates = []
    for i in range(runs):
        store = tmp / f"seal-fresh-{i}"
        fill_store(store, events)
        rates.append(fresh_seal_rate(store))
    print(
        f"seal {n} demo-mix events in a fresh process: median {statistics.median(rates):9.0f} "
        f"events/s over {runs} runs (min {min(rates):.0f}, max {max(rates):.0f}; "
        f"goal >= 500,000/s)"
    )


def replay_arrow(tmp: Path, n: int) -> None:
    store = tmp / "replay"
    with EventLog(store, create=True, durability="none", auto_seal="off") as log:
        for i in range(0, n, 100_000):
            log.append_many(
                Outcome(
                    action_id=f"a{i + j}",
                    status="success",
                    gene=f"g{j % 20}",
                    signals=["x", f"y{j % 100}"],
                    key=f"x|y{j % 100}",
                    score=0.5,
                )
                for j in range(min(100_000, n - i))
            )
            log.seal()
        import pyarrow.parquet as pq

        paths = log.snapshot().segment_paths()
        t = time.perf_counter()
        rows = sum(pq.read_table(p).num_rows for p in paths)
        raw = rows / (time.perf_counter() - t)
        t = time.perf_counter()
        got = sum(b.num_rows for b in log.replay_arrow())
        ours = got / (time.perf_counter() - t)
    print(
        f"replay {got} sealed events as Arrow: {ours:10.0f} events/s vs pyarrow read_table "
        f"{raw:10.0f}/s -> ratio {ours / raw:.2f} (goal >= 1,000,000 events/s)"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    q = args.quick
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        cold_append(tmp, 5 if q else 21, [0, 10_000] if q else [0, 10_000, 100_000])
        durable_appends(tmp, 500 if q else 2000, 3 if q else 7)
        group_commit(tmp, 20_000 if q else 200_000, 3 if q else 5)
        index_inserts(tmp, 20_000 if q else 40_000, 3 if q else 5)
        sealing(tmp, 20_000 if q else 200_000)
        sealing_fresh(tmp, 20_000 if q else 200_000, 3 if q else 5)
        replay_arrow(tmp, 100_000 if q else 1_000_000)


if __name__ == "__main__":
    main()
