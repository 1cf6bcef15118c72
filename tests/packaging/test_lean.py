"""The numpy-free vector path of a cold route gives the answers of the numpy/usearch path."""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from evolog.advice.routing import _router as router_module
from evolog.advice.routing._router import Router
from evolog.eventlog import DreamBegin, DreamEnd, EventLog, Node, Outcome
from evolog.projections.graph import _lean, _vecfiles, _vectors
from evolog.projections.graph._bpe import Bpe
from evolog.projections.graph._embed import HashingEmbedder, WordLlamaEmbedder
from evolog.projections.graph._lean import Rows, embed_rows
from evolog.projections.graph._vectors import VectorIndex
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import texts


def test_the_kernels_are_built() -> None:
    # The install builds them (pyproject's ext-modules), so a missing extension is a broken
    # build, not a platform to skip on: every test below needs them.
    assert _lean.kernels is not None, "evolog.projections.graph._kernels did not build"


_VERBS = ["fix", "speed up", "test", "document", "refactor", "deploy", "debug", "profile"]
_THINGS = ["import error", "flaky test", "slow query", "memory leak", "race condition",
           "timeout", "cache miss", "login form", "payment webhook", "csv export"]  # fmt: skip
_WHERE = ["in the api", "after an upgrade", "on ci", "in production", "under load", ""]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("lean-cache"))


@settings(max_examples=60, deadline=None)
@given(batch=st.lists(texts(), min_size=1, max_size=6))
def test_lean_embeddings_are_the_numpy_ones_bit_for_bit(cache: str, batch: list[str]) -> None:
    emb = WordLlamaEmbedder()
    emb.cache_in(cache)
    lean = emb.embed_lean(batch)
    if lean is None:  # a text the Python tokenizer leaves to the library
        return
    assert np.frombuffer(lean, np.float32).reshape(len(batch), emb.dim).tobytes() == (
        emb.embed(batch).tobytes()
    )


@settings(max_examples=60, deadline=None)
@given(text=texts())
def test_the_cached_tokenizer_gives_the_json_ones_ids(cache: str, text: str) -> None:
    from evolog.projections.graph._wordllama import _files

    tokenizer, _ = _files(256)
    loaded, cached = Bpe.load(tokenizer), Bpe.cached(tokenizer, cache)
    assert loaded is not None and cached is not None
    assert cached.encode(text) == loaded.encode(text)
    assert Bpe.cached(tokenizer, cache).encode(text) == loaded.encode(text)  # type: ignore[union-attr]


def test_a_damaged_tokenizer_cache_is_written_again(tmp_path: Path) -> None:
    from evolog.projections.graph._wordllama import _files

    tokenizer, _ = _files(256)
    first = Bpe.cached(tokenizer, str(tmp_path))
    (cached,) = tmp_path.glob("bpe-*.bin")
    data = bytearray(cached.read_bytes())
    data[len(data) // 2] ^= 0xFF
    cached.write_bytes(bytes(data))
    again = Bpe.cached(tokenizer, str(tmp_path))
    assert again is not None and first is not None
    assert isinstance(again.vocab, dict)  # rebuilt from the JSON, not read from the damage
    text = "the test suite fails with an import error"
    assert again.encode(text) == first.encode(text)


def _index(tmp_path: Path, n: int, *, graph: bool = False) -> VectorIndex:
    """An index of ``n`` nodes saved and opened again; saved with its usearch file if
    ``graph`` (a search before saving builds it), else as rows only."""
    rng = random.Random(3)
    index = VectorIndex(HashingEmbedder(256), str(tmp_path))
    items = []
    for i in range(n):
        goal = f"{rng.choice(_VERBS)} the {rng.choice(_THINGS)} {rng.choice(_WHERE)} {i % 97}"
        items.append((f"n{i}", [goal, f"{goal}. {rng.choice(_THINGS)}"]))
    index.add_many(items)
    if graph:
        index.search_text("build the graph", 1)
    index.save()
    return VectorIndex.open(index.embedder, str(tmp_path))


def test_the_kernel_search_is_the_exhaustive_usearch_search(tmp_path: Path) -> None:
    index = _index(tmp_path, 2500)  # 5000 vectors: above usearch's exact-search size
    assert index._rows is not None and len(index) == 5000
    rows = np.frombuffer(index._rows.data, "<f2").astype(np.float32).reshape(5000, 256)
    for query in ["fix the flaky test on ci", "profile the slow query 12", "deploy csv"]:
        vector = embed_rows(index.embedder, [query]).row(0)
        lean = index.search(vector, 10)
        # The same rows, scored by numpy: the same nodes, the same scores to float32 precision.
        scores = rows @ np.frombuffer(vector, np.float32)
        best: dict[str, float] = {}
        for row in np.argsort(-scores, kind="stable")[:40].tolist():
            node = index._rows.nodes[index._rows.node_of[row]]
            best.setdefault(node, float(scores[row]))
        expected = sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
        assert [n for n, _ in lean] == [n for n, _ in expected]
        assert max(abs(a - b) for (_, a), (_, b) in zip(lean, expected, strict=True)) < 1e-5
        # usearch (cosine over its float16 copy, exhaustive) ranks them the same way.
        reference = index.search(np.frombuffer(vector, np.float32).copy(), 10, exact=True)
        index._rows, saved = None, index._rows
        try:
            reference = index.search(np.frombuffer(vector, np.float32).copy(), 10, exact=True)
        finally:
            index._rows = saved
        # Nodes that score alike (equal vectors, or within float16's rounding) come from
        # usearch in no set order, and the kernel orders them by name: so each of the
        # kernel's first five must be among usearch's answers with the same score.
        found = dict(reference)
        for node, score in lean[:5]:
            assert node in found and abs(found[node] - score) < 2e-3, (node, reference)
        assert max(abs(a - b) for (_, a), (_, b) in zip(lean, reference, strict=True)) < 2e-3


def test_a_stale_or_missing_rows_file_falls_back_to_usearch(tmp_path: Path) -> None:
    index = _index(tmp_path, 50, graph=True)
    expected = index.search_text("fix the flaky test", 5)
    (rows,) = tmp_path.glob("vectors-*.rows")
    rows.write_bytes(rows.read_bytes()[:-2])
    reopened = VectorIndex.open(index.embedder, str(tmp_path))
    assert reopened._rows is None and reopened.wants_rows()
    assert [n for n, _ in reopened.search_text("fix the flaky test", 5)] == [n for n, _ in expected]
    rows.unlink()
    assert VectorIndex.open(index.embedder, str(tmp_path))._rows is None


def test_rows_beside_a_usearch_file_of_another_save_are_not_used(tmp_path: Path) -> None:
    index = _index(tmp_path, 50, graph=True)
    (usearch,) = tmp_path.glob("vectors-*.usearch")
    older = usearch.read_bytes()
    index.add("fresh", ["tune the garbage collector"])
    index.save()
    usearch.write_bytes(older)  # as if a crash left the usearch file of the save before
    reopened = VectorIndex.open(index.embedder, str(tmp_path))
    assert reopened._rows is None and len(reopened) == 0  # rebuilt, as it always was


def test_a_changed_index_is_searched_through_usearch_until_saved(tmp_path: Path) -> None:
    index = _index(tmp_path, 50)
    index.add("fresh", ["tune the garbage collector"])
    assert index._rows is None
    assert index.search_text("tune the garbage collector", 1)[0][0] == "fresh"
    index.save()
    assert index._rows is not None
    assert index.search_text("tune the garbage collector", 1)[0][0] == "fresh"


def test_rows_dots_match_numpy() -> None:
    rng = np.random.default_rng(1)
    matrix = rng.standard_normal((37, 19)).astype(np.float32)
    query = rng.standard_normal(19).astype(np.float32)
    got = Rows(matrix, 19).dots(query)
    assert np.allclose(got, matrix @ query, rtol=1e-5, atol=1e-5)
    assert Rows(b"", 19).dots(query) == []


def _routing_store(path: Path, nodes: int) -> None:
    rng = random.Random(11)
    with EventLog(path, create=True, durability="none", auto_seal="off") as log:
        events: list = [DreamBegin(cycle="c")]  # type: ignore[type-arg]
        for i in range(nodes):
            # Distinct goals: tied scores would rank in either order on the two paths.
            goal = f"{rng.choice(_VERBS)} the {rng.choice(_THINGS)} {rng.choice(_WHERE)} {i}"
            events.append(
                Node(cycle="c", node=f"n{i}", goal=goal, summary=rng.choice(_THINGS),
                     confidence=round(rng.uniform(0.3, 0.9), 2), traces=[f"t{i}"])
            )  # fmt: skip
        events.append(DreamEnd(cycle="c", consumed=[f"t{i}" for i in range(nodes)]))
        events.append(Outcome(action_id="x", status="success", decided_by=["n3"]))
        log.append_many(events)


_TASKS = ["fix the flaky test on ci", "the payment webhook times out in production",
          "write a haiku about autumn", "profile the memory leak after an upgrade"]  # fmt: skip


def _routes(store: Path) -> list[dict[str, object]]:
    import msgspec

    with EventLog(store) as log:
        router = Router.from_log(log)
    out = []
    for task in _TASKS:
        decision = router.route(task)
        drift = router.route(task, current="n5")
        out.append({"route": msgspec.to_builtins(decision), "drift": msgspec.to_builtins(drift)})
    return out


def _close(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) < 5e-4  # usearch scores its float16 copy of the query
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a if k != "reasoning")
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(map(_close, a, b))
    return a == b


def test_routes_without_numpy_are_the_numpy_and_usearch_routes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "s"
    _routing_store(store, 3000)  # 6000 vectors
    lean = _routes(store)
    again = _routes(store)  # a second process would read what the first one saved
    assert again == lean
    shutil.rmtree(store / "cache")  # deleting the cache changes no answer
    assert _routes(store) == lean
    # The numpy/usearch path: no kernels, usearch searched exhaustively.
    monkeypatch.setattr(_lean, "kernels", None)
    monkeypatch.setattr(_vectors, "kernels", None)
    monkeypatch.setattr(_vecfiles, "kernels", None)
    monkeypatch.setattr(_vectors, "EXACT_BELOW", 10**9)
    monkeypatch.setattr(router_module, "embed_rows", _lean.embed_rows)
    heavy = _routes(store)
    assert [r["route"]["path"] for r in heavy] == [r["route"]["path"] for r in lean]  # type: ignore[index]
    for h, w in zip(heavy, lean, strict=True):
        assert _close(h, w), (h, w)


def test_a_cold_route_and_graph_import_neither_numpy_nor_usearch_nor_the_tokenizer_library(
    tmp_path: Path,
) -> None:
    _routing_store(tmp_path / "s", 40)
    base = [sys.executable, "-m", "evolog", "--store", str(tmp_path / "s")]
    first = subprocess.run([*base, "route", "fix the flaky test"], check=True, capture_output=True)
    code = (
        "import sys, runpy; sys.argv = ['evolog', *sys.argv[1:]]\n"
        "try: runpy.run_module('evolog', run_name='__main__')\n"
        "except SystemExit: pass\n"
        "heavy = {'usearch', 'tokenizers', 'tqdm', 'numpy'}\n"
        "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}), file=sys.stderr)\n"
    )
    route = subprocess.run(
        [sys.executable, "-c", code, *base[3:], "route", "fix the flaky test"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert route.stdout.encode() == first.stdout
    assert route.stderr.strip().splitlines()[-1] == "[]"
    graph = subprocess.run(
        [sys.executable, "-c", code, *base[3:], "graph"], capture_output=True, text=True
    )
    assert graph.stderr.strip().splitlines()[-1] == "[]"


def test_kernel_edge_cases_and_clear_errors() -> None:
    kernels = _lean.kernels
    rows = np.array([[1, 0], [0, 1], [1, 0], [0.5, 0.5]], np.float16)
    query = np.array([1, 0], np.float32)
    # Ties rank the lower row first; k above the row count returns every row.
    assert [r for r, _ in kernels.topk(rows.tobytes(), 2, query.tobytes(), 10)] == [0, 2, 3, 1]
    assert kernels.topk(b"", 2, query.tobytes(), 3) == []
    with pytest.raises(ValueError, match="query: expected 2 float32 values; got 12 bytes"):
        kernels.topk(rows.tobytes(), 2, b"\0" * 12, 1)
    with pytest.raises(ValueError, match="k: expected a positive integer; got 0"):
        kernels.topk(rows.tobytes(), 2, query.tobytes(), 0)
    with pytest.raises(ValueError, match="matrix: expected rows of 12 bytes; got 16 bytes"):
        kernels.dots(b"\0" * 16, 3, b"\0" * 12)
    with pytest.raises(ValueError, match="table: expected at least one row; got none"):
        kernels.mean_rows(b"", 4, [1])
    # Ids outside the table are clipped into it, as the numpy pooling clips them.
    table = np.arange(8, dtype=np.float16).reshape(2, 4).tobytes()
    assert kernels.mean_rows(table, 4, [-5]) == kernels.mean_rows(table, 4, [0])
    assert kernels.mean_rows(table, 4, [99]) == kernels.mean_rows(table, 4, [1])
    with pytest.raises(ValueError, match="views: row 0 lies outside the data"):
        kernels.check_views(b"abc", np.array([0, 9], "<i8").tobytes(), b"\0" * 4, None)
