"""The memory graph that dreams build (strategy nodes, steps, constraints, links), folded from
dream events, with the text embedder and the vector index used to route tasks to it.

Internal: import the public names from the parent package.
"""

__all__: list[str] = []
