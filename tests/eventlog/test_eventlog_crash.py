"""kill -9 of real writer processes: appending, in a batch, sealing, compacting.

A child (``tests/_crashy.py``) appends with durability ``always`` and records each seq and id
only after ``append`` returned. After every kill the log must hold every acknowledged event
exactly once, nothing the child never tried, whole batches or none of them, seqs 1..N
without a gap; ``verify`` must pass (a torn tail is a note, not a problem), and the next
writer must carry on.

``--crash-loops N`` / ``EVOLOG_CRASH_LOOPS`` sets the number of kills (5 by default); the
``long`` variants run 100.
"""

from __future__ import annotations

import random
import re
import time
from collections import defaultdict
from pathlib import Path

import pytest
from _eventlog_util import check_acked, read_acks, read_log, spawn
from conftest import LONG_CRASH_LOOPS
from evolog.eventlog import Event, EventLog, Note

_BATCH_ID = re.compile(r"^(?P<prefix>r\d+)-b(?P<batch>\d+)-of(?P<size>\d+)-(?P<j>\d+)$")


def kill_rounds(
    store: Path, tmp: Path, mode: str, rounds: int, max_delay: float, *args: str
) -> dict[str, list[tuple[int, str]]]:
    """Start a writer, let it run a random while, kill -9 it, check the log; repeat."""
    rnd = random.Random(f"{mode}-{rounds}")
    acks: dict[str, list[tuple[int, str]]] = {}
    for r in range(rounds):
        prefix = f"r{r}"
        ack = tmp / f"ack-{prefix}"
        child = spawn(mode, store, ack, "--prefix", prefix, "--ready", *args)
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready", child.communicate()[1]
        time.sleep(rnd.uniform(0.01, max_delay))
        child.kill()
        _, err = child.communicate(timeout=60)
        assert child.returncode == -9, f"the writer died by itself: {err}"
        acks[prefix] = read_acks(ack)
        events = read_log(store)
        if mode == "batches":
            check_batches(events, acks)
        elif mode == "group":
            check_group(events, acks)
        else:
            check_acked(events, acks)
    assert sum(len(v) for v in acks.values()) > 0, "the writer never got to append"
    return acks


def check_batches(events: list[Event], acks: dict[str, list[tuple[int, str]]]) -> None:
    """Every batch is all there or not there at all; acked batches are there."""
    sizes: dict[tuple[str, int], int] = {}
    counts: dict[tuple[str, int], int] = defaultdict(int)
    for e in events:
        m = _BATCH_ID.match(e.id)
        assert m, e.id
        key = (m["prefix"], int(m["batch"]))
        sizes[key] = int(m["size"])
        counts[key] += 1
    for key, size in sizes.items():
        assert counts[key] == size, f"batch {key}: {counts[key]} of {size} events present"
    by_seq = {e.seq: e.id for e in events}
    for prefix, pairs in acks.items():
        for seq, eid in pairs:
            assert by_seq.get(seq) == eid
        present = sorted(b for p, b in sizes if p == prefix)
        assert present == list(range(len(present))), f"{prefix}: batches {present}"
        acked = {int(_BATCH_ID.match(eid)["batch"]) for _, eid in pairs}  # type: ignore[index]
        assert len(acked) <= len(present) <= len(acked) + 1


def check_group(events: list[Event], acks: dict[str, list[tuple[int, str]]]) -> None:
    """Flushed (acked) appends are present at their seq; per writer, what is present is a
    prefix of what it appended (groups written before the kill may go past the acks)."""
    by_seq = {e.seq: e.text for e in events}  # type: ignore[attr-defined]
    for prefix, pairs in acks.items():
        for seq, name in pairs:
            assert by_seq.get(seq) == name, f"acked {name} at seq {seq}; log has {by_seq.get(seq)}"
        mine = [e.text for e in events if e.text.startswith(prefix + "-")]  # type: ignore[attr-defined]
        assert mine == [f"{prefix}-{i}" for i in range(len(mine))]
        assert len(mine) >= len(pairs)


def carry_on(store: Path) -> None:
    """After the last kill: a new writer appends, seals and compacts; all still checks."""
    before = read_log(store)
    with EventLog(store) as log:
        seq = log.append(Note(id="after-the-crashes"))
        assert seq == len(before) + 1
        log.seal()
        log.compact(small_rows=10**9, target_rows=10**9)
        assert log.append(Note(id="after-the-crashes")) == seq
    after = read_log(store)
    assert [e.id for e in after] == [e.id for e in before] + ["after-the-crashes"]


# Group commit: groups of 64 written by the append that fills them, fsynced in the background.
_GROUP = (
    "group",
    0.3,
    ("--durability", "batch", "--group-size", "64", "--batch-max", "200", "--pause-ms", "2"),
)


@pytest.mark.parametrize(
    ("mode", "max_delay", "args"),
    [
        ("append", 0.25, ()),
        ("batches", 0.3, ("--batch-max", "300", "--text-bytes", "2000")),
        # Batches of many frames: a kill between their frames must drop the whole batch.
        ("batches", 0.3, ("--batch-max", "300", "--text-bytes", "2000", "--frame-bytes", "8192")),
        _GROUP,
        ("seal", 0.4, ("--seal-every", "20")),
        ("compact", 0.4, ("--seal-every", "15")),
    ],
)
def test_kill_writer(
    tmp_path: Path, crash_loops: int, mode: str, max_delay: float, args: tuple[str, ...]
) -> None:
    store = tmp_path / "store"
    kill_rounds(store, tmp_path, mode, crash_loops, max_delay, *args)
    carry_on(store)


@pytest.mark.long
@pytest.mark.parametrize(
    ("mode", "max_delay", "args"),
    [
        ("append", 0.25, ()),
        ("batches", 0.3, ("--batch-max", "100", "--text-bytes", "300")),
        ("batches", 0.3, ("--batch-max", "100", "--text-bytes", "300", "--frame-bytes", "2048")),
        _GROUP,
        ("seal", 0.4, ("--seal-every", "20")),
        ("compact", 0.4, ("--seal-every", "15")),
    ],
)
def test_kill_writer_long(
    tmp_path: Path, mode: str, max_delay: float, args: tuple[str, ...]
) -> None:
    store = tmp_path / "store"
    kill_rounds(store, tmp_path, mode, LONG_CRASH_LOOPS, max_delay, *args)
    carry_on(store)


#: The crash points are dealt out to this many tests (point p to the one starting at
#: ``(p - 1) % _STRIDE + 1``), so parallel workers share them; together they try every point.
_STRIDE = 3


@pytest.mark.parametrize("first", range(1, _STRIDE + 1))
@pytest.mark.parametrize("op", ["seal", "compact"])
def test_kill_at_every_step_of(tmp_path: Path, op: str, first: int) -> None:
    """SIGKILL before each durable file operation (fsync, rename, unlink, truncate, the
    chmod that retires a WAL file) of a seal or a compaction: every crash point recovers
    to the same log."""
    n = 60
    want = [f"x-{i}" for i in range(n)]
    # The first point that completes ends each share: every point before it crashed. If
    # the operation did fewer than 5, the share holding point 5 completes there and fails.
    for at in range(first, 200, _STRIDE):
        store = tmp_path / f"store-{at}"
        child = spawn(
            "crashpoint",
            store,
            tmp_path / f"ack-{at}",
            "--op",
            op,
            "--count",
            str(n),
            "--crash-at",
            str(at),
        )
        out, err = child.communicate(timeout=60)
        if child.returncode == 0:
            assert out.strip() == "completed"
            assert at > 5, f"{op} did fewer than {at} durable file operations"
            break
        assert child.returncode == -9, err
        events = read_log(store)
        assert [e.id for e in events] == want, f"crash point {at}"
        carry_on(store)
    else:
        pytest.fail(f"{op} never completed")
