"""Errors raised by dream cycles, the VM and the dreamers.

::

    DreamError                    base of everything this package raises (but see below)
    ├── ProgramError              a program failed in the VM (a dangling node, a bad index)
    ├── CycleError                a dream cycle failed; nothing of it was appended
    ├── UndoError                 an undo names no dream cycle or evolve run, or one undone
    ├── EvolveError               a memory-evolution run failed; nothing of it was appended
    │   ├── StrategyError         a strategy raised or returned something other than items
    │   ├── SettingError          a strategy setting out of its range (ValueError)
    │   └── ExpressionError       a pipeline expression did not parse (ValueError)
    └── DreamerError              a dreamer could not produce a program
        ├── DreamerConfigError    missing API key or SDK, a bad model setting
        ├── DreamerConnectionError the API could not be reached (after retries)
        ├── DreamerOutputError    the reply was not a valid program (after a repair turn)
        └── DreamerAPIError       the API answered with an error status (after retries)
            └── DreamerRateLimitError  rate limited (429) or overloaded (529)

Every message says what was expected, what was got and where. Errors of the log itself
stay :class:`eventlog.EventLogError`.
"""

from __future__ import annotations

__all__ = [
    "CycleError",
    "DreamError",
    "DreamerAPIError",
    "DreamerConfigError",
    "DreamerConnectionError",
    "DreamerError",
    "DreamerOutputError",
    "DreamerRateLimitError",
    "EvolveError",
    "ExpressionError",
    "ProgramError",
    "SettingError",
    "StrategyError",
    "UndoError",
]


class DreamError(Exception):
    """Base class of the errors raised by :mod:`dream`."""


class ProgramError(DreamError, ValueError):
    """A program was rejected by the VM; ``line`` is its 1-based source line (0: unknown)."""

    def __init__(self, message: str, line: int = 0) -> None:
        super().__init__(message)
        self.line = line


class CycleError(DreamError):
    """A dream cycle failed before its batch was appended: the log is unchanged."""


class UndoError(DreamError, ValueError):
    """An undo request that cannot be honoured (unknown or already retracted cycle)."""


class EvolveError(DreamError):
    """A memory-evolution run failed before its batch was appended: the log is unchanged."""


class StrategyError(EvolveError):
    """A strategy failed or returned something other than a list of items."""


class SettingError(EvolveError, ValueError):
    """A strategy setting (a threshold, a share) is outside the range it is defined on."""


class ExpressionError(EvolveError, ValueError):
    """A pipeline expression is malformed; ``position`` is its 1-based character offset."""

    def __init__(self, message: str, position: int = 0) -> None:
        super().__init__(message)
        self.position = position


class DreamerError(DreamError):
    """A dreamer failed to produce a program."""


class DreamerConfigError(DreamerError, ValueError):
    """The dreamer is misconfigured: no API key, SDK missing, a bad option."""


class DreamerConnectionError(DreamerError):
    """The model API could not be reached, even after retries."""


class DreamerOutputError(DreamerError):
    """The model's reply was not a valid ISA program; ``text`` is the reply."""

    def __init__(self, message: str, text: str = "") -> None:
        super().__init__(message)
        self.text = text


class DreamerAPIError(DreamerError):
    """The model API answered with an error; ``status`` is the HTTP status (0 if none)."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class DreamerRateLimitError(DreamerAPIError):
    """The model API kept refusing for rate limits or overload after every retry."""
