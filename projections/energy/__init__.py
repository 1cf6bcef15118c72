"""The survival energy ledger (:func:`evolog.projections.ledger`), computed on demand from
the log: its rules, configuration, batched and exact replays, the checkpoint and the
read-side view.

Users import the public names from the parent package; ``__all__`` here is what
other parts of evolog use (tests/test_architecture.py keeps them off the private modules).
"""

from typing import TYPE_CHECKING

from evolog._lazy import lazy_exports

if TYPE_CHECKING:
    from ._cache import events_after
    from ._follow import LedgerFollower


__all__ = [
    "LedgerFollower",
    "events_after",
]


# Names other parts of evolog use load on first use: importing this package costs no
# more than it did before they were exported.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "._follow": "LedgerFollower",
        "._cache": "events_after",
    },
    globals(),
)
