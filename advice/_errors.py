"""Errors raised by :mod:`advice`.

::

    AdviceError                     base of everything this package raises
    ├── InvalidInputError           bad input: a query, genes, an outcome, an option, a file
    ├── AttemptError                closing an attempt went wrong (``action_id`` names it)
    │   ├── UnknownAttemptError     no attempt with that action id is in the log
    │   └── AttemptAlreadyClosedError   an outcome for that attempt is already in the log
    ├── EvolverSourceError          an evolver memory-graph file cannot be read
    ├── LogReadError                a sealed segment of the log cannot be read
    └── IndexBackendError           the similarity index (usearch) failed
"""

from __future__ import annotations


class AdviceError(Exception):
    """Base class of every error raised by :mod:`advice`."""


class InvalidInputError(AdviceError, ValueError):
    """Bad input: says what was expected, what was got and where."""


class AttemptError(AdviceError):
    """An attempt could not be closed; ``action_id`` names it."""

    def __init__(self, message: str, *, action_id: str) -> None:
        self.action_id = action_id
        super().__init__(message)


class UnknownAttemptError(AttemptError, LookupError):
    """No attempt with this action id exists (as of the log's current head)."""


class AttemptAlreadyClosedError(AttemptError):
    """The attempt already has an outcome; ``outcome_seq`` is its seq when known."""

    def __init__(self, message: str, *, action_id: str, outcome_seq: int | None = None) -> None:
        self.outcome_seq = outcome_seq
        super().__init__(message, action_id=action_id)


class EvolverSourceError(AdviceError, OSError):
    """An evolver memory-graph file could not be opened or read."""


class LogReadError(AdviceError, OSError):
    """A sealed segment of the log could not be read (pyarrow and OS errors, mapped)."""


class IndexBackendError(AdviceError):
    """The usearch similarity index raised an error (mapped, never leaked raw)."""
