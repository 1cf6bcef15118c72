"""The node vector index builds its usearch (HNSW) index only when an operation needs it.

A first sync and save writes the rows and the key map a cold route searches, and no usearch
index; its answers are those of an index whose usearch index was built at once (as every
index was before), and everything that needs usearch still works after a lazy open.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest
from evolog.advice.routing._router import Router
from evolog.dream._cycle import dream
from evolog.eventlog import Attempt, DreamBegin, DreamEnd, EventLog, Node, Outcome, Step
from evolog.eventlog._checked import HEADER_SIZE, body_of
from evolog.projections import _usearch
from evolog.projections.graph import _lean, _vecfiles, _vectors
from evolog.projections.graph._embed import HashingEmbedder
from evolog.projections.graph._lean import embed_rows
from evolog.projections.graph._vectors import VectorIndex
from hypothesis import HealthCheck, given, settings
from strategies import MEMORY_WORDS, vector_syncs

QUERIES = ("deploy the service", "flaky test retry fixture", "postgres migration lock timeout",
           "docker image build cache", "restart nginx config")  # fmt: skip


@pytest.fixture
def usearch_calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many usearch indexes are created and how often vectors are added to one: every
    usearch index is made through ``usearch_index_class``, here a counting subclass."""
    counts = {"indexes": 0, "adds": 0}
    real = _usearch.usearch_index_class

    def counting() -> Any:
        class Counting(real()):  # type: ignore[misc]
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                counts["indexes"] += 1
                super().__init__(*args, **kwargs)

            def add(self, *args: Any, **kwargs: Any) -> Any:
                counts["adds"] += 1
                return super().add(*args, **kwargs)

        return Counting

    monkeypatch.setattr(_usearch, "usearch_index_class", counting)
    return counts


def _wanted(n: int, seed: int = 5) -> dict[str, list[str]]:
    rng = random.Random(seed)
    return {
        f"n{i}": [" ".join(rng.sample(MEMORY_WORDS, 4)) + f" {i}", rng.choice(MEMORY_WORDS)]
        for i in range(n)
    }


def _eager(directory: Path) -> VectorIndex:
    index = VectorIndex(HashingEmbedder(64), str(directory))
    _ = index._index  # its usearch index made at once: every vector goes through it
    return index


def _meta(directory: Path) -> _vecfiles.Meta:
    (path,) = directory.glob("vectors-*.meta")
    body = body_of(path.read_bytes())
    assert body is not None
    return msgspec.msgpack.decode(body, type=_vecfiles.Meta)


def _rows(directory: Path) -> bytes:
    (path,) = directory.glob("vectors-*.rows")
    return path.read_bytes()[HEADER_SIZE + 40 :]  # after the headers (its token is random)


def test_a_first_sync_and_save_build_no_usearch_index(
    tmp_path: Path, usearch_calls: dict[str, int]
) -> None:
    index = VectorIndex(HashingEmbedder(64), str(tmp_path))
    wanted = _wanted(300)
    assert index.sync(wanted) == (600, 0)
    index.save()
    assert usearch_calls == {"indexes": 0, "adds": 0}
    assert not list(tmp_path.glob("*.usearch")) and _meta(tmp_path).format == _vecfiles.ROWS_ONLY
    assert index.search_text(wanted["n7"][0], 1)[0][0] == "n7"
    # Opened again, changed a little and saved: still no usearch index.
    reopened = VectorIndex.open(index.embedder, str(tmp_path))
    assert len(reopened) == 600
    wanted["n7"] = ["tune the garbage collector"]
    del wanted["n8"]
    assert reopened.sync_nodes({"n7": wanted["n7"], "n8": []}) == (1, 4)
    reopened.save()
    again = VectorIndex.open(index.embedder, str(tmp_path))
    assert again.search_text("tune the garbage collector", 1)[0][0] == "n7"
    assert "n8" not in {n for n, _ in again.search_text(wanted["n9"][0], 50)}
    assert again.nodes() == frozenset(wanted)
    assert usearch_calls == {"indexes": 0, "adds": 0}


def _store(path: Path, nodes: int) -> None:
    with EventLog(path, create=True, durability="none") as log:
        events: list[Any] = [DreamBegin(cycle="c")]
        for node, texts in _wanted(nodes).items():
            events.append(Node(cycle="c", node=node, goal=texts[0], summary=texts[1]))
        events.append(DreamEnd(cycle="c", consumed=[]))
        log.append_many(events)


def test_the_first_route_of_a_store_builds_no_usearch_index(
    tmp_path: Path, usearch_calls: dict[str, int]
) -> None:
    _store(tmp_path / "s", 200)
    embedder = HashingEmbedder(64)
    with EventLog(tmp_path / "s") as log:
        first = Router.from_log(log, embedder=embedder).route("deploy the service 17")
        assert usearch_calls == {"indexes": 0, "adds": 0}
        cold = Router.from_log(log, embedder=embedder).route("deploy the service 17")
    assert usearch_calls == {"indexes": 0, "adds": 0}
    assert msgspec.to_builtins(cold) == msgspec.to_builtins(first)


def _answers(index: VectorIndex, **how: Any) -> list[list[tuple[str, float]]]:
    return [index.search(embed_rows(index.embedder, [q]).row(0), 6, **how) for q in QUERIES]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rounds=vector_syncs())
def test_a_lazy_index_answers_as_an_eagerly_built_one(
    tmp_path_factory: pytest.TempPathFactory, rounds: list[dict[str, list[str]]]
) -> None:
    eager_dir, lazy_dir = tmp_path_factory.mktemp("eager"), tmp_path_factory.mktemp("lazy")
    eager, lazy = _eager(eager_dir), VectorIndex(HashingEmbedder(64), str(lazy_dir))
    for i, wanted in enumerate(rounds):
        changes = lazy.sync(wanted)
        assert eager.sync(wanted) == changes
        built = i == len(rounds) - 1 and len(lazy) > 0 and changes != (0, 0)
        if built:
            # Changed and unsaved, both are searched through usearch (exhaustively): the lazy
            # one's is built now, from its rows and changes.
            assert _answers(lazy, exact=True) == _answers(eager, exact=True)
        eager.save()
        lazy.save()
        assert _meta(lazy_dir).format == (_vecfiles.FORMAT if built else _vecfiles.ROWS_ONLY)
        # The same float16 rows, so the kernel gives the same nodes and the same scores.
        assert _rows(lazy_dir) == _rows(eager_dir)
        assert _answers(lazy) == _answers(eager)
        eager = VectorIndex.open(eager.embedder, str(eager_dir))
        lazy = VectorIndex.open(lazy.embedder, str(lazy_dir))
        assert _answers(lazy) == _answers(eager)
        assert lazy.nodes() == eager.nodes() and len(lazy) == len(eager)
        assert {n: lazy.texts(n) for n in lazy.nodes()} == {
            n: eager.texts(n) for n in eager.nodes()
        }
    assert _meta(eager_dir).format == _vecfiles.FORMAT


def test_what_needs_usearch_builds_it_from_the_saved_rows(
    tmp_path: Path, usearch_calls: dict[str, int]
) -> None:
    wanted = _wanted(400)
    index = VectorIndex(HashingEmbedder(64), str(tmp_path))
    index.sync(wanted)
    index.save()
    lazy = VectorIndex.open(index.embedder, str(tmp_path))
    query = embed_rows(lazy.embedder, [wanted["n3"][0]]).row(0)
    exact = lazy.search(query, 5)
    assert usearch_calls == {"indexes": 0, "adds": 0}
    # The HNSW graph, asked for: built once from the rows, in one batch.
    approximate = lazy.search(query, 5, exact=False)
    assert usearch_calls == {"indexes": 1, "adds": 1}
    assert approximate[0][0] == exact[0][0] == "n3"
    assert lazy.search(query, 5) == exact  # the rows are unchanged: the kernel again
    assert lazy.search(query, 5, exact=False) == approximate
    assert usearch_calls == {"indexes": 1, "adds": 1}
    # Staged additions (as a dream cycle makes them), removals, then a save with the graph.
    with lazy.staging():
        lazy.add("fresh", ["tune the garbage collector"])
        assert lazy.search_text("tune the garbage collector", 1)[0][0] == "fresh"
    lazy.remove("n3")
    assert "n3" not in {n for n, _ in lazy.search(query, 20)}
    lazy.save()
    assert _meta(tmp_path).format == _vecfiles.FORMAT and list(tmp_path.glob("*.usearch"))
    graph = VectorIndex.open(lazy.embedder, str(tmp_path))
    assert graph.search_text("tune the garbage collector", 1)[0][0] == "fresh"
    assert graph.search(query, 5, exact=False)[0][0] != "n3"
    assert usearch_calls["adds"] == 2  # the saved graph was mapped, not built again
    # The rows saved with the graph: those of an index given the same texts from scratch.
    del wanted["n3"]
    scratch = VectorIndex(HashingEmbedder(64), str(tmp_path / "scratch"))
    scratch.add_many([*wanted.items(), ("fresh", ["tune the garbage collector"])])
    scratch.save()
    assert _rows(tmp_path) == _rows(tmp_path / "scratch")


def test_damaged_rows_of_a_rows_only_cache_are_rebuilt(tmp_path: Path) -> None:
    wanted = _wanted(50)
    graph = _eager(tmp_path)
    graph.sync(wanted)
    graph.save()
    (usearch,) = tmp_path.glob("*.usearch")
    stale = usearch.read_bytes()
    lazy = VectorIndex(HashingEmbedder(64), str(tmp_path))
    lazy.sync(wanted)
    lazy.save()
    assert not usearch.exists()  # the rows-only save removed the graph it replaced
    usearch.write_bytes(stale)  # as if that removal had not happened: the same vector count
    assert len(VectorIndex.open(lazy.embedder, str(tmp_path))) == 100
    (rows,) = tmp_path.glob("*.rows")
    rows.write_bytes(rows.read_bytes()[:-2])
    # The rows were the only copy of the vectors: rebuilt, never the stale graph.
    assert len(VectorIndex.open(lazy.embedder, str(tmp_path))) == 0


def test_without_the_kernels_a_save_writes_the_usearch_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wanted = _wanted(100)
    lazy = VectorIndex(HashingEmbedder(64), str(tmp_path / "rows"))
    lazy.sync(wanted)
    lazy.save()
    expected = _answers(lazy)
    for module in (_lean, _vectors, _vecfiles):
        monkeypatch.setattr(module, "kernels", None)
    # A rows-only cache cannot be searched without them: rebuilt, like any unusable cache.
    assert len(VectorIndex.open(lazy.embedder, str(tmp_path / "rows"))) == 0
    index = VectorIndex(HashingEmbedder(64), str(tmp_path / "graph"))
    index.sync(wanted)
    index.save()
    assert _meta(tmp_path / "graph").format == _vecfiles.FORMAT
    reopened = VectorIndex.open(index.embedder, str(tmp_path / "graph"))
    assert len(reopened) == 200
    got = _answers(reopened, exact=True)
    assert [[n for n, _ in a] for a in got] == [[n for n, _ in a] for a in expected]
    assert all(
        abs(x - y) < 2e-3
        for a, b in zip(got, expected, strict=True)
        for (_, x), (_, y) in zip(a, b, strict=True)
    )


def test_flat_rows_are_the_float16_values_usearch_holds() -> None:
    rng = np.random.default_rng(4)
    vectors = rng.standard_normal((500, 32)).astype(np.float32) * rng.choice([1e-6, 1.0, 300.0])
    keys = np.arange(1, 501, dtype=np.uint64)
    index = _vecfiles.usearch_index(32)
    index.add(keys, vectors)
    from evolog.projections.graph._staged import Flat

    flat = Flat(32)
    flat.add(keys[:200], vectors[:200])
    flat.add(keys[200:], vectors[200:])
    flat.remove([7, 300])
    held, rows = flat.arrays()
    kept = np.isin(keys, [7, 300], invert=True)
    assert np.array_equal(held, keys[kept])
    assert rows.tobytes() == _vecfiles.f16_rows(index, keys[kept]).tobytes()


def _traces(prefix: str, n: int, seed: int) -> list[Any]:
    rng = random.Random(seed)
    events: list[Any] = []
    for i in range(n):
        tid = f"{prefix}{i}"
        task = " ".join(rng.sample(MEMORY_WORDS[:8], 3))  # few words: similar tasks merge
        events.append(Attempt(id=tid, action_id=tid, task=task, agent="a"))
        for k, action in enumerate(rng.sample(["restart", "retry", "rebuild", "pin"], 2)):
            events.append(Step(action_id=tid, index=k, action=action, result="done", ok=True))
        events.append(Outcome(action_id=tid, status="success"))
    return events


def test_a_dream_after_a_route_built_the_cache_lazily_dreams_as_after_an_eager_one(
    tmp_path: Path,
) -> None:
    embedder = HashingEmbedder(64)
    results = []
    for name in ("rows-only", "with-graph"):
        with EventLog(tmp_path / name, create=True, durability="none") as log:
            log.append_many(_traces("a", 40, 1))
            dream(log, embedder=embedder)  # its merge searches built the usearch index
            if name == "rows-only":
                for path in (tmp_path / name / "cache").glob("vectors-*"):
                    path.unlink()
                Router.from_log(log, embedder=embedder)  # the index rebuilt, as rows only
            assert _meta(tmp_path / name / "cache").format == (
                _vecfiles.ROWS_ONLY if name == "rows-only" else _vecfiles.FORMAT
            )
            log.append_many(_traces("b", 40, 2))
            report = dream(log, embedder=embedder)
            router = Router.from_log(log, embedder=embedder)
            routes = [msgspec.to_builtins(router.route(q)) for q in QUERIES]
            results.append((msgspec.to_builtins(report), routes))
    assert results[0] == results[1]
    assert results[0][0]["cycles"][0]["nodes_merged"] > 0
