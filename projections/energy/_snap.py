"""Where a ledger reads from: a snapshot of a store path or of an open log.

Kept apart from the replay (:mod:`._ledger`, which needs pyarrow) so that a ledger
checkpoint that is up to date is read without importing pyarrow.
"""

from __future__ import annotations

import os
from typing import Any

from evolog.eventlog import EventLog, Paths, Snapshot, StoreNotFoundError

from .._errors import InvalidParameterError

__all__ = ["Source", "snapshot_of"]

Source = str | os.PathLike[str] | EventLog


def snapshot_of(source: Source | Any) -> Snapshot:
    """A snapshot of a store path, an :class:`EventLog`, or anything with a ``log``."""
    log = getattr(source, "log", source)
    if isinstance(log, EventLog):
        return log.snapshot()
    if not isinstance(log, (str, os.PathLike)):
        raise InvalidParameterError(
            f"store: expected a store path or an EventLog; got {type(source).__name__}"
        )
    paths = Paths.of(log)
    if not os.path.exists(paths.marker):
        raise StoreNotFoundError(
            f"{paths.root}: expected an evolog store; found none "
            f"(create one with `evolog init {paths.root}`)"
        )
    return Snapshot.take(paths)
