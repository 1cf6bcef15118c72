"""Snapshot readers: a consistent, gap-free prefix of the log while writers go on.

A snapshot is a manifest plus every WAL file open at a fixed length. WAL files are opened
before the manifest is read again, and the snapshot is retried if a seal committed in
between, so no record can fall between a sealed segment and the tail. Open descriptors keep
WAL files readable after a seal deletes them; replaced segments are deleted only after a
grace period (see :mod:`evolog.eventlog.sealed._manifest`).
"""

from __future__ import annotations

import contextlib
import os
from typing import NamedTuple

import msgspec

from ._errors import CorruptLogError
from ._store import Paths
from .schema._codec import decode_array
from .schema._union import AnyEvent
from .sealed._manifest import FileCommitter, Manifest, SegmentInfo
from .wal import _wal
from .wal._frames import Frame, events_data
from .wal._tail import frames_after


class TailRecords(NamedTuple):
    """WAL events of a snapshot, seqs ``first .. first+n-1``, as one msgpack array.

    ``data`` decodes with any msgspec decoder of a list (events, or lighter Structs that
    read only some fields); the i-th element has seq ``first + i``.
    """

    first: int
    n: int
    data: bytes

    @property
    def seqs(self) -> range:
        return range(self.first, self.first + self.n)


class Snapshot:
    """An immutable view of the log; close it (or use ``with``) to release descriptors."""

    def __init__(self, paths: Paths, manifest: Manifest, wals: list[_wal.WalFile]) -> None:
        self.paths = paths
        self.manifest = manifest
        self._wals = wals
        self._frames: list[Frame] | None = None

    @classmethod
    def take(cls, paths: Paths) -> Snapshot:
        committer = FileCommitter(paths.manifest)
        for _ in range(100):
            stamp = committer.version_stamp()
            manifest = committer.load()
            wals = _open_wals(paths.wal)
            if wals is not None and committer.version_stamp() == stamp:
                return cls(paths, manifest, wals)
            for w in wals or []:
                os.close(w.fd)
        raise CorruptLogError(f"{paths.root}: could not take a stable snapshot")

    def __enter__(self) -> Snapshot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for w in self._wals:
            with contextlib.suppress(OSError):
                os.close(w.fd)
        self._wals = []

    # -- the tail ------------------------------------------------------------------------
    def tail_frames(self) -> list[Frame]:
        """Committed WAL frames newer than the sealed segments, in seq order, gap-checked."""
        if self._frames is None:
            sealed = self.manifest.sealed_seq
            frames = [f for w in self._wals for f in _wal.read_frames(w) if f.last_seq > sealed]
            # A frame never straddles the sealed seq: seals take whole WAL files.
            _wal.check_consecutive(frames, sealed, self.paths.root)
            self._frames = frames
        return self._frames

    def _frames_after(self, after: int) -> tuple[int, list[Frame]]:
        """(head seq, the frames holding seqs > ``after``): read backwards when few."""
        sealed = self.manifest.sealed_seq
        threshold = max(after, sealed)
        if self._frames is None:
            found = frames_after(self._wals, threshold)
            if found is not None:
                # Sealed WAL files a crashed seal left behind hold only seqs <= sealed.
                return max(found[0], sealed), found[1]
        frames = self.tail_frames()
        head = frames[-1].last_seq if frames else self.manifest.sealed_seq
        return head, [f for f in frames if f.last_seq > threshold]

    def tail_records(self, after: int = 0) -> TailRecords:
        """The WAL events with seq > ``after`` (and past the sealed segments), undecoded.

        Reading costs what the events past ``after`` cost, not the whole WAL.
        """
        threshold = max(after, self.manifest.sealed_seq)
        _, frames = self._frames_after(threshold)
        count, data = events_data(frames, threshold)
        return TailRecords(threshold + 1, count, data)

    def tail_events(self, after: int = 0) -> list[AnyEvent]:
        """The WAL events with seq > ``after`` (and past the sealed segments), decoded."""
        records = self.tail_records(after)
        events = decode_array(records.data) if records.n else []
        for seq, e in zip(records.seqs, events, strict=True):
            msgspec.structs.force_setattr(e, "seq", seq)
        return events

    @property
    def head_seq(self) -> int:
        """The newest seq visible in this snapshot (0 for an empty log)."""
        return self._frames_after(1 << 62)[0]

    @property
    def segments(self) -> list[SegmentInfo]:
        return list(self.manifest.segments)

    def segment_paths(self) -> list[str]:
        return [os.path.join(self.paths.segments, s.file) for s in self.manifest.segments]


def _open_wals(directory: str) -> list[_wal.WalFile] | None:
    out: list[_wal.WalFile] = []
    for base, path in _wal.list_wal(directory):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            for w in out:
                os.close(w.fd)
            return None  # a seal deleted it between listdir and open: retry
        out.append(_wal.WalFile(base, path, fd, os.fstat(fd).st_size))
    return out
