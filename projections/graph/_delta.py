"""What a graph checkpoint needs from the log: which log it is, and the events since it.

A checkpoint belongs to one log. It records the ids of the events at seq 1 and at the seq it
was built to, with the segment files that held them (segments are immutable and their names
unique, so an unchanged file name proves an unchanged id without reading the file); another
log at the same path has other ids there.

pyarrow is imported only when a sealed segment has to be read: a cold ``evolog route`` on a
checkpoint that is up to date reads the manifest and the WAL tail, nothing else.
"""

from __future__ import annotations

from collections.abc import Collection

import msgspec
from evolog.eventlog import AnyEvent, Snapshot
from evolog.eventlog.schema._codec import kind_of

__all__ = ["SeqMark", "events_after", "mark_at"]


class SeqMark(msgspec.Struct, frozen=True):
    """The id of the event at ``seq``, and the segment file that holds it ("" = the WAL)."""

    seq: int
    id: str
    file: str


def mark_at(snap: Snapshot, seq: int, known: SeqMark | None) -> SeqMark:
    """The mark of ``seq``; not read again when ``known`` names the segment that holds it."""
    if seq <= 0:
        return SeqMark(seq, "", "")
    for info in snap.segments:
        if info.first_seq <= seq <= info.last_seq:
            if known is not None and known.seq == seq and known.file == info.file:
                return known
            import pyarrow.compute as pc
            from evolog.eventlog.sealed._segments import read_part

            table = read_part(snap.paths.segments, info, ["seq", "id"])
            table = table.filter(pc.equal(table["seq"], seq))
            found = str(table["id"][0].as_py()) if table.num_rows else ""
            return SeqMark(seq, found, info.file)
    events = snap.tail_events(seq - 1)
    if events and events[0].seq == seq:
        return SeqMark(seq, events[0].id, "")
    return SeqMark(seq, "", "")


def events_after(snap: Snapshot, seq: int, kinds: Collection[str]) -> list[AnyEvent]:
    """The snapshot's events of ``kinds`` with a seq above ``seq``, in order."""
    out: list[AnyEvent] = []
    for info in snap.segments:
        if info.last_seq <= seq:
            continue
        import pyarrow as pa
        import pyarrow.compute as pc
        from evolog.eventlog.sealed._arrow import table_to_events
        from evolog.eventlog.sealed._segments import conform, read_part

        table = read_part(snap.paths.segments, info)
        wanted = pc.and_(
            pc.greater(table["seq"], seq), pc.is_in(table["kind"], pa.array(sorted(kinds)))
        )
        out.extend(table_to_events(conform(table.filter(wanted))))
    out.extend(e for e in snap.tail_events(seq) if kind_of(e) in kinds)
    return out
