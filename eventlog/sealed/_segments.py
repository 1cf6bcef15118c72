"""Sealed Parquet segments: durable writes and checked reads.

A segment is pinned three ways: the manifest records the SHA-256 of its bytes, every Parquet
page carries a CRC, and the manifest gives its size, row count and seq range (a segment
copied over another was once read as seqs 1-100 twice and 101-200 never). Readers here check
all three; DuckDB readers check size and footer (:mod:`evolog.projections._source`); ``verify``
checks everything, ts range included.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .._errors import CorruptLogError
from .._files import fsync_dir
from ._arrow import POOL, SCHEMA
from ._manifest import SegmentInfo, content_hash, stat_segment

#: Row groups at or below this many rows: DuckDB scans one row group per thread. (A seal
#: encodes the last row group after its conversion ends; 64k-row groups were measured to
#: shorten that tail and gained nothing measurable, bench/bench_seal_parts.py.)
ROW_GROUP_ROWS = 128 * 1024
ZSTD_LEVEL = 1  # higher levels buy under 1% on event data and cost a lot of CPU
#: Columns unique per event are delta-encoded instead of dictionary-encoded: a dictionary
#: of unique values is work thrown away. seq and ts climb, and generated ids share long
#: prefixes. On 128k demo-mix rows this took a segment from 9.7 to 5.0 bytes/event and the
#: encoding from 0.82 to 0.74 us/row (bench/bench_seal_parts.py, bench/RESULTS.md).
DELTA_ENCODED = {
    "seq": "DELTA_BINARY_PACKED",
    "ts": "DELTA_BINARY_PACKED",
    "id": "DELTA_BYTE_ARRAY",
}


#: Segments being written; never part of the log (garbage collection deletes old ones).
TMP_SUFFIX = ".parquet.tmp"


#: What pyarrow raises on a damaged file: Arrow errors, and decoding errors from the footer's
#: metadata (its schema is JSON and base64 inside the file).
DAMAGE = (OSError, ValueError, TypeError, KeyError, IndexError, pa.ArrowException)


def segment_name(first: int, last: int) -> str:
    # The random suffix keeps a compacted segment from colliding with the files it replaces.
    return f"seg-{first:020d}-{last:020d}-{uuid.uuid4().hex[:8]}.parquet"


def write_segment(directory: str, table: pa.Table) -> SegmentInfo:
    """Write ``table`` (sorted by seq, gap-free) durably; return its manifest entry."""
    writer = SegmentWriter(directory)
    try:
        writer.write(table)
        return writer.finish()
    finally:
        writer.abort()


class SegmentWriter:
    """One segment written a piece at a time, row groups compressed in the background.

    Pieces go in seq order and without gaps. Row groups of :data:`ROW_GROUP_ROWS` are
    handed to a worker thread as soon as they are complete: Parquet encoding and zstd
    release the GIL, so they overlap with the decoding of the next pieces (a seal feeds
    this from the WAL a few thousand events at a time). Nothing is visible until
    :meth:`finish` has fsynced and renamed the file; :meth:`abort` drops a partial one.
    """

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.tmp = os.path.join(directory, f"seg-{uuid.uuid4().hex}{TMP_SUFFIX}")
        self._writer: pq.ParquetWriter | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._pending: Future[None] | None = None
        self._buffer: list[pa.Table] = []
        self._buffered = 0
        self._first = self._last = -1
        self._rows = 0
        self._min_ts: int | None = None
        self._max_ts: int | None = None

    @property
    def rows(self) -> int:
        return self._rows

    def write(self, table: pa.Table) -> None:
        """Add rows (with seqs following the previous ones)."""
        if table.num_rows == 0:
            return
        if self._first < 0:
            self._first = int(table["seq"][0].as_py())
        self._last = int(table["seq"][-1].as_py())
        self._rows += table.num_rows
        ts = pc.min_max(table["ts"].cast(pa.int64()))
        lo, hi = int(ts["min"].as_py()), int(ts["max"].as_py())
        self._min_ts = lo if self._min_ts is None else min(self._min_ts, lo)
        self._max_ts = hi if self._max_ts is None else max(self._max_ts, hi)
        self._buffer.append(table)
        self._buffered += table.num_rows
        while self._buffered >= ROW_GROUP_ROWS:
            whole = pa.concat_tables(self._buffer)
            self._buffer = [whole.slice(ROW_GROUP_ROWS)]
            self._buffered = whole.num_rows - ROW_GROUP_ROWS
            self._submit(whole.slice(0, ROW_GROUP_ROWS))

    def _executor(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="evolog-segment")
        return self._pool

    def _submit(self, table: pa.Table) -> None:
        pool = self._executor()
        self._wait()
        self._pending = pool.submit(self._write_group, table)

    def _wait(self) -> None:
        if self._pending is not None:
            pending, self._pending = self._pending, None
            pending.result()  # re-raises what the worker hit (a full disk, say)

    def _write_group(self, table: pa.Table) -> None:
        if self._writer is None:
            self._writer = pq.ParquetWriter(
                self.tmp,
                table.schema,  # SCHEMA from a seal; a test may write an older, narrower one
                compression="zstd",
                compression_level=ZSTD_LEVEL,
                use_dictionary=[n for n in table.schema.names if n not in DELTA_ENCODED],
                column_encoding={n: e for n, e in DELTA_ENCODED.items() if n in table.schema.names},
                write_statistics=True,
                write_page_checksum=True,  # a CRC per page, checked by pyarrow's reads
                sorting_columns=[pq.SortingColumn(0)],
                memory_pool=POOL,
            )
        self._writer.write_table(table, row_group_size=ROW_GROUP_ROWS)

    def finish(self) -> SegmentInfo:
        """Write what is left, fsync, and give the segment its final name."""
        try:
            return self.finish_async().result()
        finally:
            self._shutdown()

    def finish_async(self) -> Future[SegmentInfo]:
        """:meth:`finish` on this segment's thread, after its pending row group: the caller
        can go on converting the next segment meanwhile (then :meth:`abort` it, which only
        ends the thread once the segment is finished)."""
        if self._rows == 0:
            raise ValueError("a segment needs at least one row")
        rest = pa.concat_tables(self._buffer) if self._buffered else None
        self._buffer, self._buffered = [], 0
        pending, self._pending = self._pending, None
        return self._executor().submit(self._complete, pending, rest)

    def _complete(self, pending: Future[None] | None, rest: pa.Table | None) -> SegmentInfo:
        if pending is not None:
            pending.result()  # the pool ran it before this task: re-raise what it hit
        if rest is not None:
            self._write_group(rest)
        assert self._writer is not None
        self._writer.close()
        self._writer = None
        fd = os.open(self.tmp, os.O_RDONLY)
        try:
            # Hashed from the page cache, just written: about 1 ms for a 128k-row segment.
            size = os.fstat(fd).st_size
            digest = content_hash(_read_fd(fd, size))
            os.fsync(fd)
        finally:
            os.close(fd)
        name = segment_name(self._first, self._last)
        os.replace(self.tmp, os.path.join(self.directory, name))
        fsync_dir(self.directory)
        assert self._min_ts is not None and self._max_ts is not None
        return SegmentInfo(
            file=name,
            first_seq=self._first,
            last_seq=self._last,
            rows=self._rows,
            min_ts=self._min_ts,
            max_ts=self._max_ts,
            bytes=size,
            hash=digest,
        )

    def _shutdown(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()  # its thread ends here, not at interpreter exit
            self._pool = None

    def abort(self) -> None:
        """Release everything; a file not finished is deleted (a full disk gets its space
        back now, not after the garbage grace period)."""
        with contextlib.suppress(Exception):
            self._wait()
        self._shutdown()  # waits for a completion under way, too
        if self._writer is not None:
            with contextlib.suppress(Exception):
                self._writer.close()
            self._writer = None
        with contextlib.suppress(OSError):
            os.unlink(self.tmp)


def _read_fd(fd: int, size: int) -> bytes:
    data = os.pread(fd, size, 0)
    while len(data) < size:  # a short read: keep going (rare, but allowed)
        more = os.pread(fd, size - len(data), len(data))
        if not more:
            break
        data += more
    return data


def segment_path(directory: str, info: SegmentInfo) -> str:
    return os.path.join(directory, info.file)


def open_segment(directory: str, info: SegmentInfo) -> pq.ParquetFile:
    """A segment read into memory, whose bytes match the manifest's content hash (when it
    has one: format 1 did not record them) and whose footer gives the manifest's row count
    and seq range; its pages are read with their checksums verified.

    The whole file is read even when a caller wants a few columns: segments hold about
    5 bytes per event, and the hash (SHA-256, about 1 GB/s) is the only check that covers
    every byte (a flipped bit in the footer's schema once turned a status 'ok' into '').
    """
    path = stat_segment(directory, info)
    try:
        with open(path, "rb") as f:
            data = _read_fd(f.fileno(), info.bytes)
    except OSError as exc:
        raise CorruptLogError(f"{path}: cannot read sealed segment ({exc.strerror})") from None
    if info.hash and content_hash(data) != info.hash:
        raise CorruptLogError(
            f"{path}: sealed segment content hash mismatch (the file changed after the seal)"
        )
    try:
        pf = pq.ParquetFile(pa.BufferReader(data), page_checksum_verification=True)
        rows = pf.metadata.num_rows
        seq_range = footer_seqs(pf.metadata)
    except DAMAGE as exc:
        raise CorruptLogError(f"{path}: unreadable sealed segment ({one_line(exc)})") from None
    if rows != info.rows or (
        seq_range is not None and seq_range != (info.first_seq, info.last_seq)
    ):
        got = f"{rows} rows" + (f", seqs {seq_range[0]}..{seq_range[1]}" if seq_range else "")
        raise CorruptLogError(
            f"{path}: expected seqs {info.first_seq}..{info.last_seq} ({info.rows} rows, per "
            f"the manifest); the file holds {got}"
        )
    return pf


def footer_seqs(meta: pq.FileMetaData) -> tuple[int, int] | None:
    """(min, max) seq from the row groups' statistics, or None if a group has none."""
    if meta.num_row_groups == 0:
        return None
    col = meta.schema.to_arrow_schema().get_field_index("seq")
    if col < 0:
        return None
    lo = hi = None
    for i in range(meta.num_row_groups):
        stats = meta.row_group(i).column(col).statistics
        if stats is None or not stats.has_min_max:
            return None
        lo = stats.min if lo is None else min(lo, stats.min)
        hi = stats.max if hi is None else max(hi, stats.max)
    return (int(lo), int(hi))  # type: ignore[arg-type]


def read_checked(pf: pq.ParquetFile, info: SegmentInfo, path: str, **kwargs: Any) -> pa.Table:
    """``pf.read(**kwargs)`` with damage as :class:`CorruptLogError`, the seqs read checked."""
    try:
        table = pf.read(**kwargs)
    except DAMAGE as exc:
        raise CorruptLogError(f"{path}: unreadable sealed segment ({one_line(exc)})") from None
    check_seqs(table, info, path)
    return table


def read_part(directory: str, info: SegmentInfo, columns: list[str] | None = None) -> pa.Table:
    """``columns`` (with ``seq``) of a whole segment, checked (:func:`open_segment`)."""
    pf = open_segment(directory, info)
    if columns is not None and "seq" not in columns:
        columns = ["seq", *columns]
    return read_checked(pf, info, segment_path(directory, info), columns=columns)


def check_seqs(table: pa.Table, info: SegmentInfo, where: str) -> None:
    """A whole segment read must hold exactly seqs first..last in order."""
    if "seq" not in table.column_names:
        return
    n = table.num_rows
    seq = table["seq"]
    if n != info.rows or (
        n and (seq[0].as_py(), seq[-1].as_py()) != (info.first_seq, info.last_seq)
    ):
        got = f"{seq[0].as_py()}..{seq[-1].as_py()}" if n else "nothing"
        raise CorruptLogError(
            f"{where}: expected seqs {info.first_seq}..{info.last_seq} (per the manifest); "
            f"read {n} rows, seqs {got}"
        )


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def read_segment(directory: str, info: SegmentInfo, columns: list[str] | None = None) -> pa.Table:
    """A whole segment, checked (:func:`open_segment`), cast to the current schema (older
    files may lack columns)."""
    table = read_part(directory, info, columns)
    return conform(table, columns)


def conform(table: pa.Table, columns: list[str] | None = None) -> pa.Table:
    """Add columns a newer schema introduced (as nulls), in schema order."""
    names = columns or SCHEMA.names
    arrays = []
    for name in names:
        field = SCHEMA.field(name)
        if name in table.column_names:
            arrays.append(table[name].cast(field.type))
        else:
            arrays.append(pa.nulls(table.num_rows, field.type))
    return pa.Table.from_arrays(arrays, schema=pa.schema([SCHEMA.field(n) for n in names]))
