"""Reading the WAL tail: frames of many events, and reading backwards from the end.

``Snapshot.tail_records(after)`` reads the newest frames backwards from the end of the WAL
when few events are new, and scans forward otherwise; both must give the same events.
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

import pytest
from evolog.eventlog import CorruptLogError, EventLog, Signal, Snapshot
from evolog.eventlog._store import Paths
from evolog.eventlog.schema._codec import encode
from evolog.eventlog.wal import _frames as fr
from hypothesis import given, settings
from hypothesis import strategies as st

T0 = 1_767_225_600_000_000


def _read(log: EventLog, after: int, forward: bool) -> tuple[int, list[tuple[int, str]]]:
    with log.snapshot() as snap:
        if forward:
            snap.tail_frames()  # a snapshot that has scanned forward answers from that scan
        events = snap.tail_events(after)
        return snap.head_seq, [(e.seq, e.id) for e in events]


@given(
    st.lists(st.integers(1, 30), min_size=1, max_size=8),
    st.integers(0, 2**32),
    st.sampled_from([1, 64, 1 << 20]),
)
@settings(max_examples=25, deadline=None)
def test_reading_backwards_equals_a_forward_scan(
    sizes: list[int], seed: int, frame_bytes: int
) -> None:
    rng = random.Random(seed)
    old = fr.MAX_FRAME_BODY
    fr.MAX_FRAME_BODY = frame_bytes  # batches of one frame, of a few, of one event each
    try:
        with (
            tempfile.TemporaryDirectory() as tmp,
            EventLog(Path(tmp) / "s", create=True, durability="none") as log,
        ):
            n = 0
            for size in sizes:
                log.append_many(Signal(id=f"e{n + i}", ts=T0, signals=["a"]) for i in range(size))
                n += size
                if rng.random() < 0.3:
                    log.seal()
                for after in {0, n // 2, max(0, n - 3), n - 1, n}:
                    got = _read(log, after, forward=False)
                    assert got == _read(log, after, forward=True)
                    with log.snapshot() as snap:
                        sealed = snap.manifest.sealed_seq
                    first = max(after, sealed) + 1
                    assert got == (n, [(s, f"e{s - 1}") for s in range(first, n + 1)])
    finally:
        fr.MAX_FRAME_BODY = old


def test_a_batch_is_one_frame_and_splits_past_the_size_cap(tmp_path: Path) -> None:
    with EventLog(tmp_path / "s", create=True, durability="none") as log:
        log.append_many(Signal(id=f"a{i}", ts=T0) for i in range(500))
        with log.snapshot() as snap:
            assert [(f.seq, f.n, f.end) for f in snap.tail_frames()] == [(1, 500, True)]
        old = fr.MAX_FRAME_BODY
        fr.MAX_FRAME_BODY = 1000
        try:
            log.append_many(Signal(id=f"b{i}", ts=T0) for i in range(100))
        finally:
            fr.MAX_FRAME_BODY = old
        with log.snapshot() as snap:
            frames = snap.tail_frames()[1:]
            assert len(frames) > 2 and sum(f.n for f in frames) == 100
            assert [f.end for f in frames] == [False] * (len(frames) - 1) + [True]
            assert all(len(f.body) <= 1000 for f in frames)
            assert [e.id for e in snap.tail_events(550)] == [f"b{i}" for i in range(50, 100)]


@pytest.mark.parametrize("tail", ["torn", "uncommitted"])
def test_reading_backwards_ignores_what_is_not_committed(tmp_path: Path, tail: str) -> None:
    path = tmp_path / "s"
    with EventLog(path, create=True, durability="none") as log:
        log.append_many(Signal(id=f"e{i}", ts=T0, signals=["a"]) for i in range(10))
    body = encode(Signal(id="late", ts=T0))
    old = fr.MAX_FRAME_BODY
    fr.MAX_FRAME_BODY = 1  # two frames: the first whole but not the end of its append
    try:
        batch = fr.encode_frames([(11, body), (12, body)])
    finally:
        fr.MAX_FRAME_BODY = old
    # A writer died (or is still writing): half a batch, or half a frame, at the end.
    extra = batch[: len(batch) // 2] if tail == "uncommitted" else batch[:7]
    wal = sorted((path / "wal").iterdir())[-1]
    with open(wal, "ab") as f:
        f.write(extra)
    with Snapshot.take(Paths.of(path)) as snap:  # a reader: nothing repairs the tail
        assert snap.head_seq == 10
        assert [e.seq for e in snap.tail_events(4)] == list(range(5, 11))
        assert [f.seq for f in snap.tail_frames()] == list(range(1, 2))
        assert snap.tail_frames()[0].n == 10


def test_a_wal_file_of_the_previous_format_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with EventLog(path, create=True) as log:
        log.append(Signal(id="a", ts=T0))
    (wal,) = (path / "wal").iterdir()
    data = wal.read_bytes()
    wal.write_bytes(fr.OLD_MAGIC + data[8:])  # as the earlier format's writer left it
    before = wal.read_bytes()
    with EventLog(path) as log:
        with pytest.raises(CorruptLogError, match="previous format"):
            log.append(Signal(id="b", ts=T0))
        with pytest.raises(CorruptLogError, match="previous format"):
            list(log.replay())
    assert wal.read_bytes() == before
