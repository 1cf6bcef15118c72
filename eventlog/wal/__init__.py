"""The write path: the checksummed write-ahead log files, their frames, the writer that hands
out seqs under the cross-process lock, group commit, and the fork handler.

Users import the public names from the parent package; ``__all__`` here is what
other parts of evolog use (tests/test_architecture.py keeps them off the private modules).
"""

from typing import TYPE_CHECKING

from evolog._lazy import lazy_exports

if TYPE_CHECKING:
    from ._prepare import prepare_one


__all__ = [
    "prepare_one",
]


# Names other parts of evolog use load on first use: importing this package costs no
# more than it did before they were exported.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "._prepare": "prepare_one",
    },
    globals(),
)
