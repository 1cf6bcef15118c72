"""Durability policies: ``batch`` (group commit) and ``none``, seen from other processes."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from _eventlog_util import REPO, read_log
from evolog.eventlog import EventLog, Note
from evolog.eventlog.wal import _group

_IDS = (
    "import sys; from evolog.eventlog import EventLog\n"
    "with EventLog(sys.argv[1]) as log: print(' '.join(e.id for e in log.replay()))\n"
)
_APPEND = (
    "import sys; from evolog.eventlog import EventLog, Note\n"
    "with EventLog(sys.argv[1]) as log: print(log.append(Note(id=sys.argv[2])))\n"
)


def other_process(code: str, *args: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code, *args], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def ids_seen_elsewhere(store: Path) -> list[str]:
    return other_process(_IDS, str(store)).split()


def test_batch_returns_seqs_at_once_and_is_visible_after_flush(store: Path) -> None:
    # group_size above the number of appends: nothing is written until flush().
    with EventLog(store, create=True, durability="batch", group_ms=60_000, group_size=5000) as log:
        start = time.perf_counter()
        seqs = [log.append(Note(id=f"b{i}")) for i in range(2000)]
        elapsed = time.perf_counter() - start
        assert seqs == list(range(1, 2001))
        assert elapsed < 2.0, f"2000 group-committed appends took {elapsed:.2f} s"
        assert ids_seen_elsewhere(store) == [], "unflushed appends are visible"
        log.flush()
        assert ids_seen_elsewhere(store) == [f"b{i}" for i in range(2000)]
        assert log.append(Note(id="after-flush")) == 2001
    # close() flushes too
    assert ids_seen_elsewhere(store)[-1] == "after-flush"
    assert len(read_log(store)) == 2001


def test_batch_group_commits_on_its_own_within_group_ms(store: Path) -> None:
    with EventLog(store, create=True, durability="batch", group_ms=20) as log:
        log.append_many([Note(id="t1"), Note(id="t2")])
        deadline = time.monotonic() + 10
        while ids_seen_elsewhere(store) != ["t1", "t2"]:
            assert time.monotonic() < deadline, "the group commit timer never flushed"
            time.sleep(0.05)


def test_batch_writer_and_other_writers_share_one_sequence(store: Path) -> None:
    """A group-committing writer holds the write lock until it flushes; another process's
    append waits for it and gets the next seq, never an interleaved or duplicate one."""
    with EventLog(store, create=True, durability="batch", group_ms=60_000) as log:
        log.append_many([Note(id=f"p{i}") for i in range(3)])
        child = subprocess.Popen(
            [sys.executable, "-c", _APPEND, str(store), "child"],
            cwd=REPO,
            stdout=subprocess.PIPE,
            text=True,
        )
        time.sleep(0.5)
        assert child.poll() is None, "the other writer did not wait for the lock"
        log.append(Note(id="p3"))
        log.flush()
        out, _ = child.communicate(timeout=60)
        assert out.strip() == "5"
        assert log.append(Note(id="p4")) == 6
    assert [e.id for e in read_log(store)] == ["p0", "p1", "p2", "p3", "child", "p4"]


def test_flushed_batch_survives_kill_unflushed_is_absent(store: Path, tmp_path: Path) -> None:
    code = (
        "import sys, time; from evolog.eventlog import EventLog, Note\n"
        "log = EventLog(sys.argv[1], create=True, durability='batch', group_ms=60_000)\n"
        "log.append_many([Note(id=f'f{i}') for i in range(100)])\n"
        "log.flush()\n"
        "log.append_many([Note(id=f'u{i}') for i in range(100)])\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code, str(store)], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready"
    child.kill()
    child.communicate(timeout=60)
    assert [e.id for e in read_log(store)] == [f"f{i}" for i in range(100)]
    with EventLog(store) as log:  # the killed writer's lock is gone with it
        assert log.append(Note(id="u0")) == 101


def test_none_is_visible_at_once_and_survives_kill(store: Path) -> None:
    code = (
        "import sys, time; from evolog.eventlog import EventLog, Note\n"
        "log = EventLog(sys.argv[1], create=True, durability='none')\n"
        "print(log.append_many([Note(id=f'n{i}') for i in range(50)])[-1], flush=True)\n"
        "time.sleep(60)\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code, str(store)], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "50"
    assert ids_seen_elsewhere(store) == [f"n{i}" for i in range(50)]  # while it still runs
    child.kill()
    child.communicate(timeout=60)
    assert [e.id for e in read_log(store)] == [f"n{i}" for i in range(50)]
    with EventLog(store, durability="none") as log:
        assert log.append(Note(id="n0")) == 1
        assert log.append(Note(id="n50")) == 51


def test_batch_appends_of_events_without_ids(store: Path) -> None:
    """The common group-commit append (an id minted by the log): consecutive seqs, a full
    group is written at once, and an event sent again before the flush is a duplicate."""
    with EventLog(store, create=True, durability="batch", group_ms=60_000, group_size=4) as log:
        assert [log.append(Note(text=str(i))) for i in range(4)] == [1, 2, 3, 4]
        assert len(ids_seen_elsewhere(store)) == 4, "the fourth append writes the group"
        # EventLog.append returns the seq only; the writer's receipt names the minted id.
        buffered = log._writer.append_one(Note(text="4"))
        assert (buffered.seq, buffered.duplicate) == (5, False)
        assert len(ids_seen_elsewhere(store)) == 4, "a group of one is not written yet"
        again = log.append_receipts([Note(id=buffered.id, text="4")])
        assert [(r.seq, r.duplicate) for r in again] == [(5, True)]
        assert log.append(Note(text="5")) == 6
    events = read_log(store)
    assert [(e.seq, e.text) for e in events] == [(i, str(i - 1)) for i in range(1, 7)]  # type: ignore[attr-defined]
    assert events[4].id == buffered.id
    assert len({e.id for e in events}) == 6


_FAILING_GROUP = """
import resource, signal, sys, time
from evolog.eventlog import EventLog, Note, StorageError
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG
log = EventLog(sys.argv[1], create=True, durability="batch", group_ms=20, group_size=10_000)
log.append(Note(id="first"))  # the WAL and the id index are made before the limit
log.flush()
resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, resource.RLIM_INFINITY))
print("acked", [log.append(Note(text="x" * 2000)) for _ in range(20)])
time.sleep(0.5)  # the group is due: the syncer thread's write fails (40 kB > 20 kB)
try:
    log.{report}
except StorageError as exc:
    print("raised", exc)
print("then", log.append(Note(id="next")))
log.close()
"""


def test_a_timed_group_commit_that_failed_is_raised_by_the_next_call(tmp_path: Path) -> None:
    """A group flushed by the timer on the syncer thread hits a full disk: the next append
    raises before taking its event (a retry cannot duplicate it), flush() raises the same
    way, the error is raised once, and the log holds only what was written."""
    for report in ('append(Note(id="refused"))', "flush()"):
        store = tmp_path / report[:5]
        out = other_process(_FAILING_GROUP.format(report=report), str(store)).splitlines()
        assert out[0] == f"acked {list(range(2, 22))}"
        assert out[1].startswith("raised ") and "disk is full" in out[1], out
        assert out[2] == "then 2", "the lost group's seqs are free again"
        assert [(e.seq, e.id) for e in read_log(store)] == [(1, "first"), (2, "next")]


def test_the_group_commit_thread_ends_when_idle(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_group, "IDLE_EXIT_S", 0.05)
    with EventLog(store, create=True, durability="batch", group_ms=10) as log:
        log.append(Note(id="a"))
        syncer = log._writer._syncer
        assert syncer is not None and syncer.is_alive()
        syncer.join(timeout=5)
        assert not syncer.is_alive() and log._writer._syncer is None
        assert ids_seen_elsewhere(store) == ["a"], "flushed by the timer before it ended"
        log.append(Note(id="b"))  # a new group starts a new thread
        assert log._writer._syncer is not None and log._writer._syncer is not syncer
    assert [e.id for e in read_log(store)] == ["a", "b"]


def test_a_batch_larger_than_a_group_is_flushed_in_time(store: Path) -> None:
    """append_many of more than group_size opening a group: written at once, and the timed
    flush still comes (fsync, then the lock is released for other writers)."""
    with EventLog(store, create=True, durability="batch", group_ms=20, group_size=10) as log:
        assert log.append_many([Note(id=f"n{i}") for i in range(25)]) == list(range(1, 26))
        time.sleep(0.2)
        assert other_process(_APPEND, str(store), "elsewhere") == "26"
        assert log._writer._held is False
    assert [e.id for e in read_log(store)][-2:] == ["n24", "elsewhere"]
