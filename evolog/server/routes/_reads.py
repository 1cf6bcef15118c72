"""Reading a page of events after a seq from one snapshot (for NDJSON answers and SSE)."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice
from typing import TYPE_CHECKING, NamedTuple

from .._errors import Problem

if TYPE_CHECKING:
    from evolog.eventlog import AnyEvent, Paths, Snapshot


class Page(NamedTuple):
    """Events as (seq, kind, JSON); ``scanned``: the seq to read after next time."""

    events: list[tuple[int, str, bytes]]
    scanned: int
    head: int
    more: bool


def parse_kinds(text: str | None) -> frozenset[str] | None:
    """``kinds=a,b`` as a set, or a 422 naming the unknown kind."""
    from evolog.eventlog import KINDS

    if not text:
        return None
    kinds = frozenset(k.strip() for k in text.split(",") if k.strip())
    unknown = sorted(kinds - set(KINDS))
    if unknown:
        raise Problem(
            422, f"kinds: expected some of {', '.join(sorted(KINDS))}; got {unknown[0]!r}", "kinds"
        )
    return kinds or None


def events_after(paths: Paths, after: int, limit: int, kinds: frozenset[str] | None) -> Page:
    """Up to ``limit`` events with seq > ``after`` (of ``kinds``), oldest first."""
    from evolog.eventlog import Snapshot, kind_of, to_json

    with Snapshot.take(paths) as snap:
        head = snap.head_seq
        if after >= head:
            return Page([], max(after, head), head, False)
        found = islice(_after(snap, after, kinds), limit + 1)
        out = [(e.seq, kind_of(e), to_json(e)) for e in found]
    more = len(out) > limit
    if more:
        out.pop()
    return Page(out, out[-1][0] if more else head, head, more)


def _after(snap: Snapshot, after: int, kinds: frozenset[str] | None) -> Iterator[AnyEvent]:
    """Sealed segments that end past ``after`` (a follower near the head reads none), then
    the WAL tail from ``after`` on."""
    from evolog.eventlog import kind_of
    from evolog.eventlog.sealed import Filter, segment_events

    flt = Filter(None, None, kinds)
    for info in snap.segments:
        if info.last_seq > after:
            yield from (e for e in segment_events(snap, info, flt) if e.seq > after)
    for e in snap.tail_events(after):
        if kinds is None or kind_of(e) in kinds:
            yield e
