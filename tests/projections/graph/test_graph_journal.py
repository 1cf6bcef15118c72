"""The graph checkpoint's journal: attempts and outcomes that change no view are appended
beside the state file instead of rewriting it, and answers stay those of a rebuild, at every
position, whatever the bound, after a torn or corrupt journal, and across a kill -9."""

from __future__ import annotations

import shutil
from pathlib import Path
from unittest import mock

import pytest
from _eventlog_util import fresh_store
from conftest import examples
from evolog.eventlog import Attempt, Constraint, Event, EventLog, Node, Outcome
from evolog.projections.graph import _cache
from evolog.projections.graph._cache import GraphCache, cached_memgraph, graph_views
from evolog.projections.graph._checkpoint import read_counted, read_head, read_state
from evolog.projections.graph._memgraph import load_memgraph
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import TRY_MIXES, TRY_TRACES, memgraph_histories

from tests.projections.graph.test_graph_checkpoint import (
    _check,
    _small_store,
    _state,
    killed_runs,
    play,
)


def _graph_dir(log: EventLog) -> Path:
    return Path(log.paths.cache) / "graph"


def _check_counted(log: EventLog) -> None:
    """The counted file has every attempt a node counts in the state it goes with, and every
    action id whose attempt in that state is one."""
    directory = str(_graph_dir(log))
    head = read_head(directory)
    if head is None:
        return
    counted = read_counted(directory, head)
    assert counted is not None
    state = read_state(directory, head)
    assert all(counted.attempt(a) for a in state.counted_in)
    assert all(counted.action(x) for x, a in state.actions.items() if a in state.counted_in)


def _check_in_place(log: EventLog) -> None:
    """:func:`_check`, leaving the checkpoint as it was (checking advances it)."""
    _check_counted(log)
    saved = Path(log.paths.root) / "saved-graph"
    here = _graph_dir(log)
    if here.exists():
        shutil.copytree(here, saved)
    try:
        _check(log)
    finally:
        shutil.rmtree(here, ignore_errors=True)
        if saved.exists():
            shutil.move(saved, here)


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    memgraph_histories(max_batches=8, max_batch=4, mixes=TRY_MIXES, trace_ids=TRY_TRACES),
    st.sampled_from([0, 150, 400, 1 << 20]),
)
def test_journaled_refreshes_equal_a_rebuild_at_every_position(
    history: list[tuple[list[Event], str]], bound: int
) -> None:
    # A small bound folds the journal into the state every few entries; 0 never journals.
    with fresh_store() as log, mock.patch.object(_cache, "JOURNAL_BOUND", bound):
        play(log, history, after=_check_in_place)
        _check(log)


def _files(log: EventLog) -> dict[str, tuple[int, int, int]]:
    """Every checkpoint file but the journal and the lock: (inode, mtime, size)."""
    out = {}
    for path in _graph_dir(log).iterdir():
        if not path.name.startswith(("journal-", "write.lock")):
            st_ = path.stat()
            out[path.name] = (st_.st_ino, st_.st_mtime_ns, st_.st_size)
    return out


def test_an_attempt_or_its_outcome_rewrites_no_file_but_the_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[str] = []
    real = _cache.read_state
    monkeypatch.setattr(_cache, "read_state", lambda d, h: reads.append(d) or real(d, h))
    with _small_store(tmp_path / "s") as log:
        first = graph_views(log)
        before = _files(log)
        log.append(Attempt(id="t7", action_id="a7", task="x"))
        assert graph_views(log).head.applied == first.head.applied + 1
        # No new state (nor head, views, index): the attempt went to the journal.
        assert _files(log) == before
        log.append(Outcome(action_id="a7", status="failed"))
        assert graph_views(log).head.applied == first.head.applied + 2
        assert _files(log) == before
        # An outcome that names nothing and ends no attempt moves the journal's position.
        log.append(Outcome(action_id="nobody", status="failed"))
        assert graph_views(log).head.applied == first.head.applied + 3
        assert _files(log) == before
        # The outcome's attempt was found in the journal, and whether a node counts it in
        # the counted file: the state was not even read.
        assert reads == []
        assert cached_memgraph(log)._settled["t7"] == 0
        _check(log)
        # The trace, dreamed from, now counts for its node: the views are written again.
        log.append(Node(cycle="c2", node="c", goal="new", traces=["t7"]))
        assert graph_views(log).outcomes("c") == (0, 1)
        assert _files(log) != before
        _check(log)


def test_an_outcome_of_an_attempt_a_node_counts_is_folded(tmp_path: Path) -> None:
    with _small_store(tmp_path / "s") as log:
        # t1 is a trace of node a before it is attempted; its outcome changes a's view.
        log.append(Attempt(id="t1", action_id="a1", task="x"))
        first = graph_views(log)
        log.append(Outcome(action_id="a1", status="success"))
        assert graph_views(log).generation != first.generation
        assert graph_views(log).outcomes("a") == (2, 0)
        _check(log)


def test_a_dream_naming_an_attempt_already_folded_makes_its_outcomes_count(
    tmp_path: Path,
) -> None:
    with _small_store(tmp_path / "s") as log:
        log.append(Attempt(id="t5", action_id="a5", task="x"))
        graph_views(log)  # journaled
        log.append(Constraint(cycle="c1", node="a", trace="t9", description="avoid q"))
        graph_views(log)  # the attempt is folded into a new state with the constraint
        log.append(Node(cycle="c2", node="c", goal="new", traces=["t5"]))
        graph_views(log)
        _check_counted(log)
        # The outcome's attempt is in the state, not the journal: the counted file says
        # (by its action id) that node c counts it.
        log.append(Outcome(action_id="a5", status="success"))
        assert graph_views(log).outcomes("c") == (1, 0)
        _check(log)


def _journaled(log: EventLog, count: int) -> Path:
    """Append ``count`` attempts, each with a refresh: as many journal entries."""
    graph_views(log)
    for i in range(count):
        log.append(Attempt(id=f"j{i}", action_id=f"ja{i}", task="x"))
        if i % 2:
            log.append(Outcome(action_id=f"ja{i - 1}", status="success"))
        head = graph_views(log).head
    return _graph_dir(log) / f"journal-{head.state_generation}.bin"


@pytest.mark.parametrize(
    "how", ["cut-header", "cut-payload", "cut-first", "flip-last", "flip-first", "garbage", "zeros"]
)
def test_a_torn_or_corrupt_journal_is_read_up_to_its_damage(tmp_path: Path, how: str) -> None:
    with _small_store(tmp_path / "s") as log:
        journal = _journaled(log, 6)
        data = bytearray(journal.read_bytes())
        starts = [0]  # where each frame starts (length, CRC-32, payload)
        while starts[-1] < len(data):
            starts.append(
                starts[-1] + 8 + int.from_bytes(data[starts[-1] : starts[-1] + 4], "little")
            )
        assert starts[-1] == len(data) and len(starts) == 7
        size = starts[1]
        if how == "cut-header":
            data = data[: starts[-2] + 5]
        elif how == "cut-payload":
            data = data[:-7]
        elif how == "cut-first":
            data = data[: size - 1]
        elif how == "flip-last":
            data[-2] ^= 0x10
        elif how == "flip-first":
            data[size // 2] ^= 0x10
        elif how == "garbage":
            data += b"\x07\x00\x00\x00garbage and more"
        else:
            data += bytes(64)
        journal.write_bytes(bytes(data))
        # What is left of the journal is a checkpoint at an earlier seq; the rest is read
        # again from the log.
        assert _state(cached_memgraph(log)) == _state(load_memgraph(log))
        _check(log)
        # The next append overwrites the damage and is read back.
        log.append(Attempt(id="later", action_id="la", task="x"))
        graph_views(log)
        log.append(Outcome(action_id="la", status="success"))
        graph_views(log)
        _check(log)
        assert cached_memgraph(log)._settled["later"] == 1


def test_a_journal_past_the_snapshot_is_read_up_to_it(tmp_path: Path) -> None:
    with _small_store(tmp_path / "s") as log:
        graph_views(log)
        log.append(Attempt(id="t5", action_id="a5", task="x"))
        with log.snapshot() as snap:
            log.append(Outcome(action_id="a5", status="success"))
            graph_views(log)  # the journal now goes past the snapshot
            graph = GraphCache(log)._advance(snap, want_state=True)[1]
            assert graph is not None
            assert _state(graph) == _state(load_memgraph(log, as_of=snap.head_seq))
        _check(log)


def test_the_journal_is_folded_into_the_state_past_its_bound(tmp_path: Path) -> None:
    with _small_store(tmp_path / "s") as log, mock.patch.object(_cache, "JOURNAL_BOUND", 600):
        first = graph_views(log)
        _journaled(log, 12)
        now = graph_views(log)
        assert now.head.state_generation != first.head.state_generation
        assert now.generation == first.generation  # no view changed
        assert sum(1 for _ in _graph_dir(log).glob("journal-*")) <= 2
        _check(log)


_ATTEMPTER = """
import sys
from evolog.eventlog import Attempt, EventLog, Outcome
from evolog.projections.graph import _cache
from evolog.projections.graph._cache import GraphCache
_cache.JOURNAL_BOUND = 2000
log = EventLog(sys.argv[1], durability="none", auto_seal="off")
print("ready", flush=True)
i = 0
while True:
    log.append(Attempt(action_id=f"k{i}", task="x"))
    GraphCache(log).views()
    log.append(Outcome(action_id=f"k{i}", status="success" if i % 3 else "failed"))
    GraphCache(log).memgraph() if i % 5 == 0 else GraphCache(log).views()
    i += 1
"""


def test_kill_9_while_journaling_leaves_a_usable_checkpoint(tmp_path: Path) -> None:
    store = tmp_path / "s"
    _small_store(store).close()
    for _ in killed_runs(store, _ATTEMPTER, (0.05, 0.2, 0.35, 0.5, 0.7)):
        with EventLog(store, durability="none", auto_seal="off") as log:
            _check_in_place(log)
            _check(log)
