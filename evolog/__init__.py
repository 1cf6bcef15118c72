"""evolog: an event-sourced memory graph for self-improving LLM agents.

``evolog.Memory(path)`` is the Python entry point; ``evolog`` on the command line does the
same from shell hooks and pipes. Names are imported lazily so that a hook process appending
one event loads only the event log.

Errors: everything raised here derives from :class:`eventlog.EventLogError` (storage and
schema) or from the base error of the package that raised it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._memory import Memory

__all__ = ["Memory"]


def __getattr__(name: str) -> Any:
    if name == "Memory":
        from ._memory import Memory

        return Memory
    raise AttributeError(f"module 'evolog' has no attribute {name!r}")
