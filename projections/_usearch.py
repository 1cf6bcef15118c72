"""usearch's index class, imported safely beside pyarrow.

usearch's compiled module (2.26 here) loaded before pyarrow makes pyarrow crash (SIGSEGV)
when it later converts a timestamp with a time zone to Python (``Table.to_pylist``), in any
thread; loaded after pyarrow, both work. A process of evolog may use both (a server that
routes and answers SQL, a route that first builds its index), so every import of usearch
goes through :func:`usearch_index_class`, which imports pyarrow first. The price, pyarrow's
import, is paid only where usearch is needed: building or changing an index, never a cold
route or recall on an up-to-date one.
"""

from __future__ import annotations

from typing import Any

__all__ = ["usearch_index_class"]


def usearch_index_class() -> Any:
    """``usearch.index.Index``, with pyarrow imported before it."""
    import pyarrow  # noqa: F401  (before usearch: see the module docstring)
    from usearch.index import Index

    return Index
