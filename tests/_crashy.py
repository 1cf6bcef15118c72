"""A writer process for the crash, concurrency and disk-full tests (run as a script).

Every mode appends events with predictable ids and writes one line ``seq id`` to the ack
file for each event *after* the append returned, so the parent knows exactly which events
were acknowledged when it kills this process.

Modes::

    append    one event per append, ids P-0, P-1, ...
    batches   append_many of 1..--batch-max events, ids P-b<batch>-of<size>-<j>
    group     (with --durability batch) one append per event without an id, text P-0,
              P-1, ...; flush after every 1..--batch-max, then ack them as ``seq text``
              and pause --pause-ms
    seal      like append, sealing every --seal-every events
    compact   like seal, compacting after every seal
    fsize     like append, under RLIMIT_FSIZE=--fsize-limit with SIGXFSZ ignored (0: no
              limit, for a really full disk), until a StorageError; prints
              ``storage-error <message>`` then exits 0
    fsize-seal  append --count events, then seal under RLIMIT_FSIZE=--fsize-limit; prints
              ``storage-error <message>`` or ``sealed``
    crashpoint  append --count events in two halves, sealing the first (and for
              ``--op compact`` the second), then run --op (seal or compact) with SIGKILL sent
              to itself before its --crash-at'th durable file operation; prints
              ``completed`` if the operation finished first

``--count`` stops after that many events (default: run until killed). ``--ready`` prints
``ready`` once the log is open, so the parent can time its kill from there.
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

from evolog.eventlog import EventLog, Note, StorageError


def _parse() -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("mode")
    p.add_argument("store")
    p.add_argument("ack")
    p.add_argument("--prefix", default="x")
    p.add_argument("--count", type=int, default=0)
    p.add_argument("--batch-max", type=int, default=40)
    p.add_argument("--seal-every", type=int, default=25)
    p.add_argument("--text-bytes", type=int, default=64)
    p.add_argument("--durability", default="always")
    p.add_argument("--fsize-limit", type=int, default=0)
    p.add_argument("--group-size", type=int, default=1000)
    p.add_argument("--pause-ms", type=float, default=0, help="group: pause after each flush")
    p.add_argument("--op", default="seal")
    p.add_argument("--crash-at", type=int, default=0)
    p.add_argument("--ready", action="store_true")
    p.add_argument("--frame-bytes", type=int, default=0, help="cut batches into small frames")
    p.add_argument("--row-group-rows", type=int, default=0, help="seal in many small row groups")
    p.add_argument(
        "--coarse-mtime",
        action="store_true",
        help="every WAL file created or deleted leaves wal/'s mtime as it was",
    )
    return p.parse_args()


class Acks:
    """Append-only ack lines, written with one unbuffered write each."""

    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def write(self, pairs: list[tuple[int, str]]) -> None:
        os.write(self.fd, "".join(f"{s} {i}\n" for s, i in pairs).encode())


def _note(eid: str, size: int) -> Note:
    return Note(id=eid, text=(eid + " ") * max(1, size // (len(eid) + 1)))


def run_append(log: EventLog, acks: Acks, a: argparse.Namespace, every: int = 0) -> None:
    i = 0
    while not a.count or i < a.count:
        eid = f"{a.prefix}-{i}"
        seq = log.append(_note(eid, a.text_bytes))
        acks.write([(seq, eid)])
        i += 1
        if every and i % every == 0:
            log.seal()
            if a.mode == "compact":
                log.compact(small_rows=10**9, target_rows=10**9)


def run_batches(log: EventLog, acks: Acks, a: argparse.Namespace) -> None:
    import random

    rnd = random.Random(a.prefix)
    b = 0
    while not a.count or b < a.count:
        size = rnd.randint(1, a.batch_max)
        ids = [f"{a.prefix}-b{b}-of{size}-{j}" for j in range(size)]
        seqs = log.append_many([_note(eid, a.text_bytes) for eid in ids])
        acks.write(list(zip(seqs, ids, strict=True)))
        b += 1


def run_group(log: EventLog, acks: Acks, a: argparse.Namespace) -> None:
    """Group commit: events without ids (the log mints them; their text names them) one
    append at a time, a flush after every run of 1..--batch-max, acked after the flush."""
    import random

    rnd = random.Random(a.prefix)
    i = 0
    while not a.count or i < a.count:
        done = []
        for _ in range(rnd.randint(1, a.batch_max)):
            name = f"{a.prefix}-{i}"
            done.append((log.append(Note(text=name)), name))
            i += 1
        log.flush()
        acks.write(done)
        time.sleep(a.pause_ms / 1000)  # an agent between steps (and a log the test can read)


def _limit_file_size(limit: int) -> None:
    """Writes past ``limit`` bytes fail with EFBIG (0: no limit, the disk decides)."""
    if limit:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def run_fsize(log: EventLog, acks: Acks, a: argparse.Namespace) -> None:
    # The first append creates the WAL file and the (sparse, 1.5 MB) id index; the limit
    # is meant for the WAL's growth, so it is set after that.
    seq = log.append(_note(f"{a.prefix}-0", a.text_bytes))
    acks.write([(seq, f"{a.prefix}-0")])
    _limit_file_size(a.fsize_limit)
    i = 1
    try:
        while True:
            eid = f"{a.prefix}-{i}"
            seq = log.append(_note(eid, a.text_bytes))
            acks.write([(seq, eid)])
            i += 1
    except StorageError as exc:
        print(f"storage-error {exc}", flush=True)


def run_fsize_seal(log: EventLog, acks: Acks, a: argparse.Namespace) -> None:
    ids = [f"{a.prefix}-{i}" for i in range(a.count)]
    seqs = log.append_many([_note(eid, a.text_bytes) for eid in ids])
    acks.write(list(zip(seqs, ids, strict=True)))
    import evolog.eventlog.sealed._seal  # noqa: F401  (pyarrow loads before the limit applies)

    _limit_file_size(a.fsize_limit)
    try:
        log.seal()
    except StorageError as exc:
        print(f"storage-error {exc}", flush=True)
    else:
        print("sealed", flush=True)


_FILE_OPS = ("replace", "rename", "unlink", "fsync", "fdatasync", "ftruncate", "fchmod")


def _arm_crash(at: int) -> None:
    """SIGKILL this process just before its ``at``-th durable file operation."""
    calls = [0]

    def wrap(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def op(*args: Any, **kwargs: Any) -> Any:
            calls[0] += 1
            if calls[0] == at:
                os.kill(os.getpid(), signal.SIGKILL)
            return real(*args, **kwargs)

        return op

    for name in _FILE_OPS:
        setattr(os, name, wrap(name, getattr(os, name)))


def run_crashpoint(log: EventLog, acks: Acks, a: argparse.Namespace) -> None:
    half = a.count // 2
    for start, stop in ((0, half), (half, a.count)):
        ids = [f"{a.prefix}-{i}" for i in range(start, stop)]
        seqs = log.append_many([_note(eid, a.text_bytes) for eid in ids])
        acks.write(list(zip(seqs, ids, strict=True)))
        if start == 0 or a.op == "compact":
            log.seal()
    _arm_crash(a.crash_at)
    if a.op == "seal":
        log.seal()
    else:
        log.compact(small_rows=10**9, target_rows=10**9)
    print("completed", flush=True)


def _coarse_mtime() -> None:
    """A filesystem whose timestamps tick too slowly to tell a rotation: each change to
    wal/ (a new WAL file, a sealed one deleted) keeps the directory's previous mtime."""
    from evolog.eventlog.wal import _wal

    def kept(real: Callable[..., Any], directory: Callable[..., str]) -> Callable[..., Any]:
        def op(*args: Any, **kwargs: Any) -> Any:
            path = directory(*args)
            if os.path.basename(path) != "wal":
                return real(*args, **kwargs)
            st = os.stat(path)
            try:
                return real(*args, **kwargs)
            finally:
                os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))

        return op

    _wal.create = kept(_wal.create, lambda directory, *_: directory)
    os.unlink = kept(os.unlink, lambda path, *_: os.path.dirname(path))


def main() -> int:
    a = _parse()
    if a.coarse_mtime:
        _coarse_mtime()
    if a.frame_bytes:
        from evolog.eventlog.wal import _frames

        _frames.MAX_FRAME_BODY = a.frame_bytes  # a batch then spans many frames
    if a.row_group_rows:
        from evolog.eventlog.sealed import _seal, _segments

        # Many row groups: the seal's background writer thread does most of the writing.
        _segments.ROW_GROUP_ROWS = _seal.DECODE_EVENTS = a.row_group_rows
    acks = Acks(a.ack)
    with EventLog(
        a.store, create=True, durability=a.durability, auto_seal="off", group_size=a.group_size
    ) as log:
        if a.ready:
            print("ready", flush=True)
        if a.mode == "append":
            run_append(log, acks, a)
        elif a.mode in ("seal", "compact"):
            run_append(log, acks, a, every=a.seal_every)
        elif a.mode == "batches":
            run_batches(log, acks, a)
        elif a.mode == "group":
            run_group(log, acks, a)
        elif a.mode == "fsize":
            run_fsize(log, acks, a)
        elif a.mode == "fsize-seal":
            run_fsize_seal(log, acks, a)
        elif a.mode == "crashpoint":
            run_crashpoint(log, acks, a)
        else:
            print(f"unknown mode {a.mode!r}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
