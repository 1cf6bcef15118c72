"""``evolog append``'s commit: receipts, Ctrl-C, and NDJSON input of any size.

**Ctrl-C.** An interrupt before the commit starts aborts the command with nothing written.
Once the commit has started, an interrupt is held: the commit finishes, its receipts are
printed, and only then does the command stop (exit 130, saying what was committed). So a
re-run never has to guess whether id-less events went in.

**Large inputs.** Input up to :data:`CHUNK_EVENTS` events and :data:`CHUNK_BYTES` bytes is
appended as one atomic batch, as always. Past that, memory stays bounded: every line is
still validated before anything is written (the lines are spilled to a temporary file
outside the store, deleted on exit), and then appended in atomic batches of
:data:`CHUNK_EVENTS` events. A crash or an interrupt can then leave a prefix of whole batches
committed; the command prints which input lines are committed and where to resume.
"""

from __future__ import annotations

# `signal`'s C half, loaded in every interpreter: importing `signal` itself (its enum
# wrappers) would cost 0.6 ms of a cold append, measured.
import _signal  # type: ignore[import-not-found]
import os
import sys
from collections.abc import Iterator, Sequence
from typing import IO, Any

from evolog.eventlog import AnyEvent, EventLog, EventLogError, InvalidEventError, from_json

#: Longest NDJSON line read (the event cap applies to the msgpack encoding, 1 MiB).
MAX_LINE_BYTES = 4 << 20
#: One atomic batch of a large input (about 16 MB of events in memory at 1.6 KB each).
CHUNK_EVENTS = 10_000
#: Input bytes past which the input is spilled instead of held in memory.
CHUNK_BYTES = 16 << 20


class CommitGuard:
    """Ctrl-C as :mod:`evolog.cli._ingest` describes it (SIGINT only; main thread only)."""

    def __init__(self) -> None:
        self.critical = False
        self.pending = False
        self._old: Any = None

    def __enter__(self) -> CommitGuard:
        try:
            old = _signal.getsignal(_signal.SIGINT)
            if old != _signal.SIG_IGN:  # `cmd &` in a script ignores SIGINT: keep that
                self._old = _signal.signal(_signal.SIGINT, self._handle)
        except ValueError:  # not the main thread (an embedding caller): leave signals alone
            pass
        return self

    def __exit__(self, *exc: object) -> None:
        if self._old is not None:
            _signal.signal(_signal.SIGINT, self._old)

    def _handle(self, signum: int, frame: object) -> None:
        if self.critical:
            self.pending = True
        else:
            raise KeyboardInterrupt


class Receipts:
    """Writes receipts as they are committed: one JSON object, or a JSON array streamed."""

    def __init__(self, log: EventLog, single: bool) -> None:
        self.log = log
        self.single = single
        self.count = 0

    def write(self, events: Sequence[AnyEvent], receipts: Sequence[Any]) -> None:
        import msgspec

        items = [{"seq": r.seq, "id": r.id, "duplicate": r.duplicate} for r in receipts]
        dups = [i for i, r in enumerate(receipts) if r.duplicate]
        if dups:
            differs = self.log.stored_differs((events[i], receipts[i].seq) for i in dups)
            for i, differ in zip(dups, differs, strict=True):
                items[i]["differs"] = differ
                if differ:
                    print(
                        f"evolog: warning: id {receipts[i].id!r} is already in the log (seq "
                        f"{receipts[i].seq}) with different content; the new content was "
                        "not written",
                        file=sys.stderr,
                    )
        if self.single:
            _write(msgspec.json.encode(items[0]) + b"\n")
        else:
            body = msgspec.json.encode(items)[1:-1]
            if body:
                _write((b"," if self.count else b"[") + body)
        self.count += len(items)

    def close(self) -> None:
        if not self.single:
            _write(b"]\n" if self.count else b"[]\n")


def _write(data: bytes) -> None:
    """Write all of ``data`` to stdout, unbuffered. (An interrupt held during a commit
    lands while the write waits on a full pipe; Python's buffered writer then dropped the
    rest of the data, so the receipts are written with plain write calls until done.)"""
    fd = sys.stdout.fileno()
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def commit(
    store: str,
    durability: str,
    events: list[AnyEvent],
    single: bool,
    lock: dict[str, Any] | None = None,
) -> int:
    """Append ``events`` as one atomic batch and print the receipts (see Ctrl-C above).

    ``lock``: EventLog's lock options (``lock_timeout``, ``on_lock_wait``)."""
    with CommitGuard() as guard:
        try:
            # A hook process never seals inline: that would load pyarrow into it.
            options: dict[str, Any] = {"durability": durability, **(lock or {})}
            with EventLog(store, auto_seal="background", **options) as log:
                guard.critical = True
                receipts = log.append_receipts(events, "event ", validated=True)
                out = Receipts(log, single)
                out.write(events, receipts)
                out.close()
        except KeyboardInterrupt:
            print("evolog: interrupted; nothing was appended", file=sys.stderr)
            return 130
    if guard.pending:
        print("evolog: interrupted after the commit; the receipts above are in the log",
              file=sys.stderr)  # fmt: skip
        return 130
    return 0


def append_ndjson(
    stream: IO[bytes], store: str, durability: str, lock: dict[str, Any] | None = None
) -> int:
    """``evolog append`` with NDJSON on stdin (see the module docstring)."""
    with CommitGuard():
        try:
            head, spill = _read_head(stream)
        except KeyboardInterrupt:
            print("evolog: interrupted; nothing was appended", file=sys.stderr)
            return 130
    if spill is None:
        events = [e for _, e in head]
        if not events:
            raise InvalidEventError("stdin: expected at least one JSON event; got no input")
        return commit(store, durability, events, single=False, lock=lock)
    with spill:
        return _append_spilled(spill, store, durability, lock)


def _lines(stream: IO[bytes], first: int = 1) -> Iterator[tuple[int, bytes]]:
    blank = 0  # bytes of blank lines in a row: an endless run of them (`yes ''`) must end
    for lineno, raw in enumerate(iter(lambda: stream.readline(MAX_LINE_BYTES + 1), b""), first):
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            raise InvalidEventError(
                f"expected a line of at most {MAX_LINE_BYTES} bytes; got a longer one",
                where=f"line {lineno}",
            )
        blank = blank + len(raw) if not raw.strip() else 0
        if blank > MAX_LINE_BYTES:
            raise InvalidEventError(
                f"expected JSON events; got more than {MAX_LINE_BYTES} bytes of blank lines "
                "in a row",
                where=f"line {lineno}",
            )
        yield lineno, raw


def read_ndjson(stream: IO[bytes]) -> list[AnyEvent]:
    """Decode every line (blank lines skipped); any bad line rejects the input."""
    return [from_json(raw, f"line {n}") for n, raw in _lines(stream) if raw.strip()]


def _read_head(stream: IO[bytes]) -> tuple[list[tuple[int, AnyEvent]], IO[bytes] | None]:
    """The input's events when it fits one batch, else (nothing, the validated spill file)."""
    head: list[tuple[int, AnyEvent]] = []
    raws: list[bytes] = []
    size = 0
    lines = _lines(stream)
    for lineno, raw in lines:
        raws.append(raw)
        if raw.strip():
            head.append((lineno, from_json(raw, f"line {lineno}")))
            size += len(raw)
            if len(head) >= CHUNK_EVENTS or size >= CHUNK_BYTES:
                break
    else:
        return head, None
    import tempfile

    from evolog.eventlog import now_us
    from evolog.eventlog.wal import prepare_one

    spill = tempfile.TemporaryFile()  # noqa: SIM115 - returned open; in $TMPDIR, never the store
    try:
        now = now_us()
        for lineno, event in head:
            prepare_one(event, now, f"line {lineno}", validated=True)
        spill.writelines(_ended(r) for r in raws)
        del head[:], raws[:]
        for lineno, raw in lines:
            if raw.strip():
                # The checks the commit will make (time range, statuses, size), made now,
                # so a bad line anywhere leaves the store untouched.
                prepare_one(from_json(raw, f"line {lineno}"), now, f"line {lineno}", True)
            spill.write(_ended(raw))
        spill.seek(0)
    except BaseException:
        spill.close()
        raise
    return [], spill


def _ended(raw: bytes) -> bytes:
    return raw if raw.endswith(b"\n") else raw + b"\n"


def _append_spilled(
    spill: IO[bytes], store: str, durability: str, lock: dict[str, Any] | None = None
) -> int:
    """Append the validated spill file in atomic batches, reporting a resume point."""
    done = [0]  # the last input line committed with every line before it (set in the commit)
    with CommitGuard() as guard:
        try:
            with EventLog(store, durability=durability, auto_seal="off", **(lock or {})) as log:  # type: ignore[arg-type]
                out = Receipts(log, single=False)
                sealer = _Sealer(log)
                try:
                    batch: list[AnyEvent] = []
                    for lineno, raw in _lines(spill):
                        if raw.strip():
                            batch.append(from_json(raw, f"line {lineno}"))
                        if len(batch) >= CHUNK_EVENTS:
                            _commit_batch(log, out, guard, batch, lineno, done)
                            batch = []
                            sealer.after_batch()
                            if guard.pending:
                                break
                    else:
                        _commit_batch(log, out, guard, batch, lineno, done)
                        sealer.after_batch()
                finally:
                    out.close()
        except KeyboardInterrupt:
            _report(done[0], "interrupted")
            return 130
        except (EventLogError, OSError):
            _report(done[0], "failed")
            raise
    if guard.pending:
        _report(done[0], "interrupted")
        return 130
    return 0


class _Sealer:
    """At most one background seal at a time while a large input streams in: with the
    log's own auto-seal, every batch past the threshold would start another seal process
    while the first one still runs."""

    def __init__(self, log: EventLog) -> None:
        self.log = log
        self.proc: Any = None

    def after_batch(self) -> None:
        if (self.proc is None or self.proc.poll() is not None) and self.log.seal_due():
            self.proc = self.log.seal_in_background()


def _commit_batch(
    log: EventLog,
    out: Receipts,
    guard: CommitGuard,
    batch: list[AnyEvent],
    last: int,
    done: list[int],
) -> None:
    """Commit ``batch`` (input lines up to ``last``) and record it in ``done``, with
    Ctrl-C held from before the write until both are recorded."""
    guard.critical = True
    try:
        if batch:
            out.write(batch, log.append_receipts(batch, "event ", validated=True))
        done[0] = last
    finally:
        guard.critical = False


def _report(done: int, what: str) -> None:
    if done:
        print(
            f"evolog: {what} after input lines 1-{done} were appended (their receipts are "
            f"printed); resume with the rest: tail -n +{done + 1}",
            file=sys.stderr,
        )
    else:
        print(f"evolog: {what}; nothing was appended", file=sys.stderr)
