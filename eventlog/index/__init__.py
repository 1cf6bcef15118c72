"""The id index: the memory-mapped hash table that makes appends idempotent by event id, its
synchronisation with the log, and duplicate checks against sealed data.

Internal: import the public names from the parent package.
"""

__all__: list[str] = []
