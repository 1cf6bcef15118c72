"""What an event is: the tagged msgspec Structs, their validation rules, signal keys, ids, the
JSON reader and the binary codec. Imports nothing from the rest of the log.

Internal: import the public names from the parent package.
"""

__all__: list[str] = []
