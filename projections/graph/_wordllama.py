"""The WordLlama model read straight from the files its wheel ships, without its package.

``import wordllama`` pulls in pydantic, requests, toml and tqdm (about 0.2 s, most of a cold
``evolog route``), and its loader converts the whole 32000-row matrix to float32. The model
is only a tokenizer and a token-embedding matrix, averaged over a text's tokens, so this
reads the same two files (found without importing the package), maps the matrix and
converts only the rows a batch uses; short texts are tokenized in Python (:mod:`._bpe`),
which reads the tokenizer file about three times faster than the ``tokenizers`` library
loads it. The vectors are bit-identical to ``WordLlama.embed(texts, norm=False)``
(tests/projections/graph/test_embed.py checks it).

:class:`LeanModel` is the same model for a cold process without numpy: the matrix mapped with
``mmap``, the tokenizer's binary cache (:meth:`Bpe.cached`), and the pooling in C
(``_kernels.mean_rows``, bit-identical to the numpy pooling here).
"""

from __future__ import annotations

import importlib.util
import mmap
import os
import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

import msgspec

from ._bpe import Bpe

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["LeanModel", "StaticModel", "lean_packaged", "load_packaged"]

_CONFIG: Final = "l2_supercat"
_BATCH: Final = 64  # as WordLlama: pooled in chunks, so memory stays bounded
_PYTHON_BELOW: Final = 16  # texts per call tokenized in Python (see token_ids)
_ITEMSIZE: Final = {"F16": 2, "F32": 4}


class StaticModel:
    """A tokenizer and a token-embedding matrix; a text's vector is its tokens' mean.

    Texts are tokenized by :class:`Bpe` where it models them, else by the ``tokenizers``
    library (loaded on first need); both give the same ids.
    """

    def __init__(self, tokenizer_file: str, matrix: npt.NDArray[Any]) -> None:
        self.tokenizer_file = tokenizer_file
        self.matrix = matrix
        self.bpe = Bpe.load(tokenizer_file)
        self._library: Any = None

    def library(self) -> Any:
        """The ``tokenizers`` library's tokenizer of the same file."""
        if self._library is None:
            from tokenizers import Tokenizer

            self._library = Tokenizer.from_file(self.tokenizer_file)
        return self._library

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's token ids (no special tokens added)."""
        # Python is quicker to start, the library (Rust) quicker per text: a cold route's
        # one task goes to the former, a dream's or a full sync's thousands to the latter.
        bpe = self.bpe if len(texts) <= _PYTHON_BELOW else None
        ids: list[list[int] | None] = [bpe.encode(t) if bpe is not None else None for t in texts]
        missing = [i for i, row in enumerate(ids) if row is None]
        if missing:
            found = self.library().encode_batch(
                [texts[i] for i in missing], is_pretokenized=False, add_special_tokens=False
            )
            for i, enc in zip(missing, found, strict=True):
                ids[i] = list(enc.ids)
        return ids  # type: ignore[return-value]

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        import numpy as np

        out = np.empty((len(texts), self.matrix.shape[1]), dtype=np.float32)
        for start in range(0, len(texts), _BATCH):
            chunk = list(texts[start : start + _BATCH])
            rows = self.token_ids(chunk)
            # Padded to the longest text of the chunk, as the library pads a batch.
            width = max(map(len, rows), default=0)
            ids = np.zeros((len(rows), width), dtype=np.int32)
            mask = np.zeros((len(rows), width), dtype=np.float32)
            for r, row in enumerate(rows):
                ids[r, : len(row)] = row
                mask[r, : len(row)] = 1.0
            np.clip(ids, 0, self.matrix.shape[0] - 1, out=ids)
            # The same arithmetic as WordLlama's average pooling, in the same order.
            x = self.matrix[ids].astype(np.float32)
            total = np.maximum(mask.sum(axis=1, keepdims=True), 1.0).astype(np.float32)
            out[start : start + len(chunk)] = (
                np.sum(x * mask[..., np.newaxis], axis=1, dtype=np.float32) / total
            )
        return out


class LeanModel:
    """The packaged model without numpy: float16 rows pooled in C (see the module docstring)."""

    def __init__(self, bpe: Bpe, table: memoryview, dim: int, kernels: Any) -> None:
        self.bpe, self.table, self.dim, self._kernels = bpe, table, dim, kernels

    def embed(self, texts: Sequence[str]) -> bytes | None:
        """The texts' unit (or zero) float32 rows back to back, or None when a text needs the
        ``tokenizers`` library (the caller then takes the numpy path)."""
        out = []
        for text in texts:
            ids = self.bpe.encode(text)
            if ids is None:
                return None
            out.append(self._kernels.mean_rows(self.table, self.dim, ids))
        return b"".join(out)


def _files(dim: int) -> tuple[str, str]:
    spec = importlib.util.find_spec("wordllama")
    if spec is None or spec.origin is None:
        raise ImportError("the wordllama package is not installed")
    folder = os.path.dirname(spec.origin)
    tokenizer = os.path.join(folder, "tokenizers", f"{_CONFIG}_tokenizer_config.json")
    weights = os.path.join(folder, "weights", f"{_CONFIG}_{dim}.safetensors")
    return tokenizer, weights


def load_packaged(dim: int) -> StaticModel:
    """The model of the installed ``wordllama`` wheel at ``dim`` (its files, not its code).

    Raises OSError, ValueError or ImportError when the files are missing or malformed.
    """
    tokenizer, weights = _files(dim)
    return StaticModel(tokenizer, _matrix(weights))


def lean_packaged(dim: int, cache: str, kernels: Any) -> LeanModel | None:
    """The packaged model for the numpy-free path, its tokenizer cached under ``cache``; None
    where that path does not apply (a float32 matrix, a tokenizer :class:`Bpe` cannot model).

    Raises OSError, ValueError or ImportError as :func:`load_packaged`.
    """
    tokenizer, weights = _files(dim)
    offset, dtype, shape = _layout(weights)
    bpe = Bpe.cached(tokenizer, cache)
    if dtype != "F16" or bpe is None:
        return None
    with open(weights, "rb") as f:
        data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    table = memoryview(data)[offset : offset + shape[0] * shape[1] * 2]
    return LeanModel(bpe, table, shape[1], kernels)


def _layout(path: str) -> tuple[int, str, tuple[int, int]]:
    """Where ``embedding.weight`` of a safetensors file starts, its dtype and shape (the file
    is an 8-byte header length, a JSON header, then raw little-endian data)."""
    with open(path, "rb") as f:
        (size,) = struct.unpack("<Q", f.read(8))
        header = msgspec.json.decode(f.read(size))
    info = header["embedding.weight"]
    itemsize = _ITEMSIZE.get(info["dtype"])
    if itemsize is None:
        raise ValueError(f"{path}: unsupported tensor dtype {info['dtype']}")
    begin, end = info["data_offsets"]
    shape = tuple(info["shape"])
    if len(shape) != 2 or end - begin != shape[0] * shape[1] * itemsize:
        raise ValueError(f"{path}: embedding.weight of shape {shape} does not fit its bytes")
    return 8 + size + begin, info["dtype"], (shape[0], shape[1])


def _matrix(path: str) -> npt.NDArray[Any]:
    """``embedding.weight`` of a safetensors file, memory-mapped."""
    import numpy as np

    offset, dtype, shape = _layout(path)
    kind = np.dtype(np.float16 if dtype == "F16" else np.float32).newbyteorder("<")
    return np.memmap(path, dtype=kind, mode="r", offset=offset, shape=shape)
