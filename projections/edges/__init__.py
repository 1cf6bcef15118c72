"""Edge statistics (signal key x gene): the fold over outcomes, the Laplace-smoothed,
half-life-decayed figures, and their incremental state.

Internal: import the public names from the parent package.
"""

__all__: list[str] = []
