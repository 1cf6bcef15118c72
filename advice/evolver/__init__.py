"""Interoperability with evolver: its memory-graph file format, import, export, following a
live file, the writer and evolver's own advice policy.

Users import the public names from the parent package; ``__all__`` here is what
other parts of evolog use (tests/test_architecture.py keeps them off the private modules).
"""

from typing import TYPE_CHECKING

from evolog._lazy import lazy_exports

if TYPE_CHECKING:
    from ._import import EVENT_TYPE, diff_patch, supported_kind


__all__ = [
    "EVENT_TYPE",
    "diff_patch",
    "supported_kind",
]


# Names other parts of evolog use load on first use: importing this package costs no
# more than it did before they were exported.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "._import": "EVENT_TYPE diff_patch supported_kind",
    },
    globals(),
)
