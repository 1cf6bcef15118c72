"""The write-ahead tail: numbered WAL files, the newest one active.

Files are named by the first seq they may hold (``<base:020d>.wal``). Sealing rotates to a
new file under the write lock (the old one made read-only first: see evolog.eventlog.wal._active),
then seals and deletes the older files without holding it, so appends never wait for
Parquet. Every method here expects the caller to hold the write
lock, except the read-only helpers.
"""

from __future__ import annotations

import errno
import mmap
import os
import stat
from typing import NamedTuple

from .._errors import CorruptLogError
from .._files import fsync_dir, temp_beside, write_all
from .._store import Paths
from . import _frames as fr

SUFFIX = ".wal"
#: The mark of the active file: a rotation takes the write permission off the file it
#: leaves, which every writer sees in the fstat it makes anyway (no syscall more per
#: append, and no timestamp, which a rotation can share with the previous change).
WRITABLE = stat.S_IWUSR


def wal_name(base: int) -> str:
    return f"{base:020d}{SUFFIX}"


def list_wal(directory: str) -> list[tuple[int, str]]:
    """``(base, path)`` of every WAL file, oldest first."""
    out = []
    for name in os.listdir(directory):
        if name.endswith(SUFFIX) and name[: -len(SUFFIX)].isdigit():
            out.append((int(name[: -len(SUFFIX)]), os.path.join(directory, name)))
    out.sort()
    return out


def read_file(fd: int, size: int) -> bytes:
    return os.pread(fd, size, 0) if size else b""


def _map_file(fd: int, size: int) -> memoryview:
    flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)  # one fault-in, not one a page
    return memoryview(mmap.mmap(fd, size, flags=flags, prot=mmap.PROT_READ))


class Repair(NamedTuple):
    """What recovery cut from a WAL file's tail."""

    path: str
    offset: int
    cut_bytes: int
    dropped_frames: int


def check_tail(path: str, fd: int, size: int, base: int) -> tuple[int, int, Repair | None]:
    """Return ``(next_seq, good_size, repair)`` for a WAL file, cutting a torn tail.

    Fast path: the footer of the last frame names a committed frame, so nothing is read but
    that frame. Otherwise the file is scanned and cut after its last whole append.
    """
    check_header(os.pread(fd, fr.FILE_HEADER.size, 0), path, base)
    if size == fr.FILE_HEADER.size:
        return base, size, None
    tail_len = min(size, (1 << 20) + fr.OVERHEAD + 64)
    tail = os.pread(fd, tail_len, size - tail_len)
    last = fr.last_frame(tail, 0, len(tail)) if size > fr.FILE_HEADER.size else None
    if last is not None and last.end and size - tail_len + last.offset >= fr.FILE_HEADER.size:
        return last.seq + last.n, size, None
    data = read_file(fd, size)
    result = fr.scan(data, fr.FILE_HEADER.size, size)
    next_seq = result.frames[-1].last_seq + 1 if result.frames else base
    if result.committed_end == size:
        return next_seq, size, None
    damage = fr.damage(data, result.stopped_at, size, next_seq)
    if damage is not None:
        raise CorruptLogError(
            f"{path}: {damage}; this is damage inside the log, not a torn tail. "
            "Run `evolog verify`."
        )
    dropped = len(_pending_frames(data, result.committed_end, result.stopped_at))
    os.ftruncate(fd, result.committed_end)
    os.fsync(fd)
    repair = Repair(path, result.committed_end, size - result.committed_end, dropped)
    return next_seq, result.committed_end, repair


def report_repair(recovery_log: str, repair: Repair) -> None:
    """Say what a repair cut: a warning, and a line in the store's recovery log."""
    import logging  # only on the rare repair path

    import msgspec

    from ..schema._codec import now_us

    line = msgspec.json.encode({"at_us": now_us(), **repair._asdict()})
    logging.getLogger("evolog.eventlog").warning(
        "cut a torn WAL tail: %s at byte %d (%d bytes, %d uncommitted frames)",
        repair.path,
        repair.offset,
        repair.cut_bytes,
        repair.dropped_frames,
    )
    with open(recovery_log, "ab") as f:
        f.write(line + b"\n")


def missing_error(paths: Paths, head: int, indexed: int, seen: int) -> CorruptLogError:
    """The error for a log that ends at ``head`` although later seqs were known to exist
    (recorded in the id index up to ``indexed``; seen by this writer up to ``seen``)."""
    if seen > head:
        return CorruptLogError(
            f"{paths.wal}: the log ends at seq {head} but this writer saw seqs up to {seen}; "
            f"seqs {head + 1}..{seen} are missing (a deleted or cut WAL file). Nothing was "
            "appended; run `evolog verify`."
        )
    return CorruptLogError(
        f"{paths.wal}: the log ends at seq {head} but the id index recorded seqs up to "
        f"{indexed}; seqs {head + 1}..{indexed} are missing (a deleted or cut WAL file). "
        f"Nothing was appended. If the log was restored from an older copy on purpose, "
        f"delete {paths.id_index} (a cache, rebuilt from the log) and retry."
    )


def check_header(header: bytes | memoryview, path: str, base: int) -> None:
    """Raise unless ``header`` is this format's header of a WAL file starting at ``base``."""
    if header[:8] == fr.OLD_MAGIC:
        raise CorruptLogError(
            f"{path}: a WAL file of the previous format (one event per frame, evolog 0.1); "
            "run `evolog seal` with evolog 0.1 before opening the store with this release"
        )
    if fr.read_base(header) != base:
        raise CorruptLogError(f"{path}: not a WAL file of base {base}")


def _pending_frames(data: bytes, start: int, stop: int) -> list[fr.Frame]:
    frames = []
    offset = start
    while offset < stop:
        frame = fr.parse_at(data, offset, stop)
        if frame is None:
            break
        frames.append(frame)
        offset += fr.frame_size(frame)
    return frames


def retire(fd: int, directory: str) -> int:
    """Mark a WAL file as rotated away from (no write permission); return its old mode."""
    mode = stat.S_IMODE(os.fstat(fd).st_mode)
    os.fchmod(fd, mode & ~0o222)
    if os.fstat(fd).st_mode & WRITABLE:
        os.fchmod(fd, mode)
        raise OSError(
            errno.ENOTSUP,
            "this filesystem ignores file modes, which tell writers that a seal rotated the "
            "WAL; cannot seal here",
            directory,
        )
    return mode


def create(directory: str, base: int, dsync: bool = False) -> tuple[int, str]:
    """Create a new WAL file atomically (header, fsync, rename, dir fsync); open it."""
    path = os.path.join(directory, wal_name(base))
    tmp = temp_beside(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        mode = os.fstat(fd).st_mode
        if not mode & WRITABLE:  # a umask without it would make the file look retired
            os.fchmod(fd, stat.S_IMODE(mode) | WRITABLE)
        write_all(fd, fr.file_header(base))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(directory)
    return open_append(path, dsync), path


def open_append(path: str, dsync: bool = False) -> int:
    """Open a WAL file for appends; ``dsync``: every write is durable when it returns."""
    return os.open(path, os.O_RDWR | os.O_APPEND | os.O_CLOEXEC | (os.O_DSYNC if dsync else 0))


class WalFile(NamedTuple):
    """One WAL file of a snapshot: an open descriptor and the length to read."""

    base: int
    path: str
    fd: int
    size: int


def read_frames(wal: WalFile, mapped: bool = False) -> list[fr.Frame]:
    """Committed frames of a WAL file up to the snapshot length.

    ``mapped``: the frame bodies are views of the file mapped into memory, not copies. A seal
    reads WAL files no writer appends to or truncates any more (it rotated them away under
    the write lock). Copying costs fresh memory, and page faults are dear on this class of
    machine: a 2e5-event WAL (42 MB) read in 74 ms copied against 15 ms mapped in a fresh
    process (bench/bench_seal_parts.py).
    """
    data = _map_file(wal.fd, wal.size) if mapped and wal.size else read_file(wal.fd, wal.size)
    check_header(data, wal.path, wal.base)
    result = fr.scan(data, fr.FILE_HEADER.size, wal.size, copy=not mapped)
    if result.committed_end != wal.size:
        # A torn tail (a writer mid-append, or killed) is skipped; damage with whole frames
        # after it is not: a reader would silently miss them and a seal would delete them.
        next_seq = result.frames[-1].last_seq + 1 if result.frames else wal.base
        damage = fr.damage(data, result.stopped_at, wal.size, next_seq)
        if damage is not None:
            raise CorruptLogError(
                f"{wal.path}: {damage}; this is damage inside the log. Run `evolog verify`."
            )
    return result.frames


def check_consecutive(frames: list[fr.Frame], sealed: int, where: str) -> None:
    """Raise unless ``frames`` hold the seqs right after ``sealed``, without a gap."""
    expect = sealed + 1
    for f in frames:
        if f.seq != expect:
            raise CorruptLogError(f"{where}: expected seq {expect} in the WAL; got {f.seq}")
        expect += f.n
