"""Interoperability with evolver: its memory-graph file format, import, export, following a
live file, the writer and evolver's own advice policy.

Internal: import the public names from the parent package.
"""

__all__: list[str] = []
