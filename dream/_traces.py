"""Traces as dreams see them: one attempt with its steps, outcome and provenance.

Read from the traces projection (:meth:`evolog.projections._api.Projections.traces`), which ties
steps and outcomes to the newest attempt with their action id. A trace is keyed by its
attempt's event id. Only a trace with an outcome is complete, and only complete traces are
dreamed: an attempt still running has no lesson yet.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
from evolog.eventlog import EventLog

__all__ = ["Trace", "TraceStep", "load_traces"]

SUCCESS_STATUSES = frozenset({"success", "succeeded", "ok", "passed"})
FAILURE_STATUSES = frozenset({"failed", "failure", "error", "fail"})


class TraceStep(msgspec.Struct, frozen=True):
    """One step of a trace, as the agent reported it."""

    index: int
    reasoning: str = ""
    action: str = ""
    result: str = ""
    tool: str | None = None
    ok: bool | None = None
    error: str | None = None

    @property
    def failed(self) -> bool:
        """True when the step reported a failure (``ok`` false or an error message)."""
        return self.ok is False or bool(self.error)


class Trace(msgspec.Struct, frozen=True):
    """An attempt and everything recorded about it; ``seq`` is its outcome's position."""

    id: str
    task: str = ""
    signals: tuple[str, ...] = ()
    error_signature: str | None = None
    hypothesis: str = ""
    gene: str | None = None
    steps: tuple[TraceStep, ...] = ()
    status: str = ""
    score: float | None = None
    note: str | None = None
    decided_by: tuple[str, ...] = ()
    supported_by: tuple[str, ...] = ()
    source: str = "real"
    agent: str = ""
    session: str | None = None
    seq: int = 0
    action_id: str = ""
    attempt_seq: int = 0

    @property
    def complete(self) -> bool:
        """True once an outcome was recorded."""
        return bool(self.status)

    @property
    def succeeded(self) -> bool:
        """True for a successful outcome."""
        return self.status.lower() in SUCCESS_STATUSES

    @property
    def failed(self) -> bool:
        """True for a failed outcome."""
        return self.status.lower() in FAILURE_STATUSES

    @property
    def goal(self) -> str:
        """What the attempt was for: its task, else its hypothesis, signals or gene."""
        if self.task.strip():
            return self.task.strip()
        if self.hypothesis.strip():
            return self.hypothesis.strip()
        if self.signals:
            return "handle " + ", ".join(self.signals)
        return f"apply {self.gene}" if self.gene else ""


def load_traces(
    log: EventLog,
    *,
    as_of: int | None = None,
    complete_only: bool = True,
    after_seq: int = 0,
    action_ids: Sequence[str] | None = None,
) -> dict[str, Trace]:
    """The log's traces (as of a seq) from the traces projection, keyed by attempt id;
    only attempts after ``after_seq`` (and with one of ``action_ids``) when given."""
    from evolog.projections import (
        Projections,  # DuckDB: imported only when dreaming
        py_rows,  # times past 9999 would not convert
    )

    table = Projections(log).traces(as_of=as_of, after_seq=after_seq, action_ids=action_ids)
    traces = (_from_row(row) for row in py_rows(table))
    return {t.id: t for t in traces if t.complete or not complete_only}


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _from_row(row: dict[str, Any]) -> Trace:
    outcome = row.get("outcome") or {}
    hypothesis = row.get("hypothesis") or {}
    steps = tuple(
        TraceStep(
            index=int(s["index"]),
            reasoning=_text(s.get("reasoning")),
            action=_text(s.get("action")),
            result=_text(s.get("result")),
            tool=s.get("tool"),
            ok=s.get("ok"),
            error=s.get("error"),
        )
        for s in row.get("steps") or ()
    )
    return Trace(
        id=row["attempt_id"],
        task=_text(row.get("task")),
        signals=tuple(row.get("signals") or ()),
        error_signature=row.get("error_signature"),
        hypothesis=_text(hypothesis.get("text")),
        gene=row.get("gene"),
        steps=steps,
        status=_text(row.get("status")),
        score=outcome.get("score"),
        note=outcome.get("note"),
        decided_by=tuple(row.get("decided_by") or ()),
        supported_by=tuple(row.get("supported_by") or ()),
        # The projection may not carry the source yet; "real" is the log's default.
        source=_text(row.get("source")) or "real",
        agent=_text(row.get("agent")),
        session=row.get("session"),
        seq=int(outcome.get("seq") or row["seq"]),
        action_id=_text(row.get("action_id")),
        attempt_seq=int(row["seq"]),
    )
