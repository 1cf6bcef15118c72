"""The memory graph that dreams build (strategy nodes, steps, constraints, links), folded from
dream events, with the text embedder and the vector index used to route tasks to it.

What other parts of evolog import from here.
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
