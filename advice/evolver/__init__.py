"""Interoperability with evolver: its memory-graph file format, import, export, following a
live file, the writer and evolver's own advice policy.

What other parts of evolog import from here.
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


__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "._import": "EVENT_TYPE diff_patch supported_kind",
    },
    globals(),
)
