"""What a Claude Code turn is credited as, and how an MCP report joins the hook's attempt.

Credit rules (the hook closes each attempt once, with the evidence the session showed):

* ``success`` needs evidence: at least one tool call that ran and succeeded, the last one
  included, and no call denied or left unrun;
* a call denied (``PermissionDenied``) or never run (a ``PreToolUse`` with no
  ``PostToolUse``/``PostToolUseFailure`` by the turn's end: Claude Code's permission prompt
  refused it, or the turn was cut) makes the turn ``denied``: not credited, not debited;
* only failed calls, or a failed last call: ``failed`` (debited);
* an interrupted call (``is_interrupt``) or a new prompt before ``Stop``: ``interrupted``;
  ``StopFailure`` (an API error ended the turn): ``api_error``; ``SessionEnd`` with the
  attempt still open: ``abandoned``; none of these is credited;
* a turn in which no tool ran (a text answer): ``unknown``, never credited: a reply in
  words is no evidence that the task was done.

An MCP ``record_outcome`` for an attempt the hook holds open (named by its action id, which
the injected block prints, or the only open attempt of the server's working directory) does
not append an outcome of its own: it leaves its report in the session's state and the hook
writes the one outcome at the turn's end. The report can only lower the evidence's verdict
(a model saying "failed" after passing tools), never raise it; the entries it names are
credited with the injected ones. A report for a hook attempt already closed gets the
closed outcome's id, so the log keeps the first one (one task, one outcome).
"""

from __future__ import annotations

import os
from typing import Any, Final

import msgspec

from evolog.eventlog import Constraint, Event, Outcome, Step

__all__ = [
    "HOOK_PREFIX",
    "MAX_SIGNALS",
    "NEVER_RAN",
    "Report",
    "SessionState",
    "close_attempt",
    "deny",
    "join_report",
    "keep_pending",
    "observe",
    "open_attempt",
    "outcome_id",
    "reset_evidence",
    "verdict",
    "with_report",
]

HOOK_PREFIX: Final = "cc-"
"""How the hook's action ids begin (``cc-<session>-<turn>-<µs>``)."""
MAX_SIGNALS: Final = 16
"""Signals a session carries into its next attempt (the newest kept)."""
MAX_SIGNAL_CHARS: Final = 200
"""Characters of one observed signal kept (an ``errsig:`` carries an error's first line)."""
MAX_NOTE: Final = 2000
"""Characters of an MCP report's note kept."""
MAX_NAMED: Final = 64
"""Entries an MCP report may name in ``decided_by`` and in ``supported_by``."""
NEVER_RAN: Final = "never ran: refused at the permission prompt, or the turn was cut off"
_MAX_PENDING: Final = 32


class Report(msgspec.Struct, frozen=True):
    """What an MCP ``record_outcome`` said about a hook attempt."""

    status: str
    score: float | None = None
    note: str | None = None
    decided_by: list[str] = []
    supported_by: list[str] = []
    signals: list[str] = []
    gene: str | None = None


class SessionState(msgspec.Struct):
    """One Claude Code session's open attempt and what was observed in it."""

    action_id: str | None = None
    turn: int = 0
    steps: int = 0
    last_failed: bool = False
    started: dict[str, int] = {}
    decided: list[str] = []
    supported: list[str] = []
    session: str = ""
    cwd: str = ""
    names: dict[str, str] = {}  # tool_use_id -> tool, for calls started and not yet ended
    ran_ok: int = 0
    ran_failed: int = 0
    denied: list[str] = []
    interrupted: bool = False
    seen: list[str] = []  # signals observed in the session (newest last, bounded)
    carried: list[str] = []  # the signals the open attempt was opened with
    observed: list[str] = []  # the signals observed during the open attempt
    pending: list[Constraint] = []  # constraints kept only if the attempt fails
    report: Report | None = None
    task: str = ""  # the prompt as the content policy keeps it (a reflected lesson's topic)
    failing: list[list[str]] = []  # [tool, action, error] of each failed call (bounded)
    overcome: list[list[str]] = []  # [tool, failed action, error, action that then worked]


def outcome_id(action_id: str) -> str:
    """The id of the one outcome of a hook attempt (a second append is a duplicate)."""
    return f"{action_id}-outcome"


def verdict(st: SessionState, never_ran: list[str]) -> tuple[str, str]:
    """The status of the open attempt from its evidence (see the module docstring)."""
    if st.interrupted:
        return "interrupted", "a tool call was interrupted"
    refused = [*st.denied, *never_ran]
    if refused:
        names = ", ".join(dict.fromkeys(refused))
        return "denied", f"tool calls denied or never run: {names}"
    if st.ran_ok == 0 and st.ran_failed == 0:
        return "unknown", "no tool ran: a text-only turn is no evidence of success"
    if st.ran_ok == 0:
        return "failed", f"every tool call failed ({st.ran_failed})"
    if st.last_failed:
        return "failed", "the last tool call failed"
    return "success", f"{st.ran_ok} tool call(s) ran and succeeded, the last one included"


def with_report(status: str, note: str, report: Report | None) -> tuple[str, str]:
    """The evidence's verdict, lowered by the model's report if it says worse."""
    if report is None:
        return status, note
    said = f"; reported over MCP: {report.status}" + (f" ({report.note})" if report.note else "")
    if status == "success" and report.status != "success":
        return report.status, f"{note}{said}"
    if status == "unknown" and report.status in ("failed", "partial"):
        return report.status, f"{note}{said}"
    return status, f"{note}{said}"


def join_report(root: str, action_id: str, cwd: str, report: Report) -> str | None:
    """Leave ``report`` with the open hook attempt it is about; return that attempt's
    action id, or None when no open attempt matches (the caller records it itself).

    With ``action_id`` the attempt of that id; without one, the only open attempt whose
    session runs in ``cwd`` (two sessions there: ambiguous, nothing is joined)."""
    from ._files import locked_state

    matches = [path for path, _ in _open_states(root, action_id, cwd)]
    if len(matches) != 1:
        return None
    with locked_state(matches[0], SessionState) as held:
        st = held.state
        # Read again under the lock: the attempt may have closed since.
        if not st.action_id or (action_id and st.action_id != action_id):
            held.remove = st == SessionState()  # do not leave behind a file it created
            return None
        st.report = _bounded(report)
        return st.action_id


def _open_states(root: str, action_id: str, cwd: str) -> list[tuple[str, str]]:
    """(state file, action id) of the open hook attempts of ``action_id``, or without one,
    of the sessions running in ``cwd``."""
    from ._files import state_dir

    directory = state_dir(root)
    try:
        names = sorted(n for n in os.listdir(directory) if n.endswith(".json"))
    except OSError:
        return []
    here = os.path.realpath(cwd) if cwd else ""
    matches: list[tuple[str, str]] = []
    for name in names:
        path = os.path.join(directory, name)
        try:
            with open(path, "rb") as f:
                st = msgspec.json.decode(f.read(), type=SessionState)
        except (OSError, msgspec.MsgspecError):
            continue
        if not st.action_id:
            continue
        if st.action_id == action_id if action_id else _same_dir(st.cwd, here):
            matches.append((path, st.action_id))
    return matches


def open_attempt(root: str, cwd: str) -> str:
    """The action id of the only open hook attempt whose session runs in ``cwd`` ("" when
    there is none, or more than one): the attempt an MCP call made from there serves."""
    found = _open_states(root, "", cwd)
    return found[0][1] if len(found) == 1 else ""


def _bounded(report: Report) -> Report:
    """The report cut to what a state file holds (a state past its cap reads as lost)."""
    return msgspec.structs.replace(
        report,
        note=report.note[:MAX_NOTE] if report.note else report.note,
        decided_by=report.decided_by[:MAX_NAMED],
        supported_by=report.supported_by[:MAX_NAMED],
        signals=[s[:MAX_SIGNAL_CHARS] for s in report.signals[: 4 * MAX_SIGNALS]],
    )


def observe(st: SessionState, signals: list[str]) -> None:
    """Note signals observed during the open attempt (and in the session)."""
    for sig in (s[:MAX_SIGNAL_CHARS] for s in signals):
        if sig not in st.observed:
            st.observed.append(sig)
        if sig in st.seen:
            st.seen.remove(sig)
        st.seen.append(sig)
    del st.observed[: max(len(st.observed) - 4 * MAX_SIGNALS, 0)]
    del st.seen[: max(len(st.seen) - MAX_SIGNALS, 0)]


def keep_pending(st: SessionState, constraints: list[Constraint]) -> None:
    """Constraints of a failed call, written only if the attempt ends ``failed``: a failing
    check before the fix (a deliberate reproduction) is no lesson against the strategy."""
    room = _MAX_PENDING - len(st.pending)
    st.pending.extend(constraints[: max(room, 0)])


def deny(st: SessionState, tool: str) -> None:
    """Note a refused call (at most a few names are kept: they only feed the note)."""
    if tool not in st.denied and len(st.denied) < _MAX_PENDING:
        st.denied.append(tool)


def close_attempt(
    st: SessionState, status: str, note: str, env: dict[str, Any], *, evidence: bool = False
) -> list[Event]:
    """The events that close the open attempt: steps for calls that never ran (with
    ``evidence``), the constraints of a failed attempt, and its one outcome."""
    if not st.action_id:
        return []
    action_id = st.action_id
    out: list[Event] = []
    if evidence:
        never: list[str] = []
        for tool_id in sorted(st.started, key=st.started.__getitem__):
            tool = st.names.get(tool_id, tool_id)
            never.append(tool)
            out.append(
                Step(
                    id=f"{action_id}-{tool_id}",
                    action_id=action_id,
                    index=st.steps,
                    tool=tool,
                    action=tool,
                    ok=False,
                    error=NEVER_RAN,
                    **env,
                )
            )
            st.steps += 1
        status, note = verdict(st, never)
    status, note = with_report(status, note, st.report)
    report = st.report or Report(status)
    decided = list(dict.fromkeys([*st.decided, *report.decided_by]))
    named = dict.fromkeys([*st.supported, *report.supported_by])
    supported = [i for i in named if i not in decided]
    # The entries injected for this attempt are credited: +1 task done, -1 task failed.
    delta = {"success": 1.0, "failed": -1.0}.get(status) if decided or supported else None
    score = report.score if st.report is not None and report.score is not None else None
    if score is None:
        score = {"success": 0.6, "failed": 0.2}.get(status)
    if status == "failed":
        out.extend(st.pending)
    out.append(
        Outcome(
            id=outcome_id(action_id),
            action_id=action_id,
            status=status,
            score=score,
            note=note,
            signals=list(dict.fromkeys([*st.carried, *st.observed, *report.signals])),
            decided_by=decided,
            supported_by=supported,
            gene=report.gene or (decided[0] if decided else None),
            delta=delta,
            **env,
        )
    )
    reset_evidence(st)
    return out


def reset_evidence(st: SessionState) -> None:
    """Forget the open attempt and its evidence (the session's signals stay)."""
    st.action_id = None
    st.steps, st.last_failed, st.interrupted = 0, False, False
    st.ran_ok = st.ran_failed = 0
    st.started, st.names = {}, {}
    st.decided, st.supported, st.denied = [], [], []
    st.carried, st.observed, st.pending = [], [], []
    st.report = None
    st.task, st.failing, st.overcome = "", [], []


def _same_dir(recorded: str, here: str) -> bool:
    # The payload's cwd may name the directory through a symlink the server's does not.
    return bool(recorded and here) and os.path.realpath(recorded) == here
