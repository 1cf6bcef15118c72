"""Routing a task to the memory graph: vector search, the applicability check against
unrelated work, and traversal of a node's children.

Internal: import the public names from the parent package.
"""

__all__: list[str] = []
