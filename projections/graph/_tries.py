"""How a strategy node's successes and failures are counted: each try once.

A try is an attempt (a trace): a node is credited with the traces it was dreamed from (its
``traces``) and with the outcomes whose ``decided_by``/``supported_by`` name it. An outcome
that ends an attempt credits that attempt, which counts by its newest outcome, so an outcome
that both names a node and ends one of its traces counts once, and a re-graded attempt once,
as its last grade (the traces projection's status). An outcome belongs to the newest attempt
with its action id before it (the traces projection's rule); one that ends no attempt the
fold has seen is a try of its own.

Counts are not stored, only what they are counted from, so the same log gives the same
counts whether an outcome comes before or after the dream that names its attempt, and a
merged group counts each of its tries once however many members it reaches them through.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from typing import Final

from evolog.eventlog import Outcome

__all__ = ["Credit", "add_credit", "credit_of", "tally"]

_WON: Final = frozenset({"success", "succeeded", "ok", "passed"})
_LOST: Final = frozenset({"failed", "failure", "error", "fail"})

Credit = str | int
"""One try: an attempt id (counted by the attempt's newest outcome), or, for an outcome that
ends no known attempt, its seq (unique in the log), negated for a failure."""


def credit_of(
    e: Outcome, actions: Mapping[str, str], settled: MutableMapping[str, int]
) -> Credit | None:
    """The try an outcome is about, after recording it as its attempt's newest verdict (1
    success, 0 failure, -1 neither); None for an outcome of no attempt that is neither."""
    status = e.status.lower()
    verdict = 1 if status in _WON else 0 if status in _LOST else -1
    attempt = actions.get(e.action_id) if e.action_id else None
    if attempt is not None:
        settled[attempt] = verdict
        return attempt
    if verdict < 0:
        return None
    return e.seq if verdict else -e.seq


def add_credit(credits: MutableMapping[str, Sequence[Credit]], ref: str, key: Credit) -> None:
    """Add a try to ``ref``'s, in amortised constant time: a node named by n outcomes must
    not cost n^2 (a tuple rebuilt per outcome took 16 s for 40,000). A list the map owns is
    extended in place; a tuple (as a checkpoint decodes them) or a list seen through a
    copy-on-write overlay (a lower map of a ``ChainMap``) is copied once, then owned."""
    held = credits.get(ref)
    if held is None:
        credits[ref] = [key]
        return
    if type(held) is not list or (isinstance(credits, ChainMap) and ref not in credits.maps[0]):
        held = list(held)
        credits[ref] = held
    held.append(key)


def tally(tries: Iterable[Credit], settled: Mapping[str, int]) -> tuple[int, int]:
    """(successes, failures) of distinct tries; an attempt not settled counts neither."""
    s = f = 0
    for key in dict.fromkeys(tries):
        if isinstance(key, int):
            won = key > 0
        else:
            verdict = settled.get(key, -1)
            if verdict < 0:
                continue
            won = verdict == 1
        s, f = (s + 1, f) if won else (s, f + 1)
    return s, f
