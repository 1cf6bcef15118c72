"""Many writer processes on one store, and snapshot readers while a writer seals.

Writers are real processes (``tests/_crashy.py``) sharing the store's file lock; readers
run in this process.
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pyarrow as pa
from _eventlog_util import check_acked, read_acks, read_log, spawn
from evolog.eventlog import EventLog

WRITERS = 8
PER_WRITER = 150


def test_eight_writer_processes(tmp_path: Path) -> None:
    store = tmp_path / "store"
    EventLog(store, create=True).close()
    children = []
    for w in range(WRITERS):
        mode, extra = ("seal", ("--seal-every", "40")) if w == 0 else ("append", ())
        args = ("--prefix", f"w{w}", "--count", str(PER_WRITER), *extra)
        children.append(spawn(mode, store, tmp_path / f"ack-w{w}", *args))
    for child in children:
        _, err = child.communicate(timeout=300)
        assert child.returncode == 0, err
    acks = {f"w{w}": read_acks(tmp_path / f"ack-w{w}") for w in range(WRITERS)}
    events = read_log(store)
    assert len(events) == WRITERS * PER_WRITER
    check_acked(events, acks)  # each writer's events, in its own append order, all acked
    for pairs in acks.values():
        assert len(pairs) == PER_WRITER
        seqs = [s for s, _ in pairs]
        assert seqs == sorted(seqs)
    # Writers really interleaved: no writer got one contiguous run of seqs.
    runs = sum(1 for a, b in itertools.pairwise(events) if a.id[:3] != b.id[:3])
    assert runs > WRITERS


def _check_prefix(seqs: list[int], ids: list[str]) -> None:
    n = len(seqs)
    assert seqs == list(range(1, n + 1)), "a snapshot saw a gap or a reordering"
    assert ids == [f"x-{i}" for i in range(n)], "a snapshot saw the wrong event at a seq"


def test_snapshot_readers_see_a_gap_free_prefix(tmp_path: Path) -> None:
    """One process appends, seals and compacts; every replay here is a consistent prefix."""
    store = tmp_path / "store"
    EventLog(store, create=True).close()
    total = 800
    child = spawn(
        "compact",
        store,
        tmp_path / "ack",
        "--prefix",
        "x",
        "--count",
        str(total),
        "--seal-every",
        "50",
        "--durability",
        "none",
    )
    seen: list[int] = []
    with EventLog(store) as log:
        while True:
            done = child.poll() is not None  # then this pass sees the finished log
            events = list(log.replay())
            _check_prefix([e.seq for e in events], [e.id for e in events])
            batches = list(log.replay_arrow(columns=["seq", "id"]))
            if batches:
                table = pa.Table.from_batches(batches)
                _check_prefix(table["seq"].to_pylist(), table["id"].to_pylist())
            with log.snapshot() as snap:
                assert snap.head_seq >= len(events)
                assert snap.manifest.sealed_seq <= snap.head_seq
            seen.append(len(events))
            if done:
                break
            time.sleep(0.005)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    assert seen == sorted(seen), "a later snapshot saw fewer events"
    assert len(set(seen)) > 3, f"the reader never overlapped the writer: {seen}"
    assert seen[-1] == total
    assert len(read_log(store)) == total
