"""``verify``: checksums, seq continuity, manifest against files. Reads only.

Segments are checked in full (:mod:`eventlog.sealed._segcheck`): content hash, page checksums,
rows, gap-free seqs and the ts range against the manifest.
"""

from __future__ import annotations

import os
import struct

import msgspec
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ._checked import scan
from ._errors import EventLogError
from ._store import Paths
from .index import _idindex as idx
from .schema._codec import decode_array
from .sealed._manifest import FileCommitter, SegmentInfo
from .sealed._segcheck import check_segment
from .sealed._segments import DAMAGE
from .wal import _frames as fr
from .wal import _wal


class VerifyReport(msgspec.Struct):
    """``ok`` is False when any problem was found; notes are harmless observations."""

    ok: bool
    events: int
    segments: int
    wal_files: int
    problems: list[str]
    notes: list[str]


def verify(paths: Paths) -> VerifyReport:
    problems: list[str] = []
    notes: list[str] = []
    try:
        manifest = FileCommitter(paths.manifest).load()
    except EventLogError as exc:
        return VerifyReport(False, 0, 0, 0, [str(exc)], [])
    expect = 1
    for info in manifest.segments:
        if info.first_seq != expect:
            problems.append(f"{info.file}: expected first seq {expect}; got {info.first_seq}")
        problems.extend(check_segment(paths.segments, info)[0])
        expect = info.last_seq + 1
    if manifest.segments and manifest.sealed_seq != manifest.segments[-1].last_seq:
        problems.append(
            f"manifest: sealed_seq {manifest.sealed_seq} does not match the last segment "
            f"({manifest.segments[-1].last_seq})"
        )
    if manifest.legacy and manifest.segments:
        notes.append(
            "manifest: written by an older evolog, so segments have no content hashes "
            "(checked and added by the next seal or compaction)"
        )
    listed = {s.file for s in manifest.segments} | {g.file for g in manifest.garbage}
    for name in sorted(os.listdir(paths.segments)):
        if name not in listed:
            notes.append(
                f"segments/{name}: not in the manifest (not part of the log: left by an "
                "interrupted seal or compaction; safe to delete)"
            )
    wal_files = _wal.list_wal(paths.wal)
    tail_ids: list[str] = []
    head = _check_wal(wal_files, manifest.sealed_seq, problems, notes, tail_ids)
    problems.extend(_duplicate_ids(paths, manifest.segments, tail_ids))
    events = max(head, manifest.sealed_seq)
    indexed = _indexed_seq(paths)
    if indexed > events:
        problems.append(
            f"wal: the log ends at seq {events} but the id index recorded seqs up to "
            f"{indexed}; seqs {events + 1}..{indexed} are missing (a deleted or cut WAL file)"
        )
    _check_caches(paths, problems, notes)
    return VerifyReport(
        not problems, events, len(manifest.segments), len(wal_files), problems, notes
    )


def _check_caches(paths: Paths, problems: list[str], notes: list[str]) -> None:
    """Damaged cache files are problems (none is trusted: each is rebuilt from the log on
    its next use); damage that readers already found and rebuilt is a note."""
    damaged, noted = scan(paths.cache)
    problems.extend(
        f"cache/{name}: damaged (its checksum does not match); not used, rebuilt from the "
        "log on next use (or delete it)"
        for name in damaged
    )
    notes.extend(f"cache damage found and rebuilt: {line}" for line in noted[-20:])


# The id index's first 64 bytes (every version): magic, ntables, covered_seq, synced_seq,
# boot id, count, store stamp.
_INDEX_HEAD = struct.Struct("<8sQQQ16sQ8s")


def _indexed_seq(paths: Paths) -> int:
    """The newest seq the id index says the log holds (0 when it cannot tell), read
    without writing: the index is the writers' cache and records only appended seqs."""
    try:
        with open(os.path.join(paths.id_index, "000.idx"), "rb") as f:
            header = f.read(idx.HEADER_SIZE)
        stamp = idx.store_stamp(paths.marker)
    except OSError:
        return 0
    if not idx.header_sound(header):
        return 0  # damaged or of another version: the writer rebuilds it from the log
    _, _, covered, synced, boot, _, index_stamp = _INDEX_HEAD.unpack_from(header)
    if index_stamp != stamp:
        return 0  # a cache of another store (or of a copy): the writer starts it again
    # After a reboot only what a seal fsynced is trusted (as the writer does).
    return int(covered if boot == idx.current_boot_id() else min(covered, synced))


def _duplicate_ids(paths: Paths, segments: list[SegmentInfo], tail_ids: list[str]) -> list[str]:
    """Idempotency means an id is in the log once; say so if it is not."""
    chunks = [pa.array(tail_ids, pa.string())]
    for info in segments:
        path = os.path.join(paths.segments, info.file)
        try:
            chunks.extend(pq.read_table(path, columns=["id"])["id"].chunks)
        except DAMAGE:
            continue  # reported by the segment check
    counts = pc.value_counts(pa.chunked_array(chunks, pa.string()).combine_chunks())
    dup = counts.filter(pc.greater(counts.field("counts"), 1))
    if len(dup) == 0:
        return []
    first = dup[0].as_py()
    return [f"{len(dup)} ids appear more than once (e.g. {first['values']!r} x{first['counts']})"]


def _check_wal(
    files: list[tuple[int, str]],
    sealed: int,
    problems: list[str],
    notes: list[str],
    ids: list[str],
) -> int:
    expect = sealed + 1
    head = 0
    for base, path in files:
        with open(path, "rb") as f:
            data = f.read()
        name = os.path.basename(path)
        if fr.read_base(data) != base:
            problems.append(f"wal/{name}: bad header")
            continue
        result = fr.scan(data, fr.FILE_HEADER.size, len(data))
        if result.committed_end != len(data):
            # The seq after this file's own last whole frame, not the one it started at:
            # the frames after damage are looked for by their seqs.
            after = result.frames[-1].last_seq + 1 if result.frames else max(expect, base)
            damage = fr.damage(data, result.stopped_at, len(data), after)
            if damage is not None:
                problems.append(f"wal/{name}: damaged frame ({damage})")
            else:
                notes.append(
                    f"wal/{name}: torn tail of {len(data) - result.committed_end} bytes "
                    "(an interrupted append; cut at the next write)"
                )
        for frame in result.frames:
            if frame.last_seq <= sealed:
                continue
            if frame.seq != expect:
                problems.append(f"wal/{name}: expected seq {expect}; got {frame.seq}")
            expect = frame.seq + frame.n
            head = frame.last_seq
            try:
                events = decode_array(fr.array_header(frame.n) + frame.body)
            except msgspec.MsgspecError as exc:
                problems.append(
                    f"wal/{name}: seqs {frame.seq}..{frame.last_seq} do not decode ({exc})"
                )
                continue
            ids.extend(e.id for e in events)
    return head
