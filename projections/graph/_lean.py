"""The numpy-free vector path of a cold route: float32 rows as plain buffers, C kernels.

A cold ``evolog route`` embeds one task, ranks the stored node vectors against it and checks
a few candidates against the generic sample; importing numpy and usearch for that costs more
than all of the arithmetic. Here vectors are float32 values in any C-contiguous buffer
(``bytes``, ``mmap`` slices, numpy arrays alike) and the loops run in
``projections/graph/_kernels.c``. Where the extension is not built, :data:`kernels` is None
and every caller takes its numpy path; the answers agree (tests/packaging/test_lean.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol


class _Embedder(Protocol):  # ._embed.Embedder, which imports this module
    @property
    def dim(self) -> int: ...
    def embed(self, texts: Sequence[str]) -> Any: ...


__all__ = ["Rows", "embed_rows", "floats", "kernels"]

kernels: Any
try:
    from . import _kernels

    kernels = _kernels
except ImportError:  # pragma: no cover - the extension is optional
    kernels = None


def floats(buffer: Any) -> memoryview:
    """``buffer`` as a flat memoryview of float32 values (numpy only for odd layouts)."""
    view = memoryview(buffer)
    if not view.c_contiguous or view.format not in ("f", "B", "<f"):
        import numpy as np

        view = memoryview(np.ascontiguousarray(buffer, dtype=np.float32))  # type: ignore[arg-type]
    return view.cast("B").cast("f")  # type: ignore[return-value]


class Rows:
    """``n`` float32 vectors of ``dim`` values back to back in one buffer."""

    __slots__ = ("data", "dim", "n")

    def __init__(self, data: Any, dim: int) -> None:
        self.data = floats(data)
        self.dim = dim
        self.n = len(self.data) // dim if dim else 0

    def __len__(self) -> int:
        return self.n

    def row(self, i: int) -> memoryview:
        return self.data[i * self.dim : (i + 1) * self.dim]

    def dots(self, vector: Any) -> list[float]:
        """Each row's dot product with ``vector``."""
        if not self.n:
            return []
        if kernels is not None:
            return kernels.dots(self.data, self.dim, floats(vector))  # type: ignore[no-any-return]
        import numpy as np

        matrix = np.frombuffer(self.data, np.float32).reshape(self.n, self.dim)
        return (matrix @ np.frombuffer(floats(vector), np.float32)).tolist()  # type: ignore[no-any-return]

    def array(self) -> Any:
        """The rows as an ``(n, dim)`` numpy array (a view, not a copy)."""
        import numpy as np

        return np.frombuffer(self.data, np.float32).reshape(self.n, self.dim)


def embed_rows(embedder: _Embedder, texts: Sequence[str]) -> Rows:
    """``embedder.embed(texts)`` as :class:`Rows`: without numpy where the embedder has a lean
    path (``embed_lean``) and the kernels are built, else through its numpy ``embed``."""
    lean = getattr(embedder, "embed_lean", None)
    data = lean(texts) if lean is not None and kernels is not None else None
    if data is None:
        import numpy as np

        data = np.ascontiguousarray(embedder.embed(list(texts)), dtype=np.float32)
    return Rows(data, embedder.dim)
