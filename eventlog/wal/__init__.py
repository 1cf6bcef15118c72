"""The write path: the checksummed write-ahead log files, their frames, the writer that hands
out seqs under the cross-process lock, group commit, and the fork handler.

What other parts of evolog import from here.
"""

from typing import TYPE_CHECKING

from evolog._lazy import lazy_exports

if TYPE_CHECKING:
    from ._prepare import prepare_one


__all__ = [
    "prepare_one",
]


__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "._prepare": "prepare_one",
    },
    globals(),
)
