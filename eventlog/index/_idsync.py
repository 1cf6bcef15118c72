"""Keeping the id index true to the log: catching it up, checking its answers, rebuilding it.

The index lags the log when a writer was killed between its write and its insert, when the
index was deleted or belongs to another store, after a reboot (only what a seal fsynced is
trusted), and on purpose: a writer under ``always`` inserts its ids in small groups rather
than one by one (see :class:`eventlog.wal._writer.Writer`). Whoever next needs the index inserts
what it misses, from the newest WAL frames (read backwards), or from the sealed segments
when the index lost more than the WAL holds.

The index only ever says "seen before" for an id the log confirms: a hit in the WAL is read
back and its id compared (cheap, and only duplicates pay it). A hit in a sealed segment is
read back only when the index is suspect there (after a reboot, see
:attr:`IdIndex.suspect_after`): reading Parquet would load pyarrow into every hook process,
and the other ways a sealed hit could be wrong, flipped bits, are caught by the slot checks.
An index that fails a check is rebuilt from the log, and the rebuild is logged.
"""

from __future__ import annotations

import os

import msgspec

from .._errors import CorruptLogError
from .._store import Paths
from ..schema._codec import now_us
from ..sealed._manifest import FileCommitter, Manifest
from ..wal import _frames as fr
from ..wal import _wal
from ..wal._tail import frames_after
from ._idindex import IdIndex, IndexDamage, store_stamp


class _IdOnly(msgspec.Struct):
    id: str = ""


_id_decoder = msgspec.msgpack.Decoder(list[_IdOnly])


def open_index(paths: Paths) -> IdIndex:
    """The store's id index, started again if it is new, damaged or another store's."""
    index = IdIndex(paths.id_index)
    stamp = store_stamp(paths.marker)
    if index.damage is not None:
        _report(paths, index.damage)
        index.reset(stamp)
    elif index.stamp != stamp:
        index.reset(stamp)  # new, or a cache of another store: rebuilt from the log
    index.check_boot()
    return index


def lookup(paths: Paths, index: IdIndex, event_id: str, limit: int, head: int) -> int:
    """The seq of ``event_id`` below ``limit`` as the log confirms it, or 0.

    ``head`` is the newest seq in the log: a wrong index is rebuilt up to it.
    """
    try:
        seq = index.lookup(event_id, limit)
        if seq == 0:
            return 0  # a miss needs no check: the caller appends, which repairs the slot
        why = "a slot failed its check" if seq < 0 else _disagreement(paths, index, event_id, seq)
    except IndexDamage as exc:
        why = str(exc)
    if why is None:
        return seq
    rebuild(paths, index, head, why)
    return max(index.lookup(event_id, limit), 0)


def rebuild(paths: Paths, index: IdIndex, head: int, why: str) -> None:
    """Start the index again and refill it from the log up to ``head``."""
    _report(paths, why)
    index.reset(store_stamp(paths.marker))
    _catch_up(paths, index, head)


def catch_up(paths: Paths, index: IdIndex, head: int) -> None:
    """Insert every id with a seq up to ``head`` that the index misses."""
    try:
        _catch_up(paths, index, head)
    except IndexDamage as exc:
        rebuild(paths, index, head, str(exc))


def _report(paths: Paths, why: str) -> None:
    import logging  # only on the rare rebuild path

    logging.getLogger("evolog.eventlog").warning(
        "rebuilding the id index of %s from the log: %s", paths.root, why
    )
    line = msgspec.json.encode({"at_us": now_us(), "index_rebuilt": why})
    try:
        with open(paths.recovery_log, "ab") as f:
            f.write(line + b"\n")
    except OSError:
        pass  # the note is a courtesy; the rebuild itself is what matters


def _disagreement(paths: Paths, index: IdIndex, event_id: str, seq: int) -> str | None:
    """None if the log holds ``event_id`` at ``seq`` (or cannot cheaply say), else why not."""
    from .._snapshot import Snapshot  # only duplicates get here

    with Snapshot.take(paths) as snap:
        if seq > snap.manifest.sealed_seq:
            records = snap.tail_records(seq - 1)
            ids = _id_decoder.decode(records.data) if records.n else []
            got = ids[0].id if ids else None
        else:
            suspect = index.suspect_after
            if suspect is None or seq <= suspect:
                return None
            got = _sealed_id(paths, snap.manifest, seq)
    if got == event_id:
        return None
    held = "no event" if got is None else f"id {got!r}"
    return f"it maps id {event_id!r} to seq {seq}, where the log holds {held}"


def _sealed_id(paths: Paths, manifest: Manifest, seq: int) -> str | None:
    import pyarrow.parquet as pq

    for info in manifest.segments:
        if info.first_seq <= seq <= info.last_seq:
            path = os.path.join(paths.segments, info.file)
            table = pq.read_table(path, columns=["seq", "id"], filters=[("seq", "=", seq)])
            return str(table["id"][0].as_py()) if table.num_rows == 1 else None
    return None


def _catch_up(paths: Paths, index: IdIndex, head: int) -> None:
    for _ in range(100):
        manifest = FileCommitter(paths.manifest).load()
        covered = index.covered_seq
        try:
            if covered < manifest.sealed_seq:
                _insert_sealed_ids(paths, manifest, covered, index)
                index.sync(manifest.sealed_seq)
                covered = manifest.sealed_seq
            _insert_wal_ids(paths, index, covered)
        except FileNotFoundError:
            continue  # a seal or compaction moved records meanwhile: read the new manifest
        index.set_covered(head)
        return
    raise CorruptLogError(f"{paths.root}: could not rebuild the id index")


def _insert_wal_ids(paths: Paths, index: IdIndex, covered: int) -> None:
    wals: list[_wal.WalFile] = []
    try:
        for base, path in _wal.list_wal(paths.wal):
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            wals.append(_wal.WalFile(base, path, fd, os.fstat(fd).st_size))
        # Usually a few frames behind: read them from the end rather than the whole WAL.
        found = frames_after(wals, covered)
        if found is not None:
            frames = found[1]
        else:
            frames = [f for w in wals for f in _wal.read_frames(w) if f.last_seq > covered]
        items: list[tuple[str, int]] = []
        for frame in frames:
            ids = _id_decoder.decode(fr.array_header(frame.n) + frame.body)
            items += [(x.id, seq) for seq, x in enumerate(ids, frame.seq) if seq > covered]
        index.insert_many(items)
    finally:
        for w in wals:
            os.close(w.fd)


def _insert_sealed_ids(paths: Paths, manifest: Manifest, after: int, index: IdIndex) -> None:
    """Insert the ids of sealed events with seq > ``after`` (rebuilding a lost index)."""
    # Only a lost or foreign index gets here, never a normal append: pyarrow is loaded late.
    from ..sealed._segments import read_part

    for info in manifest.segments:
        if info.last_seq <= after:
            continue
        if not os.path.exists(os.path.join(paths.segments, info.file)):
            raise FileNotFoundError(info.file)  # a compaction retired it meanwhile: retry
        table = read_part(paths.segments, info, columns=["seq", "id"])
        pairs = zip(table["id"].to_pylist(), table["seq"].to_pylist(), strict=True)
        index.insert_many([(eid, seq) for eid, seq in pairs if seq > after])
