"""What the seal's design choices buy, each against the alternative in the same run.

    python bench/bench_seal_parts.py [--events 200000] [--runs 3]

1. Parquet writer settings on 128k demo-mix rows: dictionary encoding everywhere (the old
   setting) against delta encodings for seq, ts and id (eventlog.sealed._segments.DELTA_ENCODED).
2. Reading the WAL of a 2e5-event store in a fresh process: copied with pread (what readers
   do) against mapped (what a seal does), evolog.eventlog.wal._wal.read_frames.
3. Whole fresh-process seals with 128k-row groups (eventlog.sealed._segments.ROW_GROUP_ROWS) against
   64k-row groups, whose shorter last group might end a seal sooner.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from bench_eventlog import _demo_events, fill_store, fresh_seal_rate
from evolog.eventlog import Event
from evolog.eventlog.schema import _codec
from evolog.eventlog.sealed._bodies import bodies_to_table
from evolog.eventlog.sealed._segments import DELTA_ENCODED


def parquet_settings(runs: int) -> None:
    events = _demo_events(128 * 1024)
    bodies = [
        b"".join(_codec.encode(e) for e in events[i : i + 1000])
        for i in range(0, len(events), 1000)
    ]
    table = bodies_to_table(bodies, 0, len(events), 1)
    plain = [n for n in table.schema.names if n not in DELTA_ENCODED]
    settings = {
        "dictionary everywhere": {},
        "delta seq/ts, prefix id": {"use_dictionary": plain, "column_encoding": DELTA_ENCODED},
    }
    times: dict[str, list[float]] = {label: [] for label in settings}
    sizes: dict[str, int] = {}
    for _ in range(runs):  # the two settings alternate: the machine's drift hits both
        for label, extra in settings.items():
            out = pa.BufferOutputStream()
            t = time.perf_counter()
            with pq.ParquetWriter(
                out, table.schema, compression="zstd", compression_level=1, **extra
            ) as w:
                w.write_table(table, row_group_size=len(events))
            times[label].append(time.perf_counter() - t)
            sizes[label] = out.getvalue().size
    for label, spent in times.items():
        print(
            f"parquet, {label:24s}: {statistics.median(spent) / len(events) * 1e6:.2f} us/row "
            f"(median of {runs}, range {min(spent) / len(events) * 1e6:.2f}-"
            f"{max(spent) / len(events) * 1e6:.2f}), {sizes[label] / len(events):.1f} B/row"
        )


_READ = """
import sys, time, os
from evolog.eventlog.wal import _wal
files = _wal.list_wal(sys.argv[1] + "/wal")
t = time.perf_counter()
for base, path in files:
    fd = os.open(path, os.O_RDONLY)
    frames = _wal.read_frames(_wal.WalFile(base, path, fd, os.fstat(fd).st_size), {mapped})
    os.close(fd)
print(time.perf_counter() - t)
"""


def _store(tmp: Path, name: str, events: list[Event]) -> Path:
    fill_store(tmp / name, events)
    return tmp / name


def _run(code: str, store: Path) -> float:
    out = subprocess.run([sys.executable, "-c", code, str(store)], check=True, capture_output=True)
    return float(out.stdout)


def wal_reads(tmp: Path, n: int, runs: int) -> None:
    store = _store(tmp, "reads", _demo_events(n))
    got: dict[str, list[float]] = {"copied": [], "mapped": []}
    for _ in range(runs):
        for label, mapped in (("copied", False), ("mapped", True)):
            got[label].append(_run(_READ.format(mapped=mapped), store))
    print(
        f"read the WAL of {n} events in a fresh process: copied "
        f"{statistics.median(got['copied']) * 1000:.1f} ms, mapped "
        f"{statistics.median(got['mapped']) * 1000:.1f} ms (medians of {runs})"
    )


def row_groups(tmp: Path, n: int, runs: int) -> None:
    events = _demo_events(n)
    got: dict[int, list[float]] = {64 * 1024: [], 128 * 1024: []}
    for r in range(runs):
        for rows in got:
            store = _store(tmp, f"rg-{rows}-{r}", events)
            setup = f"evolog.eventlog.sealed._segments.ROW_GROUP_ROWS = {rows}"
            got[rows].append(fresh_seal_rate(store, setup))
    print(
        f"fresh-process seal of {n} events, median of {runs}: "
        + ", ".join(
            f"{rows // 1024}k-row groups {statistics.median(v):.0f} events/s"
            for rows, v in got.items()
        )
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    parquet_settings(a.runs)
    with tempfile.TemporaryDirectory() as d:
        wal_reads(Path(d), a.events, a.runs)
        row_groups(Path(d), a.events, a.runs)


if __name__ == "__main__":
    main()
