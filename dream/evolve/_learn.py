"""What a trace teaches, in words, and how a duplicate is absorbed: shared by ReasoningBank
and ReMe."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import msgspec
from evolog.projections.memory import error_signature, safe_text

if TYPE_CHECKING:
    from .._traces import Trace
    from ._items import EvolveItem

__all__ = ["absorb", "actions", "derived_id", "failure", "goal", "learnable"]

MAX_TITLE = 80


def derived_id(prefix: str, trace_id: str) -> str:
    """A stable item id for what ``prefix`` learnt from a trace (a rerun finds it known)."""
    return f"{prefix}-{hashlib.blake2b(trace_id.encode(), digest_size=8).hexdigest()}"


def goal(trace: Trace) -> str:
    text = " ".join(trace.goal.split())
    return text if len(text) <= MAX_TITLE else text[: MAX_TITLE - 1].rstrip() + "…"


def actions(trace: Trace) -> list[str]:
    """The steps that worked, in order (what a success pattern repeats)."""
    out = []
    for step in trace.steps:
        text = safe_text(step.action or step.reasoning, 400)
        if text and not step.failed and text not in out:
            out.append(text)
    return out


def failure(trace: Trace) -> str:
    """What went wrong: the failed steps with their errors, else the outcome's note."""
    parts = []
    for step in trace.steps:
        if step.failed:
            what = safe_text(step.action or step.reasoning or step.tool or "a step", 400)
            # An error's prose is the tool's (a fetched page's, say): only its signature
            # goes into a lesson.
            err = step.error or step.result or ""
            parts.append(f"{what} ({error_signature(err, 200)})" if err.strip() else what)
    if not parts and trace.note:
        parts.append(safe_text(trace.note, 400))
    if not parts and trace.error_signature:
        parts.append(error_signature(trace.error_signature, 200))
    return "; ".join(parts) or "the attempt failed"


def learnable(trace: Trace) -> bool:
    """A finished attempt with a verdict and something to say about its goal."""
    return (trace.succeeded or trace.failed) and bool(trace.goal.strip())


def absorb(pool: Sequence[EvolveItem], keeper: Mapping[int, int]) -> list[EvolveItem]:
    """``pool`` without its duplicates: ``keeper`` maps the position of each dropped item to
    the position of the item that stays, which lists the dropped one (and what the dropped one
    had absorbed) in its ``sources``, in ``keeper``'s order."""
    absorbed: dict[int, list[str]] = {}
    for dropped, kept in keeper.items():
        absorbed.setdefault(kept, []).extend([pool[dropped].id, *pool[dropped].sources])
    out = []
    for k, item in enumerate(pool):
        if k in keeper:
            continue
        if k in absorbed:
            extra = [s for s in absorbed[k] if s not in item.sources]
            item = msgspec.structs.replace(item, sources=(*item.sources, *extra))
        out.append(item)
    return out
