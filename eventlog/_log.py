"""``EventLog``: the append-only log of one store.

Appending imports only msgspec and the standard library; sealing, replay and verification
import pyarrow when first used.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Literal

from ._files import LockWait
from ._snapshot import Snapshot
from ._store import init_store, require_store
from .schema._events import Event
from .schema._union import AnyEvent
from .wal._receipt import Durability, Receipt
from .wal._writer import Writer

if TYPE_CHECKING:
    import subprocess

    import pyarrow as pa

    from ._verify import VerifyReport
    from .sealed._seal import CompactResult, SealResult

AutoSeal = Literal["inline", "background", "off"]
#: Seal automatically once the active WAL passes this many bytes (about 100k events).
SEAL_THRESHOLD_BYTES = 32 << 20


class EventLog:
    """The durable, append-only event log of a store directory.

    ``durability``: ``always`` fsyncs before an append returns (survives kill -9 and power
    loss); ``batch`` group-commits (an append returns its seq at once and is durable after
    :meth:`flush`, or within ``group_ms``); ``none`` writes without fsync (survives kill -9
    of the process, not power loss).

    Writing waits for the store's lock while another process holds it: as long as it
    takes, or ``lock_timeout`` seconds, then :class:`LockTimeoutError` (nothing written).
    ``on_lock_wait`` is called once with a line naming the holder when the wait lasts.
    Opening and reading need no write access: a store on read-only media can be read.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        durability: Durability = "always",
        create: bool = False,
        auto_seal: AutoSeal = "inline",
        seal_threshold_bytes: int = SEAL_THRESHOLD_BYTES,
        group_size: int = 1000,
        group_ms: float = 10.0,
        lock_timeout: float | None = None,
        on_lock_wait: Callable[[str], None] | None = None,
    ) -> None:
        self.paths = init_store(path) if create else require_store(path)
        self.auto_seal = auto_seal
        self.seal_threshold_bytes = seal_threshold_bytes
        wait = (
            None
            if lock_timeout is None and on_lock_wait is None
            else LockWait(lock_timeout, on_lock_wait)
        )
        self._writer = Writer(self.paths, durability, group_size, group_ms, wait)

    @property
    def path(self) -> str:
        return self.paths.root

    @property
    def durability(self) -> Durability:
        return self._writer.durability

    def __enter__(self) -> EventLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Flush buffered appends and release files."""
        self._writer.close()

    # -- writing -----------------------------------------------------------------------
    def append(self, event: Event) -> int:
        """Append one event; return its seq (the original seq if its id was seen before)."""
        seq = self._writer.append_seq(event)
        if self.auto_seal != "off" and self._writer.wal_size() >= self.seal_threshold_bytes:
            self._maybe_seal()
        return seq

    def append_many(self, events: Iterable[Event]) -> list[int]:
        """Append events as one atomic batch; return their seqs in order."""
        return [r.seq for r in self.append_receipts(events)]

    def append_receipts(
        self, events: Iterable[Event], where: str = "", validated: bool = False
    ) -> list[Receipt]:
        """Like :meth:`append_many`, also saying which events were duplicates.

        ``where`` prefixes error locations (e.g. ``"line "``); ``validated`` skips the
        decode-back check for events that came from the typed JSON decoder.
        """
        receipts = self._writer.append_many(events, where, validated)
        self._maybe_seal()
        return receipts

    def stored_differs(self, pairs: Iterable[tuple[Event, int]]) -> list[bool]:
        """For each (event, seq) of an append answered as a duplicate at ``seq``: whether the
        event differs from the one stored there (what the log fills in, such as a time of 0,
        is compared only where the event gave it). It reads the log: meant for the
        duplicate path only."""
        from .index._dupcheck import same_content, stored_events

        pairs = list(pairs)
        if not pairs:
            return []
        with self.snapshot() as snap:
            stored = stored_events(snap, [seq for _, seq in pairs])
        return [not same_content(event, stored[seq]) for event, seq in pairs]

    def flush(self) -> None:
        """Make group-committed appends durable now (and raise the error of a timed group
        commit that failed since the last call, if one did)."""
        self._writer.flush()

    def seal_due(self) -> bool:
        """Whether the WAL has grown past the seal threshold."""
        return self._writer.wal_size() >= self.seal_threshold_bytes

    def _maybe_seal(self) -> None:
        if self.auto_seal == "off" or self._writer.wal_size() < self.seal_threshold_bytes:
            return
        if self.auto_seal == "inline":
            self.seal()
            return
        # A hook process must stay lean: hand the seal to a detached process.
        self.seal_in_background()

    def seal_in_background(self) -> subprocess.Popen[bytes]:
        """Start ``evolog seal`` in a detached process (pyarrow stays out of this one);
        returns its ``subprocess.Popen``."""
        import subprocess
        import sys

        return subprocess.Popen(
            [sys.executable, "-m", "evolog", "--store", self.path, "seal", "--quiet"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    # -- maintenance -------------------------------------------------------------------
    def seal(self) -> SealResult:
        """Seal every WAL record present now into Parquet segments."""
        from .sealed._seal import seal

        return seal(self.paths, self._writer)

    def compact(self, small_rows: int = 100_000, target_rows: int = 1_000_000) -> CompactResult:
        """Merge adjacent small segments (events and seqs unchanged)."""
        from .sealed._seal import compact

        return compact(self.paths, small_rows, target_rows)

    def verify(self) -> VerifyReport:
        """Check checksums, seq continuity and the manifest against the files."""
        from ._verify import verify

        return verify(self.paths)

    # -- reading -----------------------------------------------------------------------
    def snapshot(self) -> Snapshot:
        """A consistent prefix of the log; close it when done."""
        self._writer.flush()
        return Snapshot.take(self.paths)

    def replay(
        self,
        as_of: int | None = None,
        *,
        as_of_ts: int | None = None,
        kinds: Collection[str] | None = None,
    ) -> Iterator[AnyEvent]:
        """Events in seq order, up to seq ``as_of`` and/or event time ``as_of_ts`` (µs)."""
        from .sealed._replay import Filter, events

        flt = Filter(as_of, as_of_ts, kinds)
        with self.snapshot() as snap:
            yield from events(snap, flt)

    def replay_arrow(
        self,
        as_of: int | None = None,
        *,
        as_of_ts: int | None = None,
        kinds: Collection[str] | None = None,
        columns: list[str] | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """Arrow record batches in seq order (the fast path for projections)."""
        from .sealed._replay import Filter, arrow_batches

        flt = Filter(as_of, as_of_ts, kinds)
        with self.snapshot() as snap:
            yield from arrow_batches(snap, flt, columns)

    def stats(self) -> dict[str, Any]:
        """Counts and sizes: events, segments, WAL, bytes per sealed event, events by kind."""
        from ._stats import stats

        with self.snapshot() as snap:
            return stats(snap)


def open_log(path: str | os.PathLike[str], **kwargs: Any) -> EventLog:
    """Open an existing store (``create=True`` to make one)."""
    return EventLog(path, **kwargs)
