"""The memory-graph checkpoint: incremental refreshes equal a rebuild, deleting it changes no
answer, and a damaged or half-written checkpoint is rebuilt, never trusted."""

from __future__ import annotations

import io
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import msgspec
import pytest
from _eventlog_util import fresh_store
from conftest import examples
from evolog.eventlog import (
    Attempt,
    ChildStep,
    Constraint,
    DreamBegin,
    DreamEnd,
    Event,
    EventLog,
    Merge,
    Node,
    Outcome,
    Prune,
)
from evolog.projections.graph._cache import GraphCache, cached_memgraph, graph_views
from evolog.projections.graph._embed import HashingEmbedder
from evolog.projections.graph._memgraph import MemGraph, load_memgraph
from evolog.projections.graph._vectors import VectorIndex, sync_to_views, wanted_texts
from evolog.projections.graph._views import GraphViews, graph_document, render_view
from hypothesis import HealthCheck, given, settings
from strategies import memgraph_histories

REPO = Path(__file__).resolve().parents[3]


def _state(graph: MemGraph) -> bytes:
    # Encoded, so the order of every map counts (nodes() and cycles() follow it).
    extra = [graph.last_seq, sorted(graph.retracted_cycles), sorted(graph.retracted_ids)]
    return msgspec.json.encode([graph.state(), extra])


def _document(views: GraphViews, *, all_nodes: bool = True) -> bytes:
    chunks = graph_document(views.views(live_only=not all_nodes), views.live_count,
                            views.cycle_count)  # fmt: skip
    return b"".join(bytes(c) for c in chunks)


def _expected_document(graph: MemGraph) -> bytes:
    """What ``evolog graph --all`` printed before the checkpoint: one format of everything."""
    from evolog.projections.graph._views import node_view

    doc = {
        "nodes": [node_view(graph, n.id) for n in graph.nodes(live_only=False)],
        "live": sum(1 for _ in graph.nodes()),
        "cycles": len(graph.cycles()),
    }
    return msgspec.json.format(msgspec.json.encode(doc), indent=2) + b"\n"


def _check(log: EventLog) -> None:
    """The checkpoint's answers, as they are now, equal a fold of the whole log."""
    full = load_memgraph(log)
    views = graph_views(log)
    assert _document(views) == _expected_document(full)
    assert _document(views, all_nodes=False) == b"".join(
        bytes(c)
        for c in graph_document(
            [render_view(full, n.id) for n in full.nodes()],
            sum(1 for _ in full.nodes()),
            len(full.cycles()),
        )
    )
    assert _state(cached_memgraph(log)) == _state(full)
    for node in full.nodes(live_only=False):
        assert views.node(node.id) == node
        assert views.resolve(node.id) == full.resolve(node.id)
        assert views.steps(node.id) == full.steps(node.id)
        assert views.constraints(node.id) == full.constraints(node.id)
        assert views.outcomes(node.id) == full.outcomes(node.id)
        assert views.edges(node.id) == full.edges(node.id)


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
def play(
    log: EventLog,
    history: list[tuple[list[Event], str]],
    after: Callable[[EventLog], object] = lambda log: None,
) -> None:
    """Append each batch of a :func:`memgraph_histories` history and do what it says next
    (refresh the views or the graph, seal, or nothing); ``after`` runs after each batch."""
    for batch, action in history:
        log.append_many(batch)
        if action == "views":
            graph_views(log)
        elif action == "memgraph":
            cached_memgraph(log)
        elif action == "seal":
            log.seal()
        after(log)


@given(memgraph_histories())
def test_incremental_refreshes_equal_a_rebuild(history: list[tuple[list[Event], str]]) -> None:
    with fresh_store() as log:
        play(log, history)
        # Every refresh above started from the one before: check where they led.
        _check(log)
        # Deleting the cache changes no answer.
        before = _document(graph_views(log))
        shutil.rmtree(os.path.join(log.paths.cache, "graph"))
        assert _document(graph_views(log)) == before
        _check(log)


@settings(max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(memgraph_histories(max_batches=4))
def test_vectors_synced_step_by_step_equal_a_full_sync(
    history: list[tuple[list[Event], str]],
) -> None:
    embedder = HashingEmbedder(64)
    with fresh_store() as log:
        index = VectorIndex(embedder)
        for batch, _ in history:
            log.append_many(batch)
            sync_to_views(index, graph_views(log))
        fresh = VectorIndex(embedder)
        fresh.sync(wanted_texts(load_memgraph(log)))
        assert index.nodes() == fresh.nodes()
        assert {n: set(index.texts(n)) for n in index.nodes()} == {
            n: set(fresh.texts(n)) for n in fresh.nodes()
        }


def _small_store(path: Path) -> EventLog:
    log = EventLog(path, create=True, durability="none", auto_seal="off")
    log.append_many(
        [
            DreamBegin(cycle="c1"),
            Node(cycle="c1", node="a", goal="fix the import", traces=["t1"]),
            ChildStep(cycle="c1", node="a", index=0, action="pin it"),
            Node(cycle="c1", node="b", goal="a flaky test", traces=["t2"]),
            DreamEnd(cycle="c1", consumed=["t1", "t2"]),
            Outcome(action_id="x", status="success", decided_by=["a"]),
        ]
    )
    return log


def test_nothing_new_decodes_nothing_and_a_foreign_outcome_only_moves_the_head(
    tmp_path: Path,
) -> None:
    with _small_store(tmp_path / "s") as log:
        first = graph_views(log)
        assert graph_views(log).generation == first.generation
        log.append(Outcome(action_id="y", status="failed", decided_by=["gene_x"]))
        moved = graph_views(log)
        assert moved.generation == first.generation
        assert moved.head.applied == first.head.applied + 1
        log.append(Outcome(action_id="z", status="failed", decided_by=["a"]))
        changed = graph_views(log)
        assert changed.generation != first.generation
        assert changed.head.previous == first.generation
        assert changed.head.changed == ["a"]
        assert changed.outcomes("a") == (1, 1)
        _check(log)


def test_an_attempt_and_its_outcome_are_folded_without_writing_the_views_again(
    tmp_path: Path,
) -> None:
    with _small_store(tmp_path / "s") as log:
        first = graph_views(log)
        log.append_many([Attempt(id="t7", action_id="a7", task="x"),
                         Outcome(action_id="a7", status="success")])  # fmt: skip
        kept = graph_views(log)
        # The views (and a vector index synced to them) stay, and so does the state file:
        # the two events are in its journal.
        assert kept.generation == first.generation and kept.head.applied == first.head.applied + 2
        assert kept.head.state_generation == first.head.state_generation
        _check(log)
        log.append(Node(cycle="c2", node="c", goal="new", traces=["t7"]))
        assert graph_views(log).outcomes("c") == (1, 0)
        _check(log)


@pytest.mark.parametrize("counted", [False, True])
def test_an_outcome_of_a_known_attempt_reads_the_state_file_at_most_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counted: bool
) -> None:
    """An outcome of an attempt no node counts is journaled without reading the state file
    (it holds every attempt: tens of milliseconds at 1e5 of them); one of an attempt a node
    counts changes its view, and deciding so and folding it share one read."""
    from evolog.projections.graph import _cache

    with _small_store(tmp_path / "s") as log:
        log.append(Attempt(id="t1" if counted else "t8", action_id="a8", task="x"))
        graph_views(log)
        log.append(Outcome(action_id="a8", status="failed"))
        reads: list[str] = []
        real = _cache.read_state
        monkeypatch.setattr(_cache, "read_state", lambda d, h: reads.append(d) or real(d, h))
        views = graph_views(log)
        with log.snapshot() as snap:
            assert len(reads) == counted and views.head.applied == snap.head_seq
        _check(log)


@pytest.mark.parametrize(
    "later",
    [
        Outcome(action_id="y", status="failed", decided_by=["b"]),
        Constraint(cycle="c2", node="b", trace="t9", description="avoid z"),
        Node(cycle="c2", node="b", goal="a flaky test", traces=["t3"]),
    ],
)
def test_a_change_to_a_merged_node_changes_the_view_of_its_survivor(
    tmp_path: Path, later: Event
) -> None:
    with _small_store(tmp_path / "s") as log:
        log.append_many([
            Constraint(cycle="c1", trace="t3", description="avoid w"),
            Merge(cycle="c1", node="a", merged="b"),
        ])  # fmt: skip
        graph_views(log)
        log.append(later)
        _check(log)


def test_a_constraint_by_trace_changes_the_view_of_every_node_of_that_trace(
    tmp_path: Path,
) -> None:
    with _small_store(tmp_path / "s") as log:
        graph_views(log)
        log.append(Constraint(cycle="c1", trace="t2", description="avoid q"))
        assert graph_views(log).constraints("b")[0].description == "avoid q"
        _check(log)


def _damage(path: Path, how: str) -> None:
    data = bytearray(path.read_bytes())
    if how == "flip":
        data[len(data) // 2] ^= 0x55
        path.write_bytes(bytes(data))
    elif how == "truncate":
        path.write_bytes(bytes(data[: len(data) // 2]))
    elif how == "garbage":
        path.write_bytes(b"\xc1not msgpack at all")
    else:
        path.unlink()


@pytest.mark.parametrize("how", ["flip", "truncate", "garbage", "delete"])
@pytest.mark.parametrize("which", ["head", "state", "views", "index"])
def test_a_damaged_checkpoint_is_rebuilt_not_trusted(tmp_path: Path, which: str, how: str) -> None:
    with _small_store(tmp_path / "s") as log:
        expected = _expected_document(load_memgraph(log))
        first = graph_views(log)
        directory = Path(log.paths.cache) / "graph"
        name = "head.msgpack" if which == "head" else f"{which}-{first.generation}."
        target = next(p for p in directory.iterdir() if p.name.startswith(name))
        _damage(target, how)
        # The state is read only when new events must be folded in: add one.
        log.append(Outcome(action_id="x2", status="failed", decided_by=["b"]))
        expected = _expected_document(load_memgraph(log))
        assert _document(graph_views(log)) == expected
        _check(log)


def test_a_view_damaged_after_opening_is_repaired(tmp_path: Path) -> None:
    with _small_store(tmp_path / "s") as log:
        views = graph_views(log)
        path = Path(log.paths.cache) / "graph" / f"views-{views.generation}.bin"
        data = bytearray(path.read_bytes())
        data[5] ^= 0x01
        views._data = memoryview(bytes(data))  # as if the file changed under the mapping
        assert _document(views) == _expected_document(load_memgraph(log))


def test_an_unwritable_cache_still_answers(tmp_path: Path) -> None:
    with _small_store(tmp_path / "s") as log:
        os.makedirs(log.paths.cache, exist_ok=True)
        Path(log.paths.cache, "graph").write_text("a file where the directory should be")
        assert _document(graph_views(log)) == _expected_document(load_memgraph(log))
        assert _state(cached_memgraph(log)) == _state(load_memgraph(log))


def test_another_log_at_the_same_path_is_not_trusted(tmp_path: Path) -> None:
    with _small_store(tmp_path / "s") as log:
        graph_views(log)
        saved = Path(tmp_path / "saved")
        shutil.copytree(Path(log.paths.cache) / "graph", saved)
    shutil.rmtree(tmp_path / "s")
    with EventLog(tmp_path / "s", create=True, durability="none", auto_seal="off") as log:
        log.append_many([Node(cycle="c9", node="z", goal="other") for _ in range(8)])
        shutil.copytree(saved, Path(log.paths.cache) / "graph")
        assert _document(graph_views(log)) == _expected_document(load_memgraph(log))


_WRITER = """
import sys
from evolog.eventlog import EventLog, Node, Outcome
from evolog.projections.graph._cache import GraphCache
log = EventLog(sys.argv[1], durability="none", auto_seal="off")
print("ready", flush=True)
i = 0
while True:
    log.append_many([Node(cycle="c", node=f"k{i}", goal=f"goal {i}" * 20),
                     Outcome(action_id="x", status="success", decided_by=["a", f"k{i}"])])
    GraphCache(log).rebuild() if i % 3 == 0 else GraphCache(log).views()
    i += 1
"""


def killed_runs(store: Path, script: str, delays: tuple[float, ...]) -> Iterator[float]:
    """Run ``script`` on ``store`` once per delay and kill -9 it that long after it is ready;
    yields after each kill, so the caller checks the store as the crash left it."""
    for delay in delays:
        proc = subprocess.Popen(
            [sys.executable, "-c", script, str(store)], cwd=REPO, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        yield delay


def test_kill_9_while_writing_leaves_a_usable_checkpoint(tmp_path: Path) -> None:
    store = tmp_path / "s"
    _small_store(store).close()
    for _ in killed_runs(store, _WRITER, (0.05, 0.15, 0.3, 0.45, 0.6)):
        with EventLog(store, durability="none", auto_seal="off") as log:
            _check(log)
            assert GraphCache(log).views().generation  # a readable head afterwards
    with EventLog(store, durability="none", auto_seal="off") as log:
        log.append(Node(cycle="c", node="last", goal="one more"))
        graph_views(log)
    # The last write swept what the killed writers left: one generation (and the one
    # before it: views, index, state, counted file, journal) besides the head and the lock.
    left = sorted(p.name.split("-")[0] for p in (store / "cache" / "graph").iterdir())
    assert not any(name.startswith(".tmp") for name in left)
    assert len(left) <= 12, left


def test_a_cold_route_on_an_up_to_date_checkpoint_imports_only_what_it_needs(
    tmp_path: Path,
) -> None:
    _small_store(tmp_path / "s").close()
    route = [sys.executable, "-m", "evolog", "--store", str(tmp_path / "s"), "route", "fix it"]
    subprocess.run(route, check=True, capture_output=True)  # writes the checkpoint
    code = (
        "import sys, runpy; sys.argv = ['evolog', *sys.argv[1:]]\n"
        "try: runpy.run_module('evolog', run_name='__main__')\n"
        "except SystemExit: pass\n"
        "heavy = {'pyarrow', 'duckdb', 'wordllama', 'pydantic', 'requests'}\n"
        "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}), file=sys.stderr)\n"
    )
    out = subprocess.run([sys.executable, "-c", code, *route[3:]], capture_output=True, text=True)
    assert out.stderr.strip().splitlines()[-1] == "[]"


def _written(views: GraphViews, path: Path, *, live_only: bool = True) -> bytes:
    with open(path, "wb") as out:
        assert views.write_document(out, live_only=live_only)
    return path.read_bytes()


def test_the_document_written_from_the_mapping_is_the_printed_one(tmp_path: Path) -> None:
    with _small_store(tmp_path / "s") as log:
        log.append(Prune(cycle="c1", node="b", reason="stale"))
        views = graph_views(log)
        assert _written(views, tmp_path / "live") == _document(views, all_nodes=False)
        assert _written(views, tmp_path / "all", live_only=False) == _document(views)
        assert _written(views, tmp_path / "all", live_only=False) == _expected_document(
            load_memgraph(log)
        )
        # A view damaged under the mapping is repaired before anything is written.
        path = Path(log.paths.cache) / "graph" / f"views-{views.generation}.bin"
        data = bytearray(path.read_bytes())
        data[5] ^= 0x01
        views._data = memoryview(bytes(data))
        repaired = _written(views, tmp_path / "repaired", live_only=False)
        assert repaired == _expected_document(load_memgraph(log))
    with EventLog(tmp_path / "empty", create=True) as log:
        empty = graph_views(log)
        assert _written(empty, tmp_path / "empty.json") == b"".join(graph_document([], 0, 0))
    # Without a file descriptor nothing is written: the caller prints the views itself.
    assert not views.write_document(io.BytesIO())
