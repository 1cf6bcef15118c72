"""The ledger's rules as a state machine fed events in log order: births, credit and
damage at settlement, upkeep and expiry at ticks, consolidation of similar entries, and
the column state they update.

Users import the public names from :mod:`evolog.projections`; ``__all__`` here is what
other parts of evolog use (tests/packaging/test_architecture.py keeps them off the private modules).
"""

from typing import TYPE_CHECKING

from evolog._lazy import lazy_exports

if TYPE_CHECKING:
    from ._host import Similarity
    from ._state import ALIVE, CAUSES


__all__ = [
    "ALIVE",
    "CAUSES",
    "Similarity",
]


__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "._state": "ALIVE CAUSES",
        "._host": "Similarity",
    },
    globals(),
)
