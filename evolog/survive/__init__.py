"""The survival benchmark: simulated agent environments that test whether the ledger keeps
useful memories alive and lets useless ones die.

What other parts of evolog import from here.
"""

from typing import TYPE_CHECKING

from evolog._lazy import lazy_exports

if TYPE_CHECKING:
    from ._errors import SurvivalError
    from ._report import aggregate, run_metrics, table, to_builtins
    from ._suite import UNITS, poison_demo, run_suite


__all__ = [
    "UNITS",
    "SurvivalError",
    "aggregate",
    "poison_demo",
    "run_metrics",
    "run_suite",
    "table",
    "to_builtins",
]


__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "._errors": "SurvivalError",
        "._suite": "UNITS poison_demo run_suite",
        "._report": "aggregate run_metrics table to_builtins",
    },
    globals(),
)
