"""The ledger checkpoint under ``<store>/cache/ledger/``: dead entries without a full replay.

Selection pressure asks "which entries are dead?" for every piece of advice. The answer is
the ledger at the head of the log; the checkpoint keeps the rules' state at some seq, and a
call applies only the events appended since (through :class:`LedgerFollower`). It is a
cache: deleting it changes no answer. A checkpoint written for another config, another log
(the ids at seq 1 and at its seq must still match), an older format, or one that cannot be
read is rebuilt silently; a retraction among the new events forces a rebuild (it may undo a
merge already folded in). The checkpoint is rewritten once enough new events accumulate.

"Which entries are dead" is answered from the checkpoint without the rules (numpy) when it
is at the head, and also when the few events after it cannot bury anyone: attempts (which
open tickets and birth entries) and kinds the ledger does not read, with no event-time
clock configured. A route right after an agent's attempt then costs no rules restore.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec
from evolog.eventlog import AnyEvent, Attempt, Retraction, Snapshot, read_checked, write_checked

from ._config import LEDGER_KINDS, LedgerConfig, config_from
from ._cpfile import CAUSES, FORMAT, Checkpoint, Mark
from ._snap import snapshot_of

if TYPE_CHECKING:
    from ._follow import LedgerFollower

#: Rewrite the checkpoint after this many new events (or a tenth of the log, if more).
REWRITE_AFTER = 10_000
#: Side files of replaced checkpoints are removed after this long (a reader may need them).
KEYS_GRACE_S = 3600.0
#: At most this many unsealed events after the checkpoint are read to see if none can bury.
QUIET_TAIL = 1024
#: Kinds that can change the graveyard: everything the ledger reads but attempts (a tick, a
#: settlement, a merge, a lifecycle op can bury; node events are kept to stay on the safe
#: side) and retractions (one can undo a burial).
MAY_BURY = (*(kind for kind in LEDGER_KINDS if kind is not Attempt), Retraction)


def dead_entries(
    source: Any,
    as_of: int | None = None,
    config: LedgerConfig | dict[str, object] | None = None,
    *,
    cache: bool = True,
) -> frozenset[str]:
    """Ids of every dead entry (executed, starved, merged or forgotten), as of a seq.

    At the head of a store's log (``as_of=None``) the answer comes from the checkpoint in
    ``<store>/cache/ledger`` advanced to the head; otherwise from a full replay.
    """
    return frozenset(deaths(source, as_of, config, cache=cache))


def deaths(
    source: Any,
    as_of: int | None = None,
    config: LedgerConfig | dict[str, object] | None = None,
    *,
    cache: bool = True,
) -> dict[str, str]:
    """Every dead entry's id and cause ("executed", "starved", "merged", "forgotten")."""
    cfg = config_from(config)
    if as_of is not None or not cache:
        from ._ledger import replay_ledger  # pyarrow: only when replaying

        rules, _ = replay_ledger(source, as_of, config=cfg)
    else:
        ledger = LedgerCache(source, cfg)
        # A checkpoint at the head answers without the rules (numpy): a cold route's case.
        dead = ledger.dead_at_head()
        if dead is not None:
            return dead
        rules = ledger.follower().rules
    st = rules.state
    return {st.ids[i]: str(CAUSES[int(st.cols["cause"][i])]) for i in st.graveyard}


class LedgerCache:
    """The checkpoint of one store for one config."""

    def __init__(self, source: Any, config: LedgerConfig) -> None:
        self.source = source
        self.config = config
        with snapshot_of(source) as snap:
            self.dir = os.path.join(snap.paths.cache, "ledger")
        self.name = config.fingerprint()
        self.path = os.path.join(self.dir, f"{self.name}.msgpack")

    def dead_at_head(self) -> dict[str, str] | None:
        """:func:`deaths` read straight from a valid checkpoint at the head of the log, or
        followed only by events that cannot bury (what :meth:`follower` would restore and
        apply without burying anyone), or None."""
        with snapshot_of(self.source) as snap:
            found = self._checkpoint(snap)
            if found is None or not self._quiet_since(snap, found[0].applied):
                return None
        cp = found[0]
        cause = cp.columns.get("cause", b"")
        if len(cause) != len(cp.ids) or not all(0 <= i < len(cp.ids) for i in cp.graveyard):
            return None  # malformed: the full path rebuilds it
        return {cp.ids[i]: str(CAUSES[cause[i]]) for i in cp.graveyard}

    def _quiet_since(self, snap: Snapshot, applied: int) -> bool:
        """Whether no event after ``applied`` can change the graveyard (read from the
        write-ahead tail only, and only for a few events)."""
        head = snap.head_seq
        if applied == head:
            return True
        if self.config.tick_every_us or head - applied > QUIET_TAIL:
            return False  # with an event-time clock any event may tick
        if any(info.last_seq > applied for info in snap.segments):
            return False  # sealed since: reading it would cost more than the rules
        return not any(isinstance(e, MAY_BURY) for e in snap.tail_events(applied))

    def follower(self) -> LedgerFollower:
        """The rules at the head of the log (checkpoint advanced, or a rebuild)."""
        from ._follow import LedgerFollower

        with snapshot_of(self.source) as snap:
            head = snap.head_seq
            loaded = self._load(snap)
            if loaded is not None:
                follower, marks = loaded
                start = follower.seq
                follower.apply_all(events_after(snap, start))
                if not follower.stale:
                    if head - start >= max(REWRITE_AFTER, start // 10):
                        self._save(follower, (marks[0], mark_at(snap, head, None)))
                    return follower
        from ._ledger import replay_ledger

        rules, head = replay_ledger(self.source, head, config=self.config, keep_keys=True)
        follower = LedgerFollower(rules)
        follower.seq = head
        with snapshot_of(self.source) as snap:
            self._save(follower, (mark_at(snap, 1, None), mark_at(snap, head, None)))
        return follower

    def _checkpoint(self, snap: Snapshot) -> tuple[Checkpoint, tuple[Mark, Mark]] | None:
        """The checkpoint file, if it is of this format, config and log, with its marks."""
        try:
            raw = read_checked(self.path)
            if raw is None:
                return None
            cp = msgspec.msgpack.decode(raw, type=Checkpoint)
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            return None
        if cp.format != FORMAT or cp.config != self.name or cp.applied > snap.head_seq:
            return None
        first, last = mark_at(snap, 1, cp.first), mark_at(snap, cp.applied, cp.last)
        if (first.id, last.id) != (cp.first.id, cp.last.id):
            return None  # another log now lives at this path
        return cp, (first, last)

    def _load(self, snap: Snapshot) -> tuple[LedgerFollower, tuple[Mark, Mark]] | None:
        from ._checkpoint import restore

        found = self._checkpoint(snap)
        if found is None:
            return None
        cp, marks = found
        # Checked now, decoded when first needed: a damaged side file means a rebuild here
        # rather than a failure in the middle of applying events.
        raw = read_checked(os.path.join(self.dir, cp.keys_file))
        if raw is None:
            return None
        follower = restore(cp, self.config, self._keys_loader(raw))
        return None if follower is None else (follower, marks)

    @staticmethod
    def _keys_loader(raw: bytes) -> Callable[[], set[str]]:
        def load() -> set[str]:
            return set(msgspec.msgpack.decode(raw, type=list[str]))

        return load

    def _save(self, follower: LedgerFollower, marks: tuple[Mark, Mark]) -> None:
        from ._checkpoint import dump

        keys_file = f"{self.name}-{follower.seq}-{os.getpid()}.keys"
        cp, keys = dump(follower, self.config, marks, keys_file)
        # A cache that cannot be written is only a slower next call.
        with contextlib.suppress(OSError):
            os.makedirs(self.dir, exist_ok=True)
            write_checked(os.path.join(self.dir, keys_file), msgspec.msgpack.encode(keys), 0o600)
            write_checked(self.path, msgspec.msgpack.encode(cp), 0o600)
            self._sweep(keep=keys_file)

    def _sweep(self, keep: str) -> None:
        now = time.time()
        for name in os.listdir(self.dir):
            if name.startswith(self.name + "-") and name.endswith(".keys") and name != keep:
                path = os.path.join(self.dir, name)
                with contextlib.suppress(OSError):
                    if now - os.path.getmtime(path) > KEYS_GRACE_S:
                        os.unlink(path)


def events_after(snap: Snapshot, seq: int) -> list[AnyEvent]:
    """The snapshot's events with a seq above ``seq``, in order."""
    out: list[AnyEvent] = []
    for info in snap.segments:
        if info.last_seq > seq:
            import pyarrow.compute as pc  # only when a segment must be read
            from evolog.eventlog.sealed import conform, read_part, table_to_events

            table = read_part(snap.paths.segments, info)
            table = table.filter(pc.greater(table["seq"], seq))
            out.extend(table_to_events(conform(table)))
    # Only the new events: a follower polled after every append would otherwise decode the
    # whole tail again each time.
    out.extend(snap.tail_events(seq))
    return out


def mark_at(snap: Snapshot, seq: int, known: Mark | None) -> Mark:
    """The id at ``seq``; not read again when ``known`` names the segment that holds it."""
    if seq <= 0:
        return Mark(seq, "", "")
    for info in snap.segments:
        if info.first_seq <= seq <= info.last_seq:
            if known is not None and known.seq == seq and known.file == info.file:
                return known  # segments are immutable and their names unique
            import pyarrow.compute as pc
            from evolog.eventlog.sealed import read_part

            table = read_part(snap.paths.segments, info, ["seq", "id"])
            table = table.filter(pc.equal(table["seq"], seq))
            return Mark(seq, str(table["id"][0].as_py()) if table.num_rows else "", info.file)
    events = snap.tail_events(seq - 1)
    if events and events[0].seq == seq:
        return Mark(seq, events[0].id, "")
    return Mark(seq, "", "")
