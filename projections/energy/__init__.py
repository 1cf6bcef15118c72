"""The survival energy ledger (:func:`evolog.projections.ledger`), computed on demand from
the log: its rules, configuration, batched and exact replays, the checkpoint and the
read-side view.

What other parts of evolog import from here.
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


__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "._follow": "LedgerFollower",
        "._cache": "events_after",
    },
    globals(),
)
