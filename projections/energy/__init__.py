"""The survival energy ledger (:func:`evolog.projections.ledger`), computed on demand from
the log: its rules, configuration, batched and exact replays, the checkpoint and the
read-side view.

Internal: import the public names from the parent package.
"""

__all__: list[str] = []
