"""The survival benchmark: simulated agent environments that test whether the ledger keeps
useful memories alive and lets useless ones die.

Internal: import the public names from the parent package.
"""

__all__: list[str] = []
