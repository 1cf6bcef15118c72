"""The WordLlama model read straight from the files its wheel ships, without its package.

``import wordllama`` pulls in pydantic, requests, toml and tqdm (about 0.2 s, most of a cold
``evolog route``), and its loader converts the whole 32000-row matrix to float32. The model
is only a tokenizer and a token-embedding matrix, averaged over a text's tokens, so this
reads the same two files (found without importing the package), maps the matrix and
converts only the rows a batch uses. The vectors are bit-identical to
``WordLlama.embed(texts, norm=False)`` (tests/test_embed.py checks it).
"""

from __future__ import annotations

import importlib.util
import json
import os
import struct
from collections.abc import Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt

__all__ = ["StaticModel", "load_packaged"]

_CONFIG: Final = "l2_supercat"
_BATCH: Final = 64  # as WordLlama: pooled in chunks, so memory stays bounded
_DTYPES: Final = {"F16": np.float16, "F32": np.float32, "BF16": None}


class StaticModel:
    """A tokenizer and a token-embedding matrix; a text's vector is its tokens' mean."""

    def __init__(self, tokenizer: Any, matrix: npt.NDArray[Any]) -> None:
        self.tokenizer = tokenizer
        self.matrix = matrix

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = np.empty((len(texts), self.matrix.shape[1]), dtype=np.float32)
        for start in range(0, len(texts), _BATCH):
            chunk = list(texts[start : start + _BATCH])
            encoded = self.tokenizer.encode_batch(
                chunk, is_pretokenized=False, add_special_tokens=False
            )
            ids = np.array([e.ids for e in encoded], dtype=np.int32)
            mask = np.array([e.attention_mask for e in encoded], dtype=np.float32)
            np.clip(ids, 0, self.matrix.shape[0] - 1, out=ids)
            # The same arithmetic as WordLlama's average pooling, in the same order.
            x = self.matrix[ids].astype(np.float32)
            total = np.maximum(mask.sum(axis=1, keepdims=True), 1.0).astype(np.float32)
            out[start : start + len(chunk)] = (
                np.sum(x * mask[..., np.newaxis], axis=1, dtype=np.float32) / total
            )
        return out


def load_packaged(dim: int) -> StaticModel:
    """The model of the installed ``wordllama`` wheel at ``dim`` (its files, not its code).

    Raises OSError, ValueError or ImportError when the files are missing or malformed.
    """
    spec = importlib.util.find_spec("wordllama")
    if spec is None or spec.origin is None:
        raise ImportError("the wordllama package is not installed")
    folder = os.path.dirname(spec.origin)
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(
        os.path.join(folder, "tokenizers", f"{_CONFIG}_tokenizer_config.json")
    )
    tokenizer.enable_padding()
    tokenizer.no_truncation()
    return StaticModel(
        tokenizer, _matrix(os.path.join(folder, "weights", f"{_CONFIG}_{dim}.safetensors"))
    )


def _matrix(path: str) -> npt.NDArray[Any]:
    """``embedding.weight`` of a safetensors file, memory-mapped (8-byte header length,
    JSON header, raw little-endian data)."""
    with open(path, "rb") as f:
        (size,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(size))
    info = header["embedding.weight"]
    dtype = _DTYPES.get(info["dtype"])
    if dtype is None:
        raise ValueError(f"{path}: unsupported tensor dtype {info['dtype']}")
    begin, end = info["data_offsets"]
    shape = tuple(info["shape"])
    if len(shape) != 2 or end - begin != shape[0] * shape[1] * np.dtype(dtype).itemsize:
        raise ValueError(f"{path}: embedding.weight of shape {shape} does not fit its bytes")
    return np.memmap(path, dtype=np.dtype(dtype).newbyteorder("<"), mode="r",
                     offset=8 + size + begin, shape=shape)  # fmt: skip
