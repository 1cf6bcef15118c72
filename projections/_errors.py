"""Errors raised by the projections.

::

    ProjectionError               base of everything this package raises
    ├── InvalidParameterError     a bad argument (half-life, decay mode, as-of, format, ...)
    │   └── RefusedQueryError     user SQL that is not one read-only query, or that reaches
    │                             outside the store (COPY, ATTACH, SET, read_csv('/etc/..'))
    ├── QueryError                user SQL that DuckDB rejects (syntax, unknown column, ...)
    ├── QueryLimitError           user SQL stopped by a limit (time, memory, result size) or
    │                             cancelled (``kind``: time, memory, size, cancel)
    └── EngineError               DuckDB or the file system failed underneath us

Errors of the log itself (a missing store, a corrupt segment) stay
:class:`eventlog.EventLogError`; they are raised before any projection work starts.
"""

from __future__ import annotations


class ProjectionError(Exception):
    """Base class of every error raised by :mod:`projections`."""


class InvalidParameterError(ProjectionError, ValueError):
    """An argument is out of its domain; nothing was computed."""


class RefusedQueryError(InvalidParameterError):
    """User SQL was refused before it ran: only one read-only query is allowed."""


class QueryError(ProjectionError, ValueError):
    """DuckDB rejected user SQL (parse, bind or type error); the message is DuckDB's."""


class QueryLimitError(ProjectionError):
    """User SQL was stopped: it hit one of its limits, or it was cancelled."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        #: ``time``, ``memory``, ``size`` (of the result) or ``cancel``.
        self.kind = kind


class EngineError(ProjectionError):
    """An unexpected DuckDB or file-system failure while computing a projection."""
