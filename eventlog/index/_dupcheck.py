"""Whether a re-appended event (its id already in the log) says what the stored one says.

An append whose id is in the log writes nothing and answers with the stored seq (that is
the idempotency agents rely on to retry). When the caller sent *different* content under
the same id, that answer alone would hide it; this reads the stored event back (only on
the duplicate path: a normal append pays nothing) and compares the two as the log would
have stored the new one.
"""

from __future__ import annotations

import os
from collections.abc import Collection

import msgspec

from .._errors import CorruptLogError
from .._snapshot import Snapshot
from ..schema._events import Event
from ..schema._union import AnyEvent


def stored_events(snap: Snapshot, seqs: Collection[int]) -> dict[int, AnyEvent]:
    """The events at ``seqs`` in ``snap``, read once per WAL tail and per segment."""
    wanted = set(seqs)
    found: dict[int, AnyEvent] = {}
    sealed = snap.manifest.sealed_seq
    tail = [s for s in wanted if s > sealed]
    if tail:
        found.update((e.seq, e) for e in snap.tail_events(after=min(tail) - 1) if e.seq in wanted)
    for info in snap.manifest.segments:
        inside = [s for s in wanted if info.first_seq <= s <= info.last_seq]
        if inside:
            path = os.path.join(snap.paths.segments, info.file)
            found.update((e.seq, e) for e in _from_segment(path, inside))
    missing = sorted(wanted - set(found))
    if missing:
        raise CorruptLogError(
            f"{snap.paths.root}: seq {missing[0]}, named by the id index, is not in the log"
        )
    return found


def _from_segment(path: str, seqs: list[int]) -> list[AnyEvent]:
    import pyarrow.parquet as pq  # duplicates of sealed events only: not the append path

    from ..sealed._arrow import table_to_events
    from ..sealed._segments import conform

    try:
        table = pq.read_table(path, filters=[("seq", "in", seqs)])
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise CorruptLogError(f"{path}: cannot read seqs {seqs[0]}.. ({exc})") from None
    return table_to_events(conform(table))


def same_content(new: Event, stored: Event) -> bool:
    """Whether ``new`` (as given to append) stores as ``stored`` did, seq aside.

    What the log fills in at append is compared only when ``new`` gave it: a time of 0
    ("now") matches any stored time, an empty signal key matches the key derived from the
    same signals, an attempt's empty action id matches its own id.
    """
    from ..wal._prepare import fill_like

    if type(new) is not type(stored):
        return False
    filled = fill_like(new, stored.ts)
    return msgspec.structs.replace(stored, seq=0) == msgspec.structs.replace(filled, seq=0)
