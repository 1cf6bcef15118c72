"""Reflection at ``Stop``: a lesson from an attempt that overcame a failure (opt-in).

When ``hook.reflect_lessons`` is set in the store's ``memory.json`` and an attempt ends
``success`` after one of its tools failed and a later call of the same tool succeeded, the
hook writes a lesson (``note`` with ``lesson`` set, author ``reflection``) saying what
failed and what worked, in the same batch as the outcome. It is derived from the trace
alone, the same trace giving the same text and ids (no model, no clock):

* what failed is the failed call's action (the tool and its main argument, as the content
  policy keeps it) and its error *signature* (:func:`projections.memory.error_signature`:
  type, exit code, status, first line), never the error's prose nor any tool output: a
  lesson is read back as advice, and tool text is not the agent's to give;
* what worked is the first later successful call of that tool on the same thing (a word of
  its input in common: one tool runs every shell command);
* the topic is the attempt's prompt (as the content policy kept it), so a recall for a
  related task finds the lesson.

The lesson is written as any ``remember(kind="lesson")`` is: deduplicated against the
branch's lessons (a near-copy supersedes one, keeping its credit) and, when new, born in the
survival ledger, where the outcomes of the attempts it is injected into credit it and
failures bury it. Off by default: a person opts in to the agent writing its own advice.
"""

from __future__ import annotations

import re
from typing import Any, Final

import msgspec

from evolog.eventlog import Event, EventLog, Lifecycle

from ._credit import SessionState

__all__ = ["AUTHOR", "MAX_OVERCOME", "lesson_text", "note_call", "reflect"]

AUTHOR: Final = "reflection"
MAX_OVERCOME: Final = 4
"""Failures overcome an attempt keeps (the first ones: they are what the lesson is about)."""
_ACTION: Final = 160
_ERROR: Final = 120
_TASK: Final = 200
_FAILING: Final = 16
_WORD: Final = re.compile(r"[\w./:-]{2,}")


def note_call(st: SessionState, tool: str, action: str, error: str | None) -> None:
    """Keep what a call says about failures overcome: a failed call, and the first later
    success of the same tool on the same thing (which closes it)."""
    if error is not None:
        if len(st.failing) < _FAILING:
            st.failing.append([tool, action[: 2 * _ACTION], error[: 2 * _ERROR]])
        return
    for n, (was, failed, err) in enumerate(st.failing):
        if was == tool and _same_target(tool, failed, action):
            del st.failing[n]
            if len(st.overcome) < MAX_OVERCOME:
                st.overcome.append([tool, failed, err, action[: 2 * _ACTION]])
            return


def _same_target(tool: str, failed: str, action: str) -> bool:
    """Whether a call is about what a failed one was: a word of its input in common (one
    tool runs every shell command, so ``ls`` after a failed ``pytest`` fixes nothing)."""
    a, b = _words(tool, failed), _words(tool, action)
    return bool(a & b) if a and b else a == b


def _words(tool: str, action: str) -> set[str]:
    return set(_WORD.findall(action.lower())) - {tool.lower()}


def lesson_text(task: str, overcome: list[list[str]]) -> str:
    """The lesson's text: the task, then each failure and what worked after it."""
    from evolog.projections.memory import error_signature, safe_text

    parts = [
        f"after {safe_text(failed, _ACTION)} failed ({error_signature(error, _ERROR)}), "
        f"{safe_text(fixed, _ACTION)} worked"
        for _tool, failed, error, fixed in overcome
    ]
    head = safe_text(task, _TASK)
    return (f"{head}: " if head else "") + "; ".join(parts) + "."


def reflect(
    log: EventLog, st: SessionState, action_id: str, env: dict[str, Any], seconds: float
) -> list[Event]:
    """The lesson (and its ledger birth) for an attempt that ended ``success`` with
    ``st.overcome`` set, when the store opted in; nothing otherwise or on any problem."""
    if not st.overcome or not action_id:
        return []
    from evolog.projections.memory import LESSON_BRANCH, ItemIndex, load_config, write_note

    from ._recall import bounded

    try:
        with bounded(seconds):
            cfg = load_config(log.path)
            if not cfg.reflect_lessons:
                return []
            index = ItemIndex(log.paths)
            with log.snapshot() as snap:
                fold = index.refresh(snap, log)
                dead = index.dead_entries(log, snap) if fold.state.items else frozenset()
            text = lesson_text(st.task, st.overcome)
            note, superseded = write_note(
                fold, LESSON_BRANCH, text, ["reflection"], cfg, dead=dead, lesson=True,
                author=AUTHOR, **env,
            )  # fmt: skip
    except Exception:
        return []
    # Named after the attempt: a Stop delivered twice writes one lesson.
    note = msgspec.structs.replace(note, id=f"lesson:{action_id}")
    if superseded is not None:
        return [note]
    birth = Lifecycle(id=f"birth:{note.id}", entry=note.id, op="birth", **env)
    return [note, birth]
