"""Which traces a dream still has to read: a watermark under ``<store>/cache/dream/``.

Reading every trace through DuckDB on every dream costs what the whole log costs. A dream
records how far it read (the seq ``upto``) and which traces it read but left unconsumed
(attempts still open, and complete ones a ``max_traces`` limit left for later), by action id
and attempt seq. The next dream reads only the attempts after ``upto`` plus those left ones
(an outcome arriving later joins an attempt it can find by its action id).

It is a cache like the others: it belongs to one log (the ids at seq 1 and at ``upto`` must
still be there) and to one set of undone cycles (an undo makes consumed traces undreamed
again, so any change to that set reads everything); anything else, or a file that does not
decode, reads everything.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable

import msgspec
from evolog.eventlog import EventLog, read_checked, write_checked
from evolog.projections.graph import SeqMark, mark_at

from ._traces import Trace, load_traces

__all__ = ["read_traces", "save_watermark"]

_FORMAT = 1


class Watermark(msgspec.Struct, kw_only=True):
    format: int
    first: SeqMark
    upto: SeqMark
    retracted: list[str]
    unsettled: list[tuple[str, int]]


def _path(log: EventLog) -> str:
    return os.path.join(log.paths.cache, "dream", "traces.msgpack")


def read_traces(log: EventLog, retracted: Iterable[str]) -> tuple[int, dict[str, Trace]]:
    """(the head seq read up to, every trace a dream may need: all, or those after the
    watermark and the ones it left), open traces included."""
    with log.snapshot() as snap:
        head = snap.head_seq
        mark = _valid(log, snap, sorted(retracted), head)
    if mark is None:
        return head, load_traces(log, as_of=head, complete_only=False)
    traces = load_traces(log, as_of=head, complete_only=False, after_seq=mark.upto.seq)
    if mark.unsettled:
        since = min(seq for _, seq in mark.unsettled) - 1
        actions = sorted({a for a, _ in mark.unsettled})
        traces.update(
            load_traces(log, as_of=head, complete_only=False, after_seq=since, action_ids=actions)
        )
    return head, traces


def _valid(log: EventLog, snap: object, retracted: list[str], head: int) -> Watermark | None:
    try:
        raw = read_checked(_path(log))
        if raw is None:
            return None
        mark = msgspec.msgpack.decode(raw, type=Watermark)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None
    if mark.format != _FORMAT or mark.retracted != retracted or mark.upto.seq > head:
        return None
    for known in (mark.first, mark.upto):
        if known.seq and mark_at(snap, known.seq, known).id != known.id:  # type: ignore[arg-type]
            return None
    return mark


def save_watermark(
    log: EventLog, head: int, retracted: Iterable[str], unsettled: Iterable[Trace]
) -> None:
    """Record that every trace up to ``head`` was read and all but ``unsettled`` consumed."""
    with log.snapshot() as snap:
        mark = Watermark(
            format=_FORMAT,
            first=mark_at(snap, 1, None),
            upto=mark_at(snap, head, None),
            retracted=sorted(retracted),
            unsettled=sorted({(t.action_id, t.attempt_seq) for t in unsettled}),
        )
    # A cache: failing to write it costs the next dream a full read.
    with contextlib.suppress(OSError):
        os.makedirs(os.path.dirname(_path(log)), exist_ok=True)
        write_checked(_path(log), msgspec.msgpack.encode(mark), 0o600)
