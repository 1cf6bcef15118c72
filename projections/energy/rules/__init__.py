"""The ledger's rules as a state machine fed events in log order: births, credit and
damage at settlement, upkeep and expiry at ticks, consolidation of similar entries, and
the column state they update.

Internal: import the public names from :mod:`evolog.projections`.
"""

__all__: list[str] = []
