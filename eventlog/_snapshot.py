"""Snapshot readers: a consistent, gap-free prefix of the log while writers go on.

A snapshot is a manifest plus every WAL file open at a fixed length. WAL files are opened
before the manifest is read again, and the snapshot is retried if a seal committed in
between, so no record can fall between a sealed segment and the tail. Open descriptors keep
WAL files readable after a seal deletes them; replaced segments are deleted only after a
grace period (see :mod:`eventlog._manifest`).
"""

from __future__ import annotations

import contextlib
import os

import msgspec

from . import _wal
from ._codec import decode_many
from ._errors import CorruptLogError
from ._frames import Frame
from ._manifest import FileCommitter, Manifest, SegmentInfo
from ._store import Paths
from ._union import AnyEvent


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
            frames = [f for w in self._wals for f in _wal.read_frames(w) if f.seq > sealed]
            expect = sealed + 1
            for f in frames:
                if f.seq != expect:
                    raise CorruptLogError(
                        f"{self.paths.root}: expected seq {expect} in the WAL; got {f.seq}"
                    )
                expect += 1
            self._frames = frames
        return self._frames

    def tail_events(self) -> list[AnyEvent]:
        frames = self.tail_frames()
        events = decode_many([f.body for f in frames]) if frames else []
        for f, e in zip(frames, events, strict=True):
            msgspec.structs.force_setattr(e, "seq", f.seq)
        return events

    @property
    def head_seq(self) -> int:
        """The newest seq visible in this snapshot (0 for an empty log)."""
        frames = self.tail_frames()
        return frames[-1].seq if frames else self.manifest.sealed_seq

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
