"""Segments copied into a table's object storage, content-addressed, before they are
registered.

A segment's object is named by the SHA-256 of its bytes
(``<table>/data/segments/<sha256>/<segment file>``), so the same segment always lands at
the same key whoever uploads it and however often: an object already there with the
right size and hash is not uploaded again (a publish killed mid-upload leaves some such
objects behind, unreferenced; the next publish finds them and only registers them). An
object becomes visible only once its upload completed (an S3 PUT, or a multipart upload's
completion, is atomic), and the table references it only after the catalog's commit, so
a reader never meets a partial object.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from evolog.eventlog.sealed import SegmentInfo, content_hash

from ._catalog import backend_errors
from ._errors import CatalogError

if TYPE_CHECKING:
    from pyiceberg.io import FileIO

    from ._datafiles import Checked


def object_uri(location: str, info: SegmentInfo) -> str:
    """The content-addressed location of a segment under a table's ``location``."""
    return f"{location.rstrip('/')}/data/segments/{info.hash}/{info.file}"


class Uploader:
    """Puts checked segments at their objects through a table's FileIO (thread-safe)."""

    def __init__(self, io: FileIO) -> None:
        self._io = io
        self._lock = threading.Lock()
        self.uploaded = 0  # objects written by this publish
        self.present = 0  # objects found already there, whole

    def __call__(self, seg: Checked, data: bytes) -> None:
        info = seg.info
        with backend_errors(f"uploading {info.file} to {seg.uri}"):
            if self._holds(seg.uri, info):
                with self._lock:
                    self.present += 1
                return
            with self._io.new_output(seg.uri).create(overwrite=True) as out:
                out.write(data)
            size = len(self._io.new_input(seg.uri))
        if size != info.bytes:
            raise CatalogError(
                f"uploading {info.file} to {seg.uri}: expected an object of {info.bytes} "
                f"bytes after the upload; the storage reports {size} bytes"
            )
        with self._lock:
            self.uploaded += 1

    def _holds(self, uri: str, info: SegmentInfo) -> bool:
        """The object at ``uri`` exists with the segment's size and SHA-256 (read back
        whole: only objects a killed publish left, or another store's identical segment,
        are ever read, never the ones the table already references)."""
        found = self._io.new_input(uri)
        if not found.exists() or len(found) != info.bytes:
            return False
        with found.open() as f:
            return content_hash(f.read()) == info.hash
