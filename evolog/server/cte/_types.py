"""Bodies of the evolving-memory compatible routes (``/cte``), and how a trace becomes events.

evolving-memory's enums are checked at decoding, so a bad value is a 422 naming the field
(evolving-memory answers 500). A trace is one attempt (its goal the task), one step per
action and an outcome, appended atomically; evolving-memory's own fields without a home in
the event schema (hierarchy level, confidence, source, tags) ride in the attempt's
``observed`` under ``cte``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

CteOutcome = Literal["success", "failure", "partial", "aborted", "unknown"]
CteSource = Literal["real_world", "sim_3d", "sim_2d", "dream_text", "agent", "unknown_source"]
STATUS = {
    "success": "success", "failure": "failed", "partial": "partial",
    "aborted": "abandoned", "unknown": "unknown",
}  # fmt: skip
OUTCOME = {v: k for k, v in STATUS.items()}
#: The agent of the events a posted trace becomes.
CTE_AGENT = "cte"
SOURCE = {
    "real_world": "real", "sim_3d": "simulated", "sim_2d": "simulated",
    "dream_text": "dreamed", "agent": "real", "unknown_source": "real",
}  # fmt: skip


class CteAction(msgspec.Struct):
    reasoning: str = ""
    action_payload: str | None = None
    actionPayload: str | None = None
    result: str = ""

    @property
    def payload(self) -> str:
        return self.action_payload if self.action_payload is not None else self.actionPayload or ""


class CteTrace(msgspec.Struct):
    goal: Annotated[str, msgspec.Meta(min_length=1)]
    hierarchy_level: Annotated[int, msgspec.Meta(ge=1, le=4)] = 3
    outcome: CteOutcome = "unknown"
    confidence: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = 0.0
    source: CteSource = "unknown_source"
    actions: list[CteAction] = []
    tags: list[str] = []


class CteDream(msgspec.Struct):
    #: Dream only this domain's traces; every undreamed trace when absent.
    domain: str | None = None


class CteRoute(msgspec.Struct):
    query: Annotated[str, msgspec.Meta(min_length=1)]
    top_k: Annotated[int, msgspec.Meta(ge=1, le=100)] = 5


class CteTraceResponse(msgspec.Struct):
    trace_id: str
    session_id: str


def trace_events(trace: CteTrace, trace_id: str, session_id: str) -> list[Any]:
    """The events of one posted trace."""
    from evolog.eventlog import Attempt, Outcome, Step

    source = SOURCE[trace.source]
    common: dict[str, Any] = {"session": session_id, "agent": CTE_AGENT, "source": source}
    cte = {
        "hierarchy_level": trace.hierarchy_level, "confidence": trace.confidence,
        "source": trace.source, "tags": list(trace.tags), "outcome": trace.outcome,
    }  # fmt: skip
    events: list[Any] = [
        Attempt(id=trace_id, action_id=trace_id, task=trace.goal, observed={"cte": cte}, **common)
    ]
    for i, action in enumerate(trace.actions):
        events.append(
            Step(
                id=f"{trace_id}:step:{i}", action_id=trace_id, index=i,
                reasoning=action.reasoning, action=action.payload, result=action.result,
                **common,
            )
        )  # fmt: skip
    events.append(
        Outcome(
            id=f"{trace_id}:outcome", action_id=trace_id, status=STATUS[trace.outcome],
            score=trace.confidence, **common,
        )
    )  # fmt: skip
    return events
