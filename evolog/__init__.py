"""evolog: an event-sourced memory graph for self-improving LLM agents.

``evolog.Memory(path)`` is the Python entry point; ``evolog`` on the command line does the
same from shell hooks and pipes. The event types an agent records (``evolog.Signal``,
``evolog.Attempt``, ``evolog.Outcome``, ...) and the log's errors are importable from here
too. The layers live in subpackages: ``evolog.eventlog`` (the log), ``evolog.projections``,
``evolog.advice`` and ``evolog.dream``.

Names are imported lazily so that a hook process appending one event loads only the event
log.

What ``Memory``'s calls return is importable from here too: :class:`RecallResult` (with its
:class:`RecalledItem` list), :class:`Remembered`, :class:`CompressResult`,
:class:`SealResult`, :class:`CompactResult`, :class:`VerifyReport` and :class:`Receipt`;
the layers' own results (``Advice``, ``RouteDecision``, ``DreamReport``, ``LedgerView``,
``EvolveReport``) from their packages. ``recall``, ``remember``, ``feedback``, ``fetch`` and
the ``shown_*`` helpers are the functions behind ``Memory`` that the command line, the hook
and the server call with a log and an item index of their own.

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
    from ._recall import (
        RecalledItem,
        RecallResult,
        digest,
        recall,
        routed_strategy,
        session_items,
        shown_json,
        shown_route,
    )
    from ._remember import CompressResult, Remembered, feedback, remember
    from .eventlog import VerifyReport
    from .eventlog.sealed import CompactResult, SealResult

__all__ = [
    "AnyEvent",
    "Attempt",
    "ChildStep",
    "ClosedError",
    "CompactResult",
    "CompressResult",
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
    "RecallResult",
    "RecalledItem",
    "Receipt",
    "Remembered",
    "Retraction",
    "SealResult",
    "Signal",
    "Step",
    "StorageError",
    "StoreExistsError",
    "StoreNotFoundError",
    "Tick",
    "UnknownItemError",
    "VerifyReport",
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
        "Tick VerifyReport",
        "._recall": "digest recall routed_strategy session_items shown_json shown_route "
        "RecallResult RecalledItem",
        "._remember": "feedback remember CompressResult Remembered",
        "._demo": "run_demo",
        "._fetch": "UnknownItemError fetch",
        ".eventlog.sealed": "CompactResult SealResult",
    },
    globals(),
)
