"""Sort-based set operations on int64 arrays.

numpy 2.x's ``np.unique`` hashes unsorted input, which measured ~15x slower than a sort for
the 1e4-1e5 element arrays the ledger makes per run (bench/RESULTS.md).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]


def unique(a: I64) -> I64:
    """Sorted distinct values."""
    s = np.sort(a)
    return s[np.r_[True, s[1:] != s[:-1]]] if len(s) else s


def unique_inverse(a: I64) -> tuple[I64, I64]:
    """Sorted distinct values and, for each element, the index of its value among them."""
    order = np.argsort(a, kind="stable")
    s = a[order]
    new = np.r_[True, s[1:] != s[:-1]] if len(s) else np.zeros(0, bool)
    inverse = np.empty(len(a), np.int64)
    inverse[order] = np.cumsum(new) - 1
    return s[new], inverse


def unique_first(a: I64) -> tuple[I64, I64]:
    """Sorted distinct values and the index of each one's first occurrence."""
    order = np.argsort(a, kind="stable")
    s = a[order]
    new = np.r_[True, s[1:] != s[:-1]] if len(s) else np.zeros(0, bool)
    return s[new], order[new]
