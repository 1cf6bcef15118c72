"""Errors raised by the event log.

::

    EventLogError                 base of everything this package raises
    ├── InvalidEventError         an event failed validation (field, expected, got, where)
    │   └── EventTooLargeError    an event's encoding is over MAX_EVENT_BYTES
    ├── StoreNotFoundError        the path holds no evolog store
    ├── StoreExistsError          init over an existing, different directory
    ├── CorruptLogError           checksums, seq continuity or the manifest do not agree
    ├── StorageError              an OSError from the file system, mapped (disk full, ...)
    ├── LockTimeoutError          the store's lock stayed held past the caller's time limit
    └── ClosedError               the log was closed
"""

from __future__ import annotations


class EventLogError(Exception):
    """Base class of every error raised by :mod:`eventlog`."""


class InvalidEventError(EventLogError, ValueError):
    """An event does not match the schema; the log is left unchanged."""

    def __init__(self, message: str, *, where: str = "", field: str = "") -> None:
        self.where = where
        self.field = field
        super().__init__(f"{where}: {message}" if where else message)


class EventTooLargeError(InvalidEventError):
    """An event's encoding exceeds the documented cap."""


class StoreNotFoundError(EventLogError, FileNotFoundError):
    """No store at the given path (run ``evolog init DIR`` first)."""


class StoreExistsError(EventLogError, FileExistsError):
    """``init`` was asked to create a store where something else lives."""


class CorruptLogError(EventLogError):
    """The log's own invariants are broken (not a torn tail, which is repaired)."""


class StorageError(EventLogError, OSError):
    """A file-system error during a log operation, e.g. ENOSPC; nothing was acknowledged."""


class LockTimeoutError(EventLogError):
    """Another process held the store's lock longer than the caller was willing to wait;
    nothing was written."""

    def __init__(self, message: str, *, holder: int | None = None) -> None:
        self.holder = holder
        super().__init__(message)


class ClosedError(EventLogError):
    """The log object was closed."""
