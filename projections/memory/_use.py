"""Credit follows use: how a ``fetched`` event changes what an outcome credits.

The injected block is an index: one line per item, and the agent fetches the details of
the ones it decides apply (:class:`~evolog.eventlog.Fetched`). An outcome of an attempt in
which something was fetched credits:

* each item fetched during the attempt with the outcome's verdict (success helpful, failed
  harmful, partial neutral), named by the outcome or not: the agent read it to act on it;
* each item the outcome names that was *not* fetched with a neutral verdict: it was shown
  and passed over, which is evidence that it was considered, not that it helped or misled.

An attempt with no fetch is credited as before (every named item gets the verdict): with
no sign of which lines were used, the block as a whole was. This keeps agents without the
fetch tool (and logs written before it) credited exactly as they were.

Only fetches appended before the attempt's outcome count: one after it cannot change the
verdicts already given (a later outcome of the same attempt re-reads them, as it replaces
the earlier one's). Everything here is a function of the events in log order, so a fold
rebuilt from the log equals one kept incrementally.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Final

from evolog.eventlog import Fetched, Outcome

__all__ = ["NEUTRAL", "credits", "note_fetch"]

NEUTRAL: Final = 2
"""The neutral verdict's index in the ACE counters (helpful, harmful, neutral)."""
_MAX_PER_ATTEMPT: Final = 256
"""Items kept as fetched per attempt: a runaway client cannot grow the fold without end."""


def note_fetch(fetched: MutableMapping[str, list[str]], event: Fetched) -> None:
    """Remember the items ``event`` fetched for its attempt (none without an attempt)."""
    if not event.action_id or not event.items:
        return
    held = fetched.get(event.action_id)
    got = list(held) if held is not None else []
    got.extend(i for i in dict.fromkeys(event.items) if i and i not in got)
    fetched[event.action_id] = got[:_MAX_PER_ATTEMPT]


def credits(
    fetched: MutableMapping[str, list[str]], event: Outcome, verdict: int
) -> list[tuple[str, int]]:
    """``(ref, verdict)`` for each entry the outcome credits (see the module docstring)."""
    refs = list(dict.fromkeys([*event.decided_by, *event.supported_by]))
    used = fetched.get(event.action_id) if event.action_id else None
    if not used:
        # The ledger credits the gene when nothing else is named; so does ACE.
        return [(r, verdict) for r in refs or ([event.gene] if event.gene else [])]
    out = [(r, verdict if r in used else NEUTRAL) for r in refs]
    out.extend((r, verdict) for r in used if r not in refs)
    return out
