"""What an event must hold beyond its field types: the time range, required fields, statuses.

Checked in the prepare step, so a Python append, a JSON argument, NDJSON and the flags of
``evolog append`` all refuse the same events with the same one-line error.

* ``ts`` lies in ``0 .. TS_MAX`` (0 means "now, at append"). ``TS_MAX`` is the last
  microsecond of year 9999, the last time a Python ``datetime`` (and so every time the
  projections show) can hold; a later one once made every query fail with OverflowError.
* An ``outcome`` says what it is about: the attempt it ends (``action_id``), or, in
  evolver's style, the ``gene`` and ``signals`` (or ``key``) it is scored under, or the
  entries it credits (``decided_by``/``supported_by``). And it says how it ended: ``status``
  is one of :data:`STATUSES`, or empty when the outcome carries a measured ``delta`` instead
  of a verdict (the survival ledger's outcomes).
* A ``step`` has an ``index`` >= 0.
"""

from __future__ import annotations

from .._errors import InvalidEventError
from ._events import Event, Outcome, Step

#: The last event time the log accepts: 9999-12-31T23:59:59.999999Z, in microseconds.
TS_MAX = 253_402_300_799_999_999

#: The statuses an outcome may have. ``success`` and ``failed`` are verdicts (edges and advice
#: count them); ``partial``, ``interrupted`` (a new task came before the end), ``abandoned``
#: (the session ended first), ``denied`` (a tool call was refused and never ran) and
#: ``api_error`` (the agent's model API ended the turn) end an attempt without one;
#: ``measured`` says the result is the ``delta``; ``unknown`` records that no verdict was
#: given (an imported evolver outcome whose status is none of these is stored as ``unknown``,
#: its original text kept in ``evolver_patch``).
STATUSES = frozenset(
    {"abandoned", "api_error", "denied", "failed", "interrupted", "measured", "partial",
     "success", "unknown"}
)  # fmt: skip

#: The kinds with rules of their own (a set lookup is all other kinds pay).
RULED = frozenset({Outcome, Step})


def ts_problem(ts: int) -> str | None:
    """Why ``ts`` is not an event time the log accepts, or None."""
    if 0 <= ts <= TS_MAX:
        return None
    return f"expected microseconds from 0 to {TS_MAX} (1970-01-01 to 9999-12-31 UTC); got {ts}"


def check_rules(event: Event, where: str) -> None:
    """Raise InvalidEventError when ``event`` (of a :data:`RULED` kind) breaks its rules."""
    if type(event) is Outcome:
        if not (
            event.action_id
            or event.gene
            or event.signals
            or event.key
            or event.decided_by
            or event.supported_by
        ):
            _fail("outcome", "action_id", _NO_SUBJECT, where)
        if event.status not in STATUSES and (event.status or event.delta is None):
            allowed = ", ".join(sorted(STATUSES))
            got = repr(event.status) if event.status else "none"
            extra = " (or none with a measured delta)" if not event.status else ""
            _fail("outcome", "status", f"expected one of {allowed}{extra}; got {got}", where)
    elif type(event) is Step and event.index < 0:
        _fail("step", "index", f"expected an index >= 0; got {event.index}", where)


_NO_SUBJECT = (
    "expected what the outcome is about: the attempt it ends (action_id), or the gene, "
    "signals or entries (decided_by, supported_by) it credits; got none of them"
)


def _fail(kind: str, field: str, detail: str, where: str) -> None:
    raise InvalidEventError(f"{kind} event, field '{field}': {detail}", where=where, field=field)
