"""The memory graph that dreams build (strategy nodes, steps, constraints, links), folded from
dream events, with the text embedder and the vector index used to route tasks to it.

Users import the public names from the parent package; ``__all__`` here is what
other parts of evolog use (tests/test_architecture.py keeps them off the private modules).
"""

from typing import TYPE_CHECKING

from evolog._lazy import lazy_exports

if TYPE_CHECKING:
    from ._cache import GraphCache
    from ._delta import SeqMark, mark_at
    from ._embed import Vectors, prefer_strong
    from ._lean import Rows, embed_rows, floats
    from ._vectors import MAX_TEXTS_PER_NODE, sync_to_views
    from ._views import GraphReader, graph_document


__all__ = [
    "MAX_TEXTS_PER_NODE",
    "GraphCache",
    "GraphReader",
    "Rows",
    "SeqMark",
    "Vectors",
    "embed_rows",
    "floats",
    "graph_document",
    "mark_at",
    "prefer_strong",
    "sync_to_views",
]


# Names other parts of evolog use load on first use: importing this package costs no
# more than it did before they were exported.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "._cache": "GraphCache",
        "._views": "GraphReader graph_document",
        "._vectors": "MAX_TEXTS_PER_NODE sync_to_views",
        "._lean": "Rows embed_rows floats",
        "._delta": "SeqMark mark_at",
        "._embed": "Vectors prefer_strong",
    },
    globals(),
)
