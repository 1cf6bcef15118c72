"""Sealed segments as Iceberg data files: each checked against its manifest entry first.

What ``add_files`` does, with two differences: the file is read once (its SHA-256 checked
against the store's manifest, then its footer parsed from the same bytes), and the data
file carries the store id as its partition value, which no column of the file holds.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, NamedTuple

from evolog.eventlog import CorruptLogError
from evolog.eventlog.sealed._manifest import SegmentInfo

from ._catalog import backend_errors, one_line
from ._errors import PublishRefusedError

if TYPE_CHECKING:
    import pyarrow.parquet as pq
    from pyiceberg.manifest import DataFile
    from pyiceberg.table.metadata import TableMetadata

#: Segments checked at once: hashing and footer parsing release the GIL.
WORKERS = 4


class Checked(NamedTuple):
    info: SegmentInfo
    uri: str
    metadata: pq.FileMetaData


def segment_uri(directory: str, info: SegmentInfo) -> str:
    """The file's location as the table records it (the store's real path)."""
    return "file://" + os.path.join(os.path.realpath(directory), info.file)


def check_segments(directory: str, infos: Sequence[SegmentInfo]) -> list[Checked]:
    """Each segment's bytes against its manifest entry (size, SHA-256, rows, seqs), with
    its parsed footer; the first that does not match refuses the whole publish."""
    from evolog.eventlog.sealed._segments import open_segment

    def one(info: SegmentInfo) -> Checked:
        try:
            pf = open_segment(directory, info)
        except CorruptLogError as exc:
            raise PublishRefusedError(f"refused, nothing published: {exc}") from None
        return Checked(info, segment_uri(directory, info), pf.metadata)

    if len(infos) < 2:
        return [one(i) for i in infos]
    with ThreadPoolExecutor(min(WORKERS, len(infos)), thread_name_prefix="evolog-ice") as pool:
        return list(pool.map(one, infos))


def to_data_file(meta: TableMetadata, seg: Checked, store_id: str) -> DataFile:
    """The Iceberg data file of one checked segment, partition ``store_id``."""
    from pyiceberg.io.pyarrow import (
        _check_pyarrow_schema_compatible,
        compute_statistics_plan,
        data_file_statistics_from_parquet_metadata,
        parquet_path_to_id_mapping,
    )
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.typedef import Record

    schema = meta.schema()
    try:
        _check_pyarrow_schema_compatible(
            schema, seg.metadata.schema.to_arrow_schema(), format_version=meta.format_version
        )
    except ValueError as exc:
        raise PublishRefusedError(
            f"refused, nothing published: {seg.info.file}: its columns do not fit the table's "
            f"schema ({one_line(exc)})"
        ) from None
    with backend_errors(f"reading the statistics of {seg.info.file}"):
        stats = data_file_statistics_from_parquet_metadata(
            parquet_metadata=seg.metadata,
            stats_columns=compute_statistics_plan(schema, meta.properties),
            parquet_column_mapping=parquet_path_to_id_mapping(schema),
        )
        return DataFile.from_args(
            _table_format_version=meta.format_version,
            content=DataFileContent.DATA,
            file_path=seg.uri,
            file_format=FileFormat.PARQUET,
            partition=Record(store_id),
            file_size_in_bytes=seg.info.bytes,
            sort_order_id=None,
            spec_id=meta.default_spec_id,
            equality_ids=None,
            key_metadata=None,
            **stats.to_serialized_dict(),
        )
