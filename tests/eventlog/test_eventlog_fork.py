"""A log opened before ``fork()`` and used on both sides of it.

flock belongs to the open file description, which parent and children share after a fork:
each would "hold" the write lock at once. A child must take its own lock (and its own WAL
descriptor and index mapping) before it appends.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from evolog.eventlog import EventLog, Note

CHILDREN = 4
PER_CHILD = 150


def _fork_appenders(
    append: Callable[[Note], int], ack_dir: Path, flush: Callable[[], None] = lambda: None
) -> list[int]:
    pids = []
    for c in range(CHILDREN):
        pid = os.fork()
        if pid == 0:  # the child: append through the inherited object, ack each seq
            code = 1
            try:
                with open(ack_dir / f"c{c}", "w") as acks:
                    for i in range(PER_CHILD):
                        eid = f"c{c}-{i}"
                        seq = append(Note(id=eid))
                        flush()  # (under ``batch`` an append is acknowledged by a flush)
                        acks.write(f"{seq} {eid}\n")
                        acks.flush()
                code = 0
            finally:
                os._exit(code)
        pids.append(pid)
    return pids


def _check(store: Path, ack_dir: Path, parent: list[tuple[int, str]]) -> None:
    acked = list(parent)
    for path in ack_dir.iterdir():
        for line in path.read_text().splitlines():
            seq, eid = line.split(" ")
            acked.append((int(seq), eid))
    assert len(acked) == CHILDREN * PER_CHILD + len(parent)
    seqs = [s for s, _ in acked]
    assert len(set(seqs)) == len(seqs), f"{len(seqs) - len(set(seqs))} seqs handed out twice"
    with EventLog(store) as log:
        report = log.verify()
        assert report.ok, report.problems
        by_seq = {e.seq: e.id for e in log.replay()}
    assert sorted(by_seq) == list(range(1, len(acked) + 1))
    for seq, eid in acked:
        assert by_seq[seq] == eid


@pytest.mark.parametrize("durability", ["always", "none", "batch"])
def test_children_append_through_an_inherited_log(tmp_path: Path, durability: str) -> None:
    store = tmp_path / "store"
    ack_dir = tmp_path / "acks"
    ack_dir.mkdir()
    parent: list[tuple[int, str]] = []
    with EventLog(store, create=True, durability=durability) as log:  # type: ignore[arg-type]
        parent.append((log.append(Note(id="p-0")), "p-0"))  # lock, WAL and index open
        if durability == "batch":
            log.flush()
        pids = _fork_appenders(log.append, ack_dir, log.flush)
        for i in range(1, 50):  # the parent goes on appending meanwhile
            parent.append((log.append(Note(id=f"p-{i}")), f"p-{i}"))
        log.flush()
        for pid in pids:
            _, status = os.waitpid(pid, 0)
            assert os.waitstatus_to_exitcode(status) == 0
    _check(store, ack_dir, parent)


def test_children_append_through_an_inherited_memory(tmp_path: Path) -> None:
    from evolog import Memory

    store = tmp_path / "mem"
    ack_dir = tmp_path / "acks"
    ack_dir.mkdir()
    with Memory(store) as mem:
        parent = [(mem.append(Note(id="p-0")), "p-0")]
        pids = _fork_appenders(mem.append, ack_dir)
        for pid in pids:
            _, status = os.waitpid(pid, 0)
            assert os.waitstatus_to_exitcode(status) == 0
        parent.append((mem.append(Note(id="p-1")), "p-1"))
    _check(store, ack_dir, parent)


def test_a_child_forked_inside_an_open_group_does_not_write_the_parents_group(
    tmp_path: Path,
) -> None:
    """Under ``batch`` the parent holds the lock with a group buffered: the child starts
    with nothing buffered and its own lock; the parent's group is written once."""
    store = tmp_path / "store"
    with EventLog(store, create=True, durability="batch", group_ms=60_000) as log:
        assert [log.append(Note(id=f"g{i}")) for i in range(3)] == [1, 2, 3]
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                log.append(Note(id="child"))
                log.close()
                code = 0
            finally:
                os._exit(code)
        log.flush()  # the child waits for the parent's lock until here
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    with EventLog(store) as log:
        assert [e.id for e in log.replay()] == ["g0", "g1", "g2", "child"]
        assert log.verify().ok
