"""Sealed Parquet segments: durable writes and reads."""

from __future__ import annotations

import contextlib
import os
import uuid

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ._arrow import SCHEMA
from ._files import fsync_dir
from ._manifest import SegmentInfo

#: Row groups at or below this many rows: DuckDB scans one row group per thread.
ROW_GROUP_ROWS = 128 * 1024
ZSTD_LEVEL = 1  # higher levels buy under 1% on event data and cost a lot of CPU


def segment_name(first: int, last: int) -> str:
    # The random suffix keeps a compacted segment from colliding with the files it replaces.
    return f"seg-{first:020d}-{last:020d}-{uuid.uuid4().hex[:8]}.parquet"


def write_segment(directory: str, table: pa.Table) -> SegmentInfo:
    """Write ``table`` (sorted by seq, gap-free) durably; return its manifest entry."""
    first = int(table["seq"][0].as_py())
    last = int(table["seq"][-1].as_py())
    name = segment_name(first, last)
    path = os.path.join(directory, name)
    tmp = path + ".tmp"
    try:
        pq.write_table(
            table,
            tmp,
            compression="zstd",
            compression_level=ZSTD_LEVEL,
            row_group_size=ROW_GROUP_ROWS,
            write_statistics=True,
            sorting_columns=[pq.SortingColumn(0)],
        )
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        # A full disk leaves a partial file: give its space back now, not after the grace.
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    os.replace(tmp, path)
    fsync_dir(directory)
    ts = pc.min_max(table["ts"].cast(pa.int64()))
    return SegmentInfo(
        file=name,
        first_seq=first,
        last_seq=last,
        rows=table.num_rows,
        min_ts=int(ts["min"].as_py()),
        max_ts=int(ts["max"].as_py()),
        bytes=os.path.getsize(path),
    )


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
