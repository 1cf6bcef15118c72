"""Offline embedders and the usearch vector index (a cache rebuilt from node texts)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from evolog.eventlog import Node
from evolog.projections._errors import InvalidParameterError
from evolog.projections.graph import _embed as embed_module
from evolog.projections.graph._embed import (
    DEFAULT_EMBEDDER,
    Embedder,
    HashingEmbedder,
    Vectors,
    WordLlamaEmbedder,
    embedder_names,
    get_embedder,
    register_embedder,
)
from evolog.projections.graph._memgraph import MemGraph
from evolog.projections.graph._vectors import VectorIndex, node_texts, wanted_texts
from evolog.projections.graph._wordllama import load_packaged
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import texts


# Ids by class, not the default repr: its address differs between the workers of a parallel
# run, which must all collect the same test names.
@pytest.mark.parametrize(
    "embedder", [HashingEmbedder(), get_embedder("wordllama")], ids=lambda e: type(e).__name__
)
def test_embedders_give_unit_rows_and_rank_paraphrases_first(embedder: Embedder) -> None:
    texts = [
        "fix the failing import of the yaml module",
        "python cannot import yaml, repair it",
        "bake a chocolate cake for the party",
        "",
    ]
    vectors = embedder.embed(texts)
    assert vectors.shape == (4, embedder.dim) and vectors.dtype == np.float32
    norms = np.linalg.norm(vectors, axis=1)
    assert np.allclose(norms[:3], 1.0, atol=1e-5)
    sims = vectors[:3] @ vectors[0]
    assert sims[1] > sims[2]
    assert np.array_equal(embedder.embed(texts[:1]), vectors[:1])  # deterministic


def test_wordllama_loads_from_the_installed_package_without_network() -> None:
    # A fresh instance: the model must come from the wheel's own folder, downloads disabled.
    embedder = WordLlamaEmbedder()
    assert embedder.name == "wordllama-l2-256" and embedder.dim == 256
    assert embedder.embed(["hello world"]).shape == (1, 256)


_WORDLLAMA_PACKAGE: list[object] = []


@settings(max_examples=40, deadline=None)
@given(st.lists(texts(max_size=60), min_size=1, max_size=5))
def test_wordllama_vectors_are_exactly_the_packages_own(batch: list[str]) -> None:
    """Read without importing wordllama, the model gives its package's vectors, bit for bit."""
    if not _WORDLLAMA_PACKAGE:
        from wordllama import WordLlama

        folder = os.path.dirname(importlib.util.find_spec("wordllama").origin)  # type: ignore[arg-type, union-attr]
        _WORDLLAMA_PACKAGE.append(WordLlama.load(cache_dir=folder, disable_download=True))
    package: Any = _WORDLLAMA_PACKAGE[0]
    ours = load_packaged(256).embed(batch)
    theirs = np.asarray(package.embed(batch, norm=False), dtype=np.float32)
    assert np.array_equal(ours, theirs)


_MODEL = load_packaged(256)


@settings(max_examples=300, deadline=None)
@given(st.one_of(texts(max_size=80), st.text(st.sampled_from("ab ▁<>s/\n"), max_size=30)))
def test_the_python_bpe_gives_the_tokenizer_librarys_ids(text: str) -> None:
    ours = _MODEL.bpe.encode(text) if _MODEL.bpe is not None else None
    theirs = _MODEL.library().encode(text, add_special_tokens=False).ids
    if ours is None:  # left to the library: only texts holding a special token
        assert any(s in text for s in ("<s>", "</s>", "<unk>"))
    else:
        assert ours == theirs


def test_a_route_does_not_import_the_wordllama_package() -> None:
    code = (
        "import sys; from evolog.projections.graph._embed import get_embedder; "
        "get_embedder('wordllama').embed(['x']); "
        "print('wordllama' in sys.modules, 'tokenizers' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False"


def test_hashing_features_are_stemmed_and_stable() -> None:
    features = HashingEmbedder().features("Running the tests")
    assert "w:runn" in features and "w:test" in features and "w:the" not in features
    with pytest.raises(InvalidParameterError, match="power of two"):
        HashingEmbedder(dim=100)


def test_registry_defaults_and_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    assert DEFAULT_EMBEDDER == "wordllama" and {"hashing", "wordllama"} <= set(embedder_names())
    assert get_embedder().name == "wordllama-l2-256"
    monkeypatch.setenv("EVOLOG_EMBEDDER", "hashing")
    assert get_embedder().name == "hashing-1024"
    with pytest.raises(InvalidParameterError, match="expected one of"):
        get_embedder("nope")

    class Constant:
        name, dim = "constant-4", 4

        def embed(self, texts: Sequence[str]) -> Vectors:
            return np.tile(np.float32([1, 0, 0, 0]), (len(texts), 1))

    monkeypatch.setattr(embed_module, "_FACTORIES", dict(embed_module._FACTORIES))
    register_embedder("constant", Constant)
    assert isinstance(get_embedder("constant"), Embedder)
    assert "constant" in embedder_names()


def _graph(*goals: str) -> MemGraph:
    return MemGraph().apply_all(
        Node(cycle="c", node=f"n{i}", goal=g, summary=f"steps for {g}") for i, g in enumerate(goals)
    )


def test_index_sync_search_and_cache(tmp_path: Path) -> None:
    embedder = HashingEmbedder()
    graph = _graph("rotate the tls certificate", "speed up the orders query", "train a model")
    index = VectorIndex(embedder, str(tmp_path))
    assert index.sync(wanted_texts(graph)) == (6, 0)
    assert index.sync(wanted_texts(graph)) == (0, 0)
    (best, score), *_ = index.search_text("renew the tls certificate", 2)
    assert best == "n0" and 0 < score <= 1
    index.save()
    reopened = VectorIndex.open(embedder, str(tmp_path))
    assert len(reopened) == 6 and reopened.search_text("orders query", 1)[0][0] == "n1"
    assert reopened._keys.lazy is not None  # searched from the mapped file, texts never decoded
    # The graph changes: n2 is gone, n0 gains a trigger goal; only the difference moves.
    del graph  # a new graph stands for the changed event log
    wanted = wanted_texts(_graph("rotate the tls certificate", "speed up the orders query"))
    wanted["n0"] = (*wanted["n0"], "renew https cert")
    assert reopened.sync(wanted) == (1, 2)
    assert reopened.nodes() == {"n0", "n1"}
    reopened.save()
    again = VectorIndex.open(embedder, str(tmp_path))
    assert again.search_text("renew https cert", 1)[0][0] == "n0"
    assert {n: set(again.texts(n)) for n in again.nodes()} == {n: set(t) for n, t in wanted.items()}


def test_a_damaged_or_foreign_cache_is_rebuilt(tmp_path: Path) -> None:
    index = VectorIndex(HashingEmbedder(), str(tmp_path))
    index.sync(wanted_texts(_graph("a b c")))
    index.save()
    other = VectorIndex.open(HashingEmbedder(dim=512), str(tmp_path))
    assert len(other) == 0  # another embedder's file name; nothing shared
    for name in os.listdir(tmp_path):
        (tmp_path / name).write_bytes(b"garbage")
    assert len(VectorIndex.open(HashingEmbedder(), str(tmp_path))) == 0


def test_node_texts_bounded_and_with_summary() -> None:
    node = Node(
        cycle="c", node="n", goal="g", summary="s", trigger_goals=[f"t{i}" for i in range(40)]
    )
    graph = MemGraph().apply_all([node])
    texts = node_texts(graph.node("n"))  # type: ignore[arg-type]
    assert len(texts) == 16 and texts[0] == "g" and texts[-1] == "g. s"


def test_search_validates_k() -> None:
    with pytest.raises(InvalidParameterError, match="positive"):
        VectorIndex(HashingEmbedder()).search_text("x", 0)


def test_staged_additions_are_searchable_before_they_are_inserted(tmp_path: Path) -> None:
    embedder = HashingEmbedder()
    index = VectorIndex(embedder, str(tmp_path))
    index.sync(wanted_texts(_graph("rotate the tls certificate")))
    with index.staging():
        index.add("s1", ["speed up the orders query"])
        index.add("s2", ["train an image classifier"])
        assert index.search_text("orders query is slow", 1)[0][0] == "s1"
        assert index.search_text("rotate tls certificate", 1)[0][0] == "n0"
        index.remove("s2")
        assert "s2" not in {n for n, _ in index.search_text("image classifier", 3)}
    assert index.nodes() == {"n0", "s1"} and len(index) == 3
    index.save()
    reopened = VectorIndex.open(embedder, str(tmp_path))
    assert reopened.search_text("orders query is slow", 1)[0][0] == "s1"
