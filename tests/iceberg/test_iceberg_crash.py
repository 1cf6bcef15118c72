"""A publish killed with SIGKILL at any moment leaves a valid table; the next completes it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from _eventlog_util import REPO
from _iceberg_util import (
    add_events,
    interleaved_stores,
    replay_rows,
    sorted_rows,
    table_rows,
)
from evolog.eventlog import EventLog
from pyiceberg.catalog.sql import SqlCatalog

_CHILD = """
import sys
from evolog.iceberg import publish
import pyiceberg.catalog.sql, pyiceberg.io.pyarrow  # loaded before 'ready': kills hit work
print("ready", flush=True)
publish(sys.argv[1], sys.argv[2], store_id="crashy")
print("done", flush=True)
"""


def _publish_killed_after(store: Path, wh: Path, delay: float) -> tuple[bool, float]:
    """Start a publish, SIGKILL it ``delay`` s after its imports unless it ended first;
    (whether it finished, seconds from its imports to its end or kill)."""
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(store), str(wh)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdout is not None
    assert child.stdout.readline() == b"ready\n", child.stderr.read() if child.stderr else ""
    start = time.perf_counter()
    try:
        child.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        os.kill(child.pid, signal.SIGKILL)
    elapsed = time.perf_counter() - start
    out, err = child.communicate(timeout=60)
    assert child.returncode in (0, -signal.SIGKILL), err.decode()
    return b"done" in out, elapsed


def _check_valid(store: Path, wh: Path, sealed_seqs: set[int]) -> int:
    """The table (if any) loads, every file it lists exists, and it holds exactly the
    store's events 1..k for a k that some earlier manifest sealed; return k."""
    if not (wh / "catalog.db").exists():
        return 0
    cat = SqlCatalog("evolog", uri=f"sqlite:///{wh}/catalog.db", warehouse=f"file://{wh}")
    try:
        table = cat.load_table("evolog.events")
    except Exception as exc:  # not created yet: the kill came first
        assert type(exc).__name__ == "NoSuchTableError"
        return 0
    for task in table.scan().plan_files():
        assert os.path.exists(task.file.file_path.removeprefix("file://"))
    rows = table_rows(table.scan().to_arrow())
    k = len(rows)
    assert k in sealed_seqs, f"table holds {k} events; sealed prefixes were {sealed_seqs}"
    assert rows == sorted_rows(replay_rows(store, "crashy", k))
    return k


def test_kill_9_during_publish_then_publish_again(tmp_path: Path, crash_loops: int) -> None:
    store, wh = tmp_path / "store", tmp_path / "wh"
    EventLog(store, create=True).close()
    sealed = {0}
    # Time one whole publish (after imports) to spread the kills over it.
    add_events(store, 30, seed=0)
    sealed.add(30)
    done, span = _publish_killed_after(store, wh, 60.0)
    assert done
    finished = 0
    for i in range(crash_loops):
        for j in range(6):  # a few new segments per round
            add_events(store, 20 + j, seed=100 * i + j)
        if i == crash_loops // 2:
            EventLog(store).compact(small_rows=10_000)  # this round's publish overwrites
        with EventLog(store) as log:
            sealed.add(max(e.seq for e in log.replay()))
        delay = span * (i + 0.5) / crash_loops
        finished += _publish_killed_after(store, wh, delay)[0]
        _check_valid(store, wh, sealed)
    # The next publish completes whatever was cut short.
    assert _publish_killed_after(store, wh, 60.0)[0]
    assert _check_valid(store, wh, sealed) == max(sealed)
    assert finished < crash_loops, "every publish finished before its kill: no crash tested"


_PUBLISHER = """
import sys
from evolog.iceberg import publish
print(publish(sys.argv[1], sys.argv[2], store_id=sys.argv[3]).operation)
"""


def test_concurrent_publishers_into_one_table(tmp_path: Path) -> None:
    """Three stores, and one of them twice, publishing at once (the table not created
    yet): every event once, whoever wins each commit."""
    stores = interleaved_stores(tmp_path, rounds=4)
    wh = tmp_path / "wh"
    jobs = [*stores.items(), ("alpha", stores["alpha"])]
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _PUBLISHER, str(path), str(wh), name],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for name, path in jobs
    ]
    # Every child is waited for (and its pipes closed) before any assertion: a failure
    # must not leave pipes for a later test's garbage collection to report.
    done = [child.communicate(timeout=120) for child in children]
    for child, (_, err) in zip(children, done, strict=True):
        assert child.returncode == 0, err.decode()
    ops = [out.decode().strip() for out, _ in done]
    assert sorted(ops) == ["append", "append", "append", "none"]
    cat = SqlCatalog("evolog", uri=f"sqlite:///{wh}/catalog.db", warehouse=f"file://{wh}")
    table = cat.load_table("evolog.events")
    paths = [t.file.file_path for t in table.scan().plan_files()]
    assert len(paths) == len(set(paths))
    want = sorted_rows([r for n, p in stores.items() for r in replay_rows(p, n)])
    assert table_rows(table.scan().to_arrow()) == want
