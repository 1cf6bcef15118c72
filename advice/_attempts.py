"""Attempts by action id: which are open, and closing one with its outcome exactly once.

Several agents can have attempts open at the same time; each is closed by naming its action
id (evolver keeps a single ``last_action`` and silently loses or double-counts outcomes,
docs/reference/evolver-memory-graph.md §9). The outcome's event id is
``outcome:<action_id>``, the log's idempotency key: if
two processes close the same attempt at once, the log stores one outcome and the other
caller gets :class:`AttemptAlreadyClosedError` — an attempt can never be counted twice.
An outcome for an action id the log has no attempt for is :class:`UnknownAttemptError`.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

from evolog.eventlog import EventLog, Outcome

from ._engine import AdviceEngine, parse_now
from ._errors import AttemptAlreadyClosedError, InvalidInputError, UnknownAttemptError
from ._state import AttemptInfo

OUTCOME_ID_PREFIX = "outcome:"
_MAX_ID = 256


def outcome_id(action_id: str) -> str:
    """The idempotency key of the outcome that closes ``action_id``."""
    eid = OUTCOME_ID_PREFIX + action_id
    if len(eid) <= _MAX_ID:
        return eid
    digest = hashlib.blake2b(action_id.encode("utf-8", "surrogatepass"), digest_size=20)
    return f"{OUTCOME_ID_PREFIX}#{digest.hexdigest()}"


def _engine(source: EventLog | AdviceEngine) -> AdviceEngine:
    return source if isinstance(source, AdviceEngine) else AdviceEngine(source)


def open_attempts(source: EventLog | AdviceEngine, as_of: int | None = None) -> list[AttemptInfo]:
    """Attempts without an outcome (as of seq ``as_of``), oldest first."""
    state = _engine(source).state(as_of)
    return sorted(state.open.values(), key=lambda a: a.seq)


def _first_outcome_seq(log: EventLog, action_id: str) -> int | None:
    """The seq of the first outcome naming ``action_id`` anywhere in the log (slow path)."""
    import pyarrow.compute as pc

    for batch in log.replay_arrow(kinds=["outcome"], columns=["seq", "action_id"]):
        hits = batch.filter(pc.equal(batch["action_id"], action_id))
        if hits.num_rows:
            return int(hits["seq"][0].as_py())
    return None


def _check_args(action_id: object, status: object, score: object) -> None:
    if not isinstance(action_id, str) or not action_id:
        raise InvalidInputError(f"action_id: expected a non-empty string; got {action_id!r}")
    if not isinstance(status, str) or not status:
        raise InvalidInputError(
            f"status: expected a non-empty string such as 'success' or 'failed'; got {status!r}"
        )
    if score is not None and (
        isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score)
    ):
        raise InvalidInputError(f"score: expected a finite number or None; got {score!r}")


def close_attempt(
    source: EventLog | AdviceEngine,
    action_id: str,
    status: str,
    *,
    score: float | None = None,
    note: str | None = None,
    current_signals: Sequence[str] | None = None,
    ts: object = None,
    agent: str | None = None,
    session: str | None = None,
    decided_by: Sequence[str] = (),
    supported_by: Sequence[str] = (),
    delta: float | None = None,
    observed: Mapping[str, Any] | None = None,
) -> int:
    """Append the outcome of the open attempt ``action_id``; return its seq.

    The outcome copies the attempt's signals, key and gene, so it stands on its own.
    Raises :class:`UnknownAttemptError` if there is no such attempt, and
    :class:`AttemptAlreadyClosedError` if it already has an outcome (including one
    appended by a concurrent caller between the check and the append).
    """
    _check_args(action_id, status, score)
    engine = _engine(source)
    info = engine.state().open.get(action_id)
    if info is None:
        _raise_closed_or_unknown(engine, action_id)
    event = Outcome(
        id=outcome_id(action_id),
        ts=0 if ts is None else parse_now(ts),
        agent=info.agent if agent is None else agent,
        session=info.session if session is None else session,
        action_id=action_id,
        status=status,
        score=None if score is None else float(score),
        note=note,
        signals=list(info.signals),
        key=info.key,
        current_signals=None if current_signals is None else list(current_signals),
        gene=info.gene,
        gene_category=info.gene_category,
        decided_by=list(decided_by),
        supported_by=list(supported_by),
        delta=delta,
        observed=None if observed is None else dict(observed),
    )
    receipt = engine.log.append_receipts([event])[0]
    if receipt.duplicate:
        raise AttemptAlreadyClosedError(
            f"attempt {action_id!r} was closed concurrently (outcome seq {receipt.seq})",
            action_id=action_id,
            outcome_seq=receipt.seq,
        )
    return receipt.seq


def _raise_closed_or_unknown(engine: AdviceEngine, action_id: str) -> NoReturn:
    closed = engine.state().closed.get(action_id)
    seq = closed.outcome_seq if closed is not None else _first_outcome_seq(engine.log, action_id)
    if seq is not None:
        raise AttemptAlreadyClosedError(
            f"attempt {action_id!r} is already closed (outcome seq {seq})",
            action_id=action_id,
            outcome_seq=seq,
        )
    raise UnknownAttemptError(
        f"action_id {action_id!r}: expected an open attempt; the log has no attempt with it",
        action_id=action_id,
    )
