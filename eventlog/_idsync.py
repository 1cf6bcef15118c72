"""Bringing the id index up to the log: the ids of events appended but not yet indexed.

The index lags the log when a writer was killed between its write and its insert, when the
index was deleted or belongs to another store, after a reboot (only what a seal fsynced is
trusted), and on purpose: a writer under ``always`` inserts its ids in small groups rather
than one by one (see :class:`eventlog._writer.Writer`). Whoever next needs the index inserts
what it misses, from the newest WAL frames (read backwards), or from the sealed segments
when the index lost more than the WAL holds.
"""

from __future__ import annotations

import os

import msgspec

from . import _frames as fr
from . import _wal
from ._errors import CorruptLogError
from ._idindex import IdIndex
from ._manifest import FileCommitter, Manifest
from ._store import Paths
from ._tail import frames_after


class _IdOnly(msgspec.Struct):
    id: str = ""


_id_decoder = msgspec.msgpack.Decoder(list[_IdOnly])


def catch_up(paths: Paths, index: IdIndex, head: int) -> None:
    """Insert every id with a seq up to ``head`` that the index misses."""
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
    from ._segments import read_part

    for info in manifest.segments:
        if info.last_seq <= after:
            continue
        if not os.path.exists(os.path.join(paths.segments, info.file)):
            raise FileNotFoundError(info.file)  # a compaction retired it meanwhile: retry
        table = read_part(paths.segments, info, columns=["seq", "id"])
        pairs = zip(table["id"].to_pylist(), table["seq"].to_pylist(), strict=True)
        index.insert_many([(eid, seq) for eid, seq in pairs if seq > after])
