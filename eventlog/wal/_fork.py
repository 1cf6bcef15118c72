"""Writers across ``fork()``: a child takes its own write lock, WAL descriptor and index.

flock belongs to the open file description, which a fork shares: on the inherited one,
parent and children would all "hold" the store's write lock at once and hand out the same
seqs. So every forked child resets each writer its parent had open before it can append:
it closes its copies of the inherited descriptors (which releases nothing; the parent
keeps its own) and opens its own lock. The parent's open group, if any, stays the
parent's to write. Nothing is checked on the append path (no getpid per append): the reset
runs once, in the child, from an ``os.register_at_fork`` handler.
"""

from __future__ import annotations

import os
import weakref
from typing import Protocol


class ForkAware(Protocol):
    """A writer: what it does in a forked child is its own business (it knows its fields)."""

    def _after_fork_in_child(self) -> None: ...


#: Every writer of this process (closed ones leave when collected).
_LIVE: weakref.WeakSet[ForkAware] = weakref.WeakSet()


def track(writer: ForkAware) -> None:
    _LIVE.add(writer)


def _reset_all() -> None:
    for writer in list(_LIVE):
        writer._after_fork_in_child()


os.register_at_fork(after_in_child=_reset_all)
