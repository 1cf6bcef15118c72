"""Sealed data: Parquet segments, the checksummed manifest that commits them, sealing and
compaction, and reading segments back (replay, Arrow batches).

Internal: import the public names from the parent package.
"""

__all__: list[str] = []
