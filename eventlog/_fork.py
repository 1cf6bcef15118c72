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
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._writer import Writer

#: Every writer of this process (closed ones leave when collected).
_LIVE: weakref.WeakSet[Writer] = weakref.WeakSet()


def track(writer: Writer) -> None:
    _LIVE.add(writer)


def reset_in_child(w: Writer) -> None:
    """Give ``w`` a lock, WAL descriptor and index mapping of this (forked) process."""
    w._group_after_fork()  # the parent's group and threads: not this process's
    if w._closed:
        return  # its descriptors were closed (their numbers may be reused since)
    w._lag = {}  # the parent inserts these ids (or the next writer's catch-up does)
    w._close_active()
    w._size = -1
    if w._index is not None:
        w._index.close()
        w._index = None
    w._lock.close()
    try:
        w._lock = w._open_lock()
    except OSError as exc:
        w._closed = True  # its appends then raise ClosedError; nothing to release
        w._fork_error = f"could not reopen {w.paths.write_lock} after fork: {exc}"


def _reset_all() -> None:
    for writer in list(_LIVE):
        reset_in_child(writer)


os.register_at_fork(after_in_child=_reset_all)
