"""The union of every event kind, and the kind registry."""

from __future__ import annotations

from typing import TypeAlias

from ._dream_events import (
    ChildStep,
    Constraint,
    DreamBegin,
    DreamEnd,
    Lifecycle,
    Link,
    Mark,
    Merge,
    Node,
    Prune,
    Retraction,
)
from ._events import (
    Attempt,
    ConfidenceEdge,
    ConfidenceGeneOutcome,
    Event,
    ExternalCandidate,
    Feedback,
    Fetched,
    Hypothesis,
    Note,
    Outcome,
    Recall,
    Signal,
    Step,
    Tick,
)

AnyEvent: TypeAlias = (
    Signal
    | Hypothesis
    | Attempt
    | Step
    | Outcome
    | Tick
    | ConfidenceEdge
    | ConfidenceGeneOutcome
    | ExternalCandidate
    | Feedback
    | Note
    | Recall
    | Fetched
    | DreamBegin
    | DreamEnd
    | Constraint
    | Mark
    | Node
    | ChildStep
    | Link
    | Merge
    | Prune
    | Retraction
    | Lifecycle
)

EVENT_TYPES: tuple[type[Event], ...] = (
    Signal,
    Hypothesis,
    Attempt,
    Step,
    Outcome,
    Tick,
    ConfidenceEdge,
    ConfidenceGeneOutcome,
    ExternalCandidate,
    Feedback,
    Note,
    Recall,
    Fetched,
    DreamBegin,
    DreamEnd,
    Constraint,
    Mark,
    Node,
    ChildStep,
    Link,
    Merge,
    Prune,
    Retraction,
    Lifecycle,
)
KINDS: dict[str, type[Event]] = {str(t.__struct_config__.tag): t for t in EVENT_TYPES}
