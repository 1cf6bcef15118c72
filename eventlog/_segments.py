"""Sealed Parquet segments: durable writes and reads."""

from __future__ import annotations

import contextlib
import os
import uuid
from concurrent.futures import Future, ThreadPoolExecutor

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ._arrow import POOL, SCHEMA
from ._files import fsync_dir
from ._manifest import SegmentInfo

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
        self.tmp = os.path.join(directory, f"seg-{uuid.uuid4().hex}.parquet.tmp")
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
            bytes=os.path.getsize(os.path.join(self.directory, name)),
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


def read_segment(directory: str, info: SegmentInfo, columns: list[str] | None = None) -> pa.Table:
    """Read a whole segment, cast to the current schema (older files may lack columns)."""
    table = pq.read_table(os.path.join(directory, info.file), columns=columns)
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
