"""evolog: an event-sourced memory graph for self-improving LLM agents.

``evolog.Memory(path)`` is the Python entry point; ``evolog`` on the command line does the
same from shell hooks and pipes. The event types an agent records (``evolog.Signal``,
``evolog.Attempt``, ``evolog.Outcome``, ...) and the log's errors are importable from here
too. The layers live in subpackages: ``evolog.eventlog`` (the log), ``evolog.projections``,
``evolog.advice`` and ``evolog.dream``.

Names are imported lazily so that a hook process appending one event loads only the event
log.

Errors: everything raised here derives from :class:`evolog.EventLogError` (storage and
schema) or from the base error of the package that raised it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_exports

if TYPE_CHECKING:
    from evolog.eventlog import (
        AnyEvent,
        Attempt,
        ChildStep,
        ClosedError,
        ConfidenceEdge,
        ConfidenceGeneOutcome,
        Constraint,
        CorruptLogError,
        DreamBegin,
        DreamEnd,
        Durability,
        Event,
        EventLogError,
        EventTooLargeError,
        ExternalCandidate,
        Feedback,
        Hypothesis,
        InvalidEventError,
        Lifecycle,
        Link,
        LockTimeoutError,
        Mark,
        Merge,
        Mutation,
        Node,
        Note,
        Outcome,
        Personality,
        Prune,
        Recall,
        Receipt,
        Retraction,
        Signal,
        Step,
        StorageError,
        StoreExistsError,
        StoreNotFoundError,
        Tick,
    )

    from ._demo import run_demo
    from ._fetch import UnknownItemError, fetch
    from ._memory import Memory
    from ._recall import digest, recall, routed_strategy, session_items, shown_json, shown_route
    from ._remember import feedback, remember

__all__ = [
    "AnyEvent",
    "Attempt",
    "ChildStep",
    "ClosedError",
    "ConfidenceEdge",
    "ConfidenceGeneOutcome",
    "Constraint",
    "CorruptLogError",
    "DreamBegin",
    "DreamEnd",
    "Durability",
    "Event",
    "EventLogError",
    "EventTooLargeError",
    "ExternalCandidate",
    "Feedback",
    "Hypothesis",
    "InvalidEventError",
    "Lifecycle",
    "Link",
    "LockTimeoutError",
    "Mark",
    "Memory",
    "Merge",
    "Mutation",
    "Node",
    "Note",
    "Outcome",
    "Personality",
    "Prune",
    "Recall",
    "Receipt",
    "Retraction",
    "Signal",
    "Step",
    "StorageError",
    "StoreExistsError",
    "StoreNotFoundError",
    "Tick",
    "UnknownItemError",
    "digest",
    "feedback",
    "fetch",
    "recall",
    "remember",
    "routed_strategy",
    "run_demo",
    "session_items",
    "shown_json",
    "shown_route",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "._memory": "Memory",
        ".eventlog": "AnyEvent Attempt ChildStep ClosedError ConfidenceEdge "
        "ConfidenceGeneOutcome Constraint CorruptLogError DreamBegin DreamEnd "
        "Durability Event EventLogError EventTooLargeError ExternalCandidate "
        "Feedback Hypothesis InvalidEventError Lifecycle Link LockTimeoutError Mark "
        "Merge Mutation Node Note Outcome Personality Prune Recall Receipt "
        "Retraction Signal Step StorageError StoreExistsError StoreNotFoundError "
        "Tick",
        "._recall": "digest recall routed_strategy session_items shown_json shown_route",
        "._remember": "feedback remember",
        "._demo": "run_demo",
        "._fetch": "UnknownItemError fetch",
    },
    globals(),
)
