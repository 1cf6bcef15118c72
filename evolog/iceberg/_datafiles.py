"""Sealed segments as Iceberg data files, each checked against its manifest entry.

What ``add_files`` does (a footer read per file, its statistics, a schema check), with
three differences. The data file carries the store id as its partition value, which no
column of the file holds. The schema check and the statistics plan are done once per
distinct schema, not once per file. And every file's bytes are checked against the store's
manifest (size, SHA-256; rows and seq range from the footer): the hashes by
:class:`Verifier`, in threads, while pyiceberg writes the snapshot's manifests (hashlib and
pread release the GIL), and the publish waits for them before the catalog commit, so a
file that does not match is never published and checking costs little more wall time
than ``add_files`` alone.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, NamedTuple

import pyarrow as pa
import pyarrow.parquet as pq

from evolog.eventlog import CorruptLogError
from evolog.eventlog.sealed import DAMAGE, SegmentInfo, content_hash, footer_seqs, stat_segment

from ._catalog import backend_errors, one_line
from ._errors import PublishRefusedError

if TYPE_CHECKING:
    from pyiceberg.manifest import DataFile
    from pyiceberg.table.metadata import TableMetadata

#: Hashing threads: the machine's other core, while the main thread runs pyiceberg.
HASHERS = 2
_REFUSED = "refused, nothing published"
_TAIL = 1 << 16  # one read covers the footer of a segment (about 30 KB at 262144 rows)


class Checked(NamedTuple):
    info: SegmentInfo
    uri: str
    metadata: pq.FileMetaData
    tail: bytes  # the file's last bytes, the footer among them: compared when hashed


def segment_uri(directory: str, info: SegmentInfo) -> str:
    """The file's location as the table records it (the store's real path)."""
    return "file://" + os.path.join(os.path.realpath(directory), info.file)


#: A segment's location in the table: in place (:func:`segment_uri`), or its object.
Locate = Callable[[str, SegmentInfo], str]


def read_footers(
    directory: str, infos: Sequence[SegmentInfo], locate: Locate = segment_uri
) -> list[Checked]:
    """Each segment's footer, its size, rows and seq range matching its manifest entry;
    the first that does not match refuses the whole publish."""
    return [_footer(directory, info, locate) for info in infos]


def _footer(directory: str, info: SegmentInfo, locate: Locate) -> Checked:
    try:
        path = stat_segment(directory, info)
        fd = os.open(path, os.O_RDONLY)
        try:
            tail = os.pread(fd, min(_TAIL, info.bytes), max(0, info.bytes - _TAIL))
            need = struct.unpack("<I", tail[-8:-4])[0] + 8 if len(tail) >= 8 else 0
            if len(tail) < need <= info.bytes:  # a footer larger than one read
                tail = os.pread(fd, need, info.bytes - need)
        finally:
            os.close(fd)
    except OSError as exc:
        raise _refused(f"{path}: cannot read sealed segment ({exc.strerror})") from None
    except CorruptLogError as exc:
        raise _refused(str(exc)) from None
    try:
        meta = pq.read_metadata(pa.BufferReader(tail))
        seqs = footer_seqs(meta)
    except DAMAGE as exc:
        check_bytes(path, info, tail)  # a changed file is refused as one
        raise _refused(f"{path}: unreadable sealed segment ({one_line(exc)})") from None
    if meta.num_rows != info.rows or (seqs is not None and seqs != (info.first_seq, info.last_seq)):
        check_bytes(path, info, tail)
        got = f"{meta.num_rows} rows" + (f", seqs {seqs[0]}..{seqs[1]}" if seqs else "")
        raise _refused(
            f"{path}: expected seqs {info.first_seq}..{info.last_seq} ({info.rows} rows, per "
            f"the manifest); the file holds {got}"
        )
    return Checked(info, locate(directory, info), meta, tail)


def _refused(text: str) -> PublishRefusedError:
    return PublishRefusedError(f"{_REFUSED}: {text}")


class Verifier:
    """Segments' SHA-256 against their manifest entries, in background threads; with
    ``upload``, each segment's bytes, once they matched, are handed to it (the bytes
    uploaded are the bytes checked: a file changing under the publish is refused, never
    uploaded half old, half new)."""

    def __init__(
        self, directory: str, upload: Callable[[Checked, bytes], None] | None = None
    ) -> None:
        self._directory = directory
        self._upload = upload
        self._pool: ThreadPoolExecutor | None = None
        self._done: dict[str, Future[None]] = {}

    def start(self, segs: Sequence[Checked]) -> None:
        """Begin checking ``segs`` (those not begun already)."""
        for seg in segs:
            if seg.uri not in self._done:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(HASHERS, thread_name_prefix="evolog-hash")
                self._done[seg.uri] = self._pool.submit(self._check, seg)

    def wait(self, segs: Sequence[Checked]) -> None:
        """Return once every one of ``segs`` matched; else :class:`PublishRefusedError`."""
        self.start(segs)
        for seg in segs:
            self._done[seg.uri].result()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def _check(self, seg: Checked) -> None:
        data = check_bytes(os.path.join(self._directory, seg.info.file), seg.info, seg.tail)
        if self._upload is not None:
            self._upload(seg, data)


def check_bytes(path: str, info: SegmentInfo, tail: bytes) -> bytes:
    """The file at ``path`` has the size and SHA-256 of ``info`` and ends with ``tail``
    (the bytes its footer was parsed from), else :class:`PublishRefusedError`."""
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            data = os.pread(fd, size + 1, 0) if size == info.bytes else b""
        finally:
            os.close(fd)
    except OSError as exc:
        raise _refused(f"{path}: cannot read sealed segment ({exc.strerror})") from None
    # The whole file in one read (a short read only if it changed under us: then the hash
    # does not match).
    if size != info.bytes or len(data) != size:
        raise _refused(
            f"{path}: expected a sealed segment of {info.bytes} bytes (per the manifest); "
            f"got {size} bytes (truncated or replaced)"
        )
    if (info.hash and content_hash(data) != info.hash) or not data.endswith(tail):
        raise _refused(
            f"{path}: sealed segment content hash mismatch (the file changed after the seal)"
        )
    return data


class DataFiles:
    """Builds the data files of checked segments for one table metadata."""

    def __init__(self, meta: TableMetadata, store_id: str) -> None:
        from pyiceberg.io.pyarrow import compute_statistics_plan, parquet_path_to_id_mapping

        self._meta = meta
        self._schema = meta.schema()
        self._store_id = store_id
        self._plan = compute_statistics_plan(self._schema, meta.properties)
        self._mapping = parquet_path_to_id_mapping(self._schema)
        self._fits: set[pa.Schema] = set()

    def build(self, seg: Checked) -> DataFile:
        """The Iceberg data file of one checked segment, partition ``store_id``."""
        from pyiceberg.io.pyarrow import (
            _check_pyarrow_schema_compatible,
            data_file_statistics_from_parquet_metadata,
        )
        from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
        from pyiceberg.typedef import Record

        meta = self._meta
        arrow = seg.metadata.schema.to_arrow_schema()
        if arrow not in self._fits:
            try:
                _check_pyarrow_schema_compatible(
                    self._schema, arrow, format_version=meta.format_version
                )
            except ValueError as exc:
                raise _refused(
                    f"{seg.info.file}: its columns do not fit the table's schema ({one_line(exc)})"
                ) from None
            self._fits.add(arrow)
        with backend_errors(f"reading the statistics of {seg.info.file}"):
            stats = data_file_statistics_from_parquet_metadata(
                parquet_metadata=seg.metadata,
                stats_columns=self._plan,
                parquet_column_mapping=self._mapping,
            )
            # (In the version pyiceberg reads by default, as add_files builds it: its
            # manifest writer converts to the table's; a format-1 entry fails there.)
            return DataFile.from_args(
                content=DataFileContent.DATA,
                file_path=seg.uri,
                file_format=FileFormat.PARQUET,
                partition=Record(self._store_id),
                file_size_in_bytes=seg.info.bytes,
                sort_order_id=None,
                spec_id=meta.default_spec_id,
                equality_ids=None,
                key_metadata=None,
                **stats.to_serialized_dict(),
            )
