"""Sealing the WAL into Parquet segments, compaction, and garbage collection.

Seal, step by step, and what a crash at each step leaves behind:

1. rotate the WAL (under the write lock): the active file loses its write permission
   (how other writers tell, see evolog.eventlog.wal._active), then appends continue in a new file
   -- a crash between the two leaves a read-only newest file: its next writer makes the
   new file;
2. write the segment to a temp name, fsync, rename, fsync the directory
   -- a crash leaves a file the manifest does not list: ignored, collected later;
3. fsync the id index up to the sealed seq;
4. commit the manifest (the atomic rename is the commit point)
   -- before it, the WAL still holds every record; after it, WAL records with
   seq <= sealed_seq are recognised as sealed and skipped, so nothing is duplicated;
5. delete the sealed WAL files -- a crash leaves files whose records are all sealed:
   skipped by readers, deleted by the next seal.

The manifest is loaded (and checked: see :mod:`eventlog.sealed._manifest`) before anything else,
so nothing runs on a damaged one. Garbage collection deletes only the files a manifest
retired into ``garbage`` (and temp files of interrupted writes): a segment the manifest does
not list is never deleted on the manifest's word alone.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from concurrent.futures import Future
from typing import NamedTuple

import msgspec
import pyarrow as pa

from .._errors import CorruptLogError
from .._files import FileLock, fsync_dir, os_errors_as_storage
from .._store import Paths
from ..schema._codec import now_us
from ..wal import _wal
from ..wal._frames import Frame
from ..wal._writer import Writer
from ._bodies import Buffer, bodies_to_table
from ._manifest import FileCommitter, Garbage, Manifest, SegmentInfo
from ._segcheck import check_segment
from ._segments import TMP_SUFFIX, SegmentWriter, read_segment, write_segment

#: Rows per sealed segment: one row group each. A segment is finished on its own thread while
#: the next one is converted, so two segments' Parquet encoding use both cores; with two row
#: groups per segment the second group could only start once the first was written.
SEAL_CHUNK_ROWS = 128 * 1024
IN_FLIGHT = 2
#: Events converted at a time. Small enough that a group's column buffers (or, on the
#: Python way, its decoded objects) stay in the CPU caches and reuse the memory the previous
#: group freed: decoding a whole WAL at once sealed at half the speed (121k against 247k
#: events/s on the demo mix, Python way).
DECODE_EVENTS = 16 * 1024
GRACE_SECONDS = 300.0


class SealResult(NamedTuple):
    """What a seal moved: ``segments`` written holding ``rows`` events, the last of them
    ``sealed_seq``, in ``seconds``."""

    segments: int
    rows: int
    sealed_seq: int
    seconds: float


class CompactResult(NamedTuple):
    """What a compaction did: ``merged_segments`` read into ``new_segments`` holding the
    same ``rows`` (events and seqs unchanged), in ``seconds``."""

    merged_segments: int
    new_segments: int
    rows: int
    seconds: float


def seal(paths: Paths, writer: Writer) -> SealResult:
    """Move every WAL record present now into Parquet segments."""
    start = time.perf_counter()
    lock = FileLock(paths.seal_lock, writer.lock_wait)
    try:
        with lock.held(), os_errors_as_storage(f"sealing {paths.root}"):
            committer = FileCommitter(paths.manifest)
            manifest = committer.load()
            upgraded = upgrade(paths, manifest)
            new_base = writer.rotate()
            old = [(b, p) for b, p in _wal.list_wal(paths.wal) if b < new_base]
            infos, rows = _seal_files(paths, manifest.sealed_seq, old)
            if infos:
                sealed = infos[-1].last_seq
                writer.sync_index(sealed)
            if infos or upgraded is not manifest:
                manifest = msgspec.structs.replace(
                    upgraded,
                    version=manifest.version + 1,
                    sealed_seq=infos[-1].last_seq if infos else manifest.sealed_seq,
                    segments=[*upgraded.segments, *infos],
                )
                committer.commit(manifest)
            for _, path in old:
                os.unlink(path)
            if old:
                fsync_dir(paths.wal)
            collect_garbage(paths, committer)
    finally:
        lock.close()
    return SealResult(len(infos), rows, manifest.sealed_seq, time.perf_counter() - start)


def _seal_files(
    paths: Paths, sealed_seq: int, files: list[tuple[int, str]]
) -> tuple[list[SegmentInfo], int]:
    frames: list[Frame] = []
    for base, path in files:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            wal = _wal.WalFile(base, path, fd, os.fstat(fd).st_size)
            frames.extend(f for f in _wal.read_frames(wal, mapped=True) if f.last_seq > sealed_seq)
        finally:
            os.close(fd)
    _wal.check_consecutive(frames, sealed_seq, "seal")
    infos: list[SegmentInfo] = []
    rows = 0
    segment: SegmentWriter | None = None
    finishing: list[tuple[SegmentWriter, Future[SegmentInfo]]] = []
    try:
        for group in _frame_groups(frames, sealed_seq):
            skip = max(0, sealed_seq + 1 - group[0].seq)
            count = group[-1].last_seq - group[0].seq + 1 - skip
            segment = segment or SegmentWriter(paths.segments)
            bodies = [f.body for f in group]
            segment.write(_convert(files, bodies, skip, count, group[0].seq + skip))
            rows += count
            if segment.rows >= SEAL_CHUNK_ROWS:
                # Finished on its own thread while the next segment is converted; at most
                # IN_FLIGHT at a time bounds the memory and threads a long WAL can take.
                finishing.append((segment, segment.finish_async()))
                segment = None
                if len(finishing) >= IN_FLIGHT:
                    infos.append(finishing.pop(0)[1].result())
        if segment is not None:
            finishing.append((segment, segment.finish_async()))
            segment = None
        infos.extend(done.result() for _, done in finishing)
    finally:
        for writer in [s for s, _ in finishing] + ([segment] if segment else []):
            writer.abort()  # a finished segment: only its thread ends
    return infos, rows


def _convert(
    files: list[tuple[int, str]], bodies: list[Buffer], skip: int, count: int, first: int
) -> pa.Table:
    try:
        return bodies_to_table(bodies, skip, count, first)
    except (msgspec.MsgspecError, TypeError, ValueError, OverflowError) as exc:
        # Checksummed frames that are not events of this schema (a map with non-string keys
        # under a free-form field, say: written by a damaged or foreign writer): refuse the
        # seal with one line naming the WAL file, never a bare TypeError or a half seal.
        path = next((p for b, p in reversed(files) if b <= first), files[0][1])
        raise CorruptLogError(
            f"{path}: seqs {first}..{first + count - 1}: expected events of this schema; got "
            f"records that do not convert ({type(exc).__name__}: {' '.join(str(exc).split())})"
        ) from None


def upgrade(paths: Paths, manifest: Manifest) -> Manifest:
    """A format-1 manifest with a content hash for every segment, each checked in full
    first (a hash must never bless damage); the same manifest if there is nothing to do."""
    if not manifest.legacy:
        return manifest
    segments = []
    for info in manifest.segments:
        problems, digest = check_segment(paths.segments, info)
        if problems:
            raise CorruptLogError(
                f"{paths.manifest}: cannot add content hashes to a damaged segment: "
                f"{problems[0]} (run `evolog verify`)"
            )
        segments.append(msgspec.structs.replace(info, hash=digest))
    return msgspec.structs.replace(manifest, segments=segments)


def _frame_groups(frames: list[Frame], after: int) -> Iterator[list[Frame]]:
    """Consecutive frames holding about :data:`DECODE_EVENTS` events newer than ``after``."""
    group: list[Frame] = []
    count = 0
    for f in frames:
        group.append(f)
        count += f.last_seq - max(f.seq, after + 1) + 1
        if count >= DECODE_EVENTS:
            yield group
            group, count = [], 0
    if group:
        yield group


def compact(paths: Paths, small_rows: int = 100_000, target_rows: int = 1_000_000) -> CompactResult:
    """Merge runs of adjacent small segments; events and seqs are unchanged."""
    start = time.perf_counter()
    lock = FileLock(paths.seal_lock)
    merged = created = rows = 0
    try:
        with lock.held(), os_errors_as_storage(f"compacting {paths.root}"):
            committer = FileCommitter(paths.manifest)
            loaded = committer.load()
            manifest = upgrade(paths, loaded)
            out: list[SegmentInfo] = []
            garbage = list(manifest.garbage)
            for run in _runs(manifest.segments, small_rows, target_rows):
                if len(run) < 2:
                    out.extend(run)
                    continue
                table = pa.concat_tables([read_segment(paths.segments, s) for s in run])
                out.append(write_segment(paths.segments, table))
                garbage.extend(Garbage(s.file, now_us()) for s in run)
                merged += len(run)
                created += 1
                rows += table.num_rows
            if created or manifest is not loaded:
                committer.commit(
                    msgspec.structs.replace(
                        manifest, version=manifest.version + 1, segments=out, garbage=garbage
                    )
                )
            collect_garbage(paths, committer)
    finally:
        lock.close()
    return CompactResult(merged, created, rows, time.perf_counter() - start)


def _runs(
    segments: list[SegmentInfo], small_rows: int, target_rows: int
) -> list[list[SegmentInfo]]:
    runs: list[list[SegmentInfo]] = []
    current: list[SegmentInfo] = []
    total = 0
    for s in segments:
        if s.rows >= small_rows or total + s.rows > target_rows:
            if current:
                runs.append(current)
            current, total = [], 0
            if s.rows >= small_rows:
                runs.append([s])
                continue
        current.append(s)
        total += s.rows
    if current:
        runs.append(current)
    return runs


def collect_garbage(paths: Paths, committer: FileCommitter, grace: float = GRACE_SECONDS) -> int:
    """Delete the files the manifest retired more than ``grace`` seconds ago, and temp
    files of interrupted segment writes as old. Nothing else: an unlisted segment (left by
    a seal that crashed before its commit) stays until someone deletes it by hand."""
    manifest: Manifest = committer.load()
    cutoff = now_us() - int(grace * 1_000_000)
    keep = [g for g in manifest.garbage if g.since_us > cutoff]
    doomed = [g.file for g in manifest.garbage if g.since_us <= cutoff]
    if doomed:
        # Committed first: a crash after it leaves files nothing lists, never a list of
        # files that are gone.
        committer.commit(
            msgspec.structs.replace(manifest, version=manifest.version + 1, garbage=keep)
        )
    deleted = 0
    for name in doomed:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(paths.segments, name))
            deleted += 1
    old = time.time() - grace
    for name in os.listdir(paths.segments):
        path = os.path.join(paths.segments, name)
        if name.endswith(TMP_SUFFIX) and os.stat(path).st_mtime < old:
            os.unlink(path)
    return deleted
