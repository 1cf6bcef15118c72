"""The manifest: which Parquet segments make up the sealed log.

Replaced atomically (temp file, fsync, rename, directory fsync): the rename is the commit
point of a seal or a compaction. Files in ``segments/`` that it does not list are ignored.
Files a compaction replaced are kept in ``garbage`` for a grace period so that readers
holding an older snapshot can still open them.

The commit step is kept behind :class:`Committer` so that another table format (an
Iceberg or Delta committer) can replace it without touching the rest of the log.
"""

from __future__ import annotations

import os
from typing import Protocol

import msgspec

from ._errors import CorruptLogError
from ._files import atomic_write

FORMAT = 1


class SegmentInfo(msgspec.Struct, frozen=True):
    """One sealed Parquet segment holding seqs ``first..last`` (inclusive, gap-free)."""

    file: str
    first_seq: int
    last_seq: int
    rows: int
    min_ts: int
    max_ts: int
    bytes: int


class Garbage(msgspec.Struct, frozen=True):
    file: str
    since_us: int


class Manifest(msgspec.Struct, frozen=True):
    format: int = FORMAT
    version: int = 0
    sealed_seq: int = 0
    segments: list[SegmentInfo] = []
    garbage: list[Garbage] = []


_decoder = msgspec.json.Decoder(Manifest)
_encoder = msgspec.json.Encoder()


class Committer(Protocol):
    def load(self) -> Manifest: ...

    def commit(self, manifest: Manifest) -> None: ...


class FileCommitter:
    """Manifest as one JSON file replaced by rename."""

    def __init__(self, path: str) -> None:
        self.path = path

    def load(self) -> Manifest:
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return Manifest()
        try:
            manifest = _decoder.decode(data)
        except msgspec.MsgspecError as exc:
            raise CorruptLogError(f"{self.path}: unreadable manifest ({exc})") from None
        if manifest.format != FORMAT:
            raise CorruptLogError(
                f"{self.path}: expected manifest format {FORMAT}; got {manifest.format}"
            )
        return manifest

    def commit(self, manifest: Manifest) -> None:
        atomic_write(self.path, _encoder.encode(manifest))

    def version_stamp(self) -> tuple[int, int]:
        """A cheap change detector (inode, mtime): a rename changes the inode."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return (0, 0)
        return (st.st_ino, st.st_mtime_ns)
