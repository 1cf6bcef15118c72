"""What a graph checkpoint needs from the log: which log it is, the events since it, which
nodes those events change, and the journal that keeps small deltas without a new state.

A checkpoint belongs to one log. It records the ids of the events at seq 1 and at the seq it
was built to, with the segment files that held them (segments are immutable and their names
unique, so an unchanged file name proves an unchanged id without reading the file); another
log at the same path has other ids there.

pyarrow is imported only when a sealed segment has to be read: a cold ``evolog route`` on a
checkpoint that is up to date reads the manifest and the WAL tail, nothing else.

The journal (``journal-<state generation>.bin`` beside the state file) holds the advances
since the state was written that changed no view: attempts, and outcomes that name no node
and end no attempt a node counts. Each is a frame (length, CRC-32, :class:`JournalEntry`)
carrying the position it brought the checkpoint to, appended under the checkpoint's write
lock; the checkpoint is where its last whole, checked frame says. A torn or corrupt frame
ends the journal (what precedes it is a checkpoint at an earlier seq; the events after it
are folded again from the log) and the next append overwrites it.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Collection, Iterable
from typing import Final, NamedTuple

import msgspec
from evolog.eventlog import (
    AnyEvent,
    Attempt,
    ChildStep,
    Constraint,
    Link,
    Merge,
    Node,
    Outcome,
    Prune,
    Snapshot,
    kind_of,
)

from ._memgraph import MemGraph

__all__ = [
    "JOURNAL_BOUND",
    "Journal",
    "JournalEntry",
    "SeqMark",
    "append_journal",
    "counted_candidates",
    "dirty_nodes",
    "ended_attempts",
    "entry_frame",
    "events_after",
    "journal_actions",
    "journal_events",
    "mark_at",
    "read_journal",
]


class SeqMark(msgspec.Struct, frozen=True):
    """The id of the event at ``seq``, and the segment file that holds it ("" = the WAL)."""

    seq: int
    id: str
    file: str


JOURNAL_BOUND: Final = 128 * 1024
"""Bytes of journal past which the next advance writes a new state file instead. Every call
reads the journal whole (~1,000 entries of an attempt each: about a millisecond) and a
state file costs a few hundred milliseconds at 1e5 attempts, so the two balance about here."""


# -- the journal ------------------------------------------------------------------------
class JournalEntry(msgspec.Struct, array_like=True, kw_only=True):
    """One advance that changed no view: the position it brought the checkpoint to, and its
    attempts and outcomes (only what the fold reads of them: :func:`_stripped`)."""

    applied: int
    last: SeqMark
    last_seq: int
    events: msgspec.Raw  # list[Attempt | Outcome], decoded only to be folded


class Journal(NamedTuple):
    """A journal as read: its entries, and the bytes of whole frames that check out."""

    entries: list[JournalEntry]
    size: int


_FRAME: Final = struct.Struct("<II")  # payload length, CRC-32 of the payload
_ENTRY_DECODER: Final = msgspec.msgpack.Decoder(JournalEntry)
_EVENTS_DECODER: Final = msgspec.msgpack.Decoder(list[Attempt | Outcome])
_NO_JOURNAL: Final = Journal([], 0)


def read_journal(path: str, applied: int) -> Journal:
    """The journal at ``path`` of a checkpoint at seq ``applied``, up to the first frame that is
    torn, fails its checksum or does not go past the one before (never trusted: a writer
    that died mid-append, a bad block). A missing journal is an empty one: nothing was
    appended, or a newer head replaced the one it belongs to and swept it."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return _NO_JOURNAL
    view = memoryview(data)
    entries: list[JournalEntry] = []
    pos = 0
    while pos + _FRAME.size <= len(data):
        size, crc = _FRAME.unpack_from(data, pos)
        start, end = pos + _FRAME.size, pos + _FRAME.size + size
        if not size or end > len(data) or zlib.crc32(view[start:end]) != crc:
            break
        try:
            entry = _ENTRY_DECODER.decode(view[start:end])
        except (msgspec.DecodeError, msgspec.ValidationError):
            break
        if entry.applied <= applied:
            break
        entries.append(entry)
        pos, applied = end, entry.applied
    return Journal(entries, pos)


def journal_events(journal: Journal) -> list[Attempt | Outcome]:
    """The journal's attempts and outcomes, in order."""
    out: list[Attempt | Outcome] = []
    for entry in journal.entries:
        out.extend(_EVENTS_DECODER.decode(entry.events))
    return out


def journal_actions(journal: Journal) -> dict[str, str]:
    """The journal's attempts by action id (the newest of each)."""
    return {e.action_id or e.id: e.id for e in journal_events(journal) if isinstance(e, Attempt)}


def _stripped(e: Attempt | Outcome) -> Attempt | Outcome:
    # What MemGraph.apply, ended_attempts and dirty_nodes read of them; a task, a note or
    # an observation can be kilobytes, and would fill the journal for nothing.
    if isinstance(e, Attempt):
        return Attempt(id=e.id, seq=e.seq, action_id=e.action_id)
    return Outcome(id=e.id, seq=e.seq, action_id=e.action_id, status=e.status,
                   decided_by=e.decided_by, supported_by=e.supported_by)  # fmt: skip


def entry_frame(
    applied: int, last: SeqMark, last_seq: int, events: Iterable[Attempt | Outcome]
) -> bytes:
    """One journal frame: the entry, after its length and checksum."""
    body = msgspec.msgpack.encode([_stripped(e) for e in events])
    payload = msgspec.msgpack.encode(
        JournalEntry(applied=applied, last=last, last_seq=last_seq, events=msgspec.Raw(body))
    )
    return _FRAME.pack(len(payload), zlib.crc32(payload)) + payload


def append_journal(path: str, applied: int, journal: Journal, frame: bytes) -> bool:
    """Append ``frame`` after ``journal`` as read; the caller holds the write lock and has
    checked that the head is still the one the journal belongs to. Whatever follows the
    frames that check out (a torn append) is overwritten. False, and nothing written, when
    another writer appended since ``journal`` was read (the events are folded again from the
    log by whoever needs them)."""
    if read_journal(path, applied).size != journal.size:
        return False
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        os.pwrite(fd, frame, journal.size)
        os.ftruncate(fd, journal.size + len(frame))
    finally:
        os.close(fd)
    return True


def mark_at(snap: Snapshot, seq: int, known: SeqMark | None) -> SeqMark:
    """The mark of ``seq``; not read again when ``known`` names the segment that holds it."""
    if seq <= 0:
        return SeqMark(seq, "", "")
    for info in snap.segments:
        if info.first_seq <= seq <= info.last_seq:
            if known is not None and known.seq == seq and known.file == info.file:
                return known
            import pyarrow.compute as pc
            from evolog.eventlog.sealed import read_part

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
        from evolog.eventlog.sealed import conform, read_part, table_to_events

        table = read_part(snap.paths.segments, info)
        wanted = pc.and_(
            pc.greater(table["seq"], seq), pc.is_in(table["kind"], pa.array(sorted(kinds)))
        )
        out.extend(table_to_events(conform(table.filter(wanted))))
    out.extend(e for e in snap.tail_events(seq) if kind_of(e) in kinds)
    return out


def ended_attempts(graph: MemGraph, delta: Iterable[AnyEvent]) -> set[str]:
    """The attempts the outcomes among ``delta`` end, read before the graph folds them (an
    attempt after an outcome takes over its action id)."""
    actions: dict[str, str] = {}
    out: set[str] = set()
    for e in delta:
        if isinstance(e, Attempt):
            actions[e.action_id or e.id] = e.id
        elif isinstance(e, Outcome) and e.action_id:
            attempt = actions.get(e.action_id) or graph._actions.get(e.action_id)
            if attempt is not None:
                out.add(attempt)
    return out


def dirty_nodes(graph: MemGraph, delta: Iterable[AnyEvent], ended: Iterable[str] = ()) -> set[str]:
    """Nodes whose view the events may have changed, with every node they were merged into
    (a view covers its whole group); ``ended``: the attempts whose outcomes came in
    (:func:`ended_attempts`), whose counts change for the nodes dreamed from them."""
    out: set[str] = set()
    traces: set[str] = set()
    for trace in ended:
        out.update(graph._counted_in.get(trace, ()))
    for e in delta:
        if isinstance(e, Outcome):
            out.update(r for r in (*e.decided_by, *e.supported_by) if graph.node(r) is not None)
        elif isinstance(e, Node | ChildStep | Prune):
            out.add(e.node)
        elif isinstance(e, Merge):
            out.update((e.node, e.merged))
        elif isinstance(e, Link):
            out.add(e.src.partition("#")[0])
        elif isinstance(e, Constraint):
            if e.node is not None:
                out.add(e.node)
            else:
                traces.add(e.trace)
    if traces:
        # A constraint given by trace belongs to every node served by that trace.
        out.update(n.id for n in graph.nodes(live_only=False) if not traces.isdisjoint(n.traces))
    for node_id in list(out):
        record = graph.node(node_id)
        seen = 0
        while record is not None and record.merged_into is not None and seen < len(graph):
            out.add(record.merged_into)
            record = graph.node(record.merged_into)
            seen += 1
    return {n for n in out if graph.node(n) is not None}


def counted_candidates(
    graph: MemGraph, folded: Collection[AnyEvent], ended: Iterable[str]
) -> tuple[list[str], list[str]]:
    """What the events just folded into ``graph`` may have added to its counted file: the
    attempts a node may have come to count (a dream's traces, the attempts outcomes ended:
    ``MemGraph._count_in``'s only callers), and the action ids whose attempt is now counted
    (an attempt's own, an outcome's, and those of the traces a dream names)."""
    traces = {t for e in folded if isinstance(e, Node) for t in e.traces}
    ids = {e.action_id or e.id for e in folded if isinstance(e, Attempt)}
    ids.update(e.action_id for e in folded if isinstance(e, Outcome) and e.action_id)
    if traces:
        ids.update(x for x, attempt in graph._actions.items() if attempt in traces)
    counted = graph._counted_in
    return [*traces, *ended], [x for x in ids if graph._actions.get(x) in counted]
