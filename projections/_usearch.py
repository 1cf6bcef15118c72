"""usearch's index class, imported safely beside pyarrow.

usearch's compiled module (2.26 here) loaded before Arrow's C++ library makes pyarrow crash
(SIGSEGV) when it later converts a timestamp with a time zone to Python
(``Table.to_pylist``); with Arrow's library loaded first, both work. A process of evolog may
use both (a server that routes and answers SQL, a route that first builds its index), so
every import of usearch goes through :func:`usearch_index_class`, which loads
``libarrow.so`` first: about 6 ms, where importing pyarrow itself costs a cold
``evolog advise`` (which maps the signal-key index) some 60 ms.
"""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["usearch_index_class"]

_done = False


def _load_arrow_first() -> None:
    global _done
    if _done or "pyarrow.lib" in sys.modules:
        _done = True
        return
    import importlib.util

    spec = importlib.util.find_spec("pyarrow")  # finds the package without running it
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        names = sorted(n for n in os.listdir(folder) if n.startswith("libarrow.so"))
        if names:
            import ctypes

            ctypes.CDLL(os.path.join(folder, names[0]))
            _done = True
            return
    # Another platform's file names: importing pyarrow loads its library just as well.
    import pyarrow  # noqa: F401

    _done = True


def usearch_index_class() -> Any:
    """``usearch.index.Index``, with Arrow's C++ library loaded before it."""
    _load_arrow_first()
    from usearch.index import Index

    return Index
