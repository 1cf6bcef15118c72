"""Segments checked against the manifest before DuckDB scans them.

DuckDB reads Parquet without verifying page checksums, so a scan checks what it can cheaply:
each segment's size (the caller, :func:`eventlog.sealed._manifest.stat_segment`) and its footer's
row count and seq range (a segment copied over another must not be read as the other's
seqs). Connections whose DuckDB has no file access read segments through pyarrow, which
checks the content hash too. Segments never change, so each is checked once per process.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import duckdb
from evolog.eventlog import CorruptLogError
from evolog.eventlog.sealed import SegmentInfo


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


_checked_lock = threading.Lock()
#: Segment files whose footer matched the manifest, by (path, inode, size, mtime): segments
#: never change, so each is checked once per process.
_checked: set[tuple[str, int, int, int]] = set()


def _unchecked(infos: Sequence[SegmentInfo], paths: Sequence[str]) -> dict[str, Any]:
    """The segments not checked yet in this process, by path: (info, stat key)."""
    todo = {}
    for info, path in zip(infos, paths, strict=True):
        st = os.stat(path)
        key = (path, st.st_ino, st.st_size, st.st_mtime_ns)
        with _checked_lock:
            if key not in _checked:
                todo[path] = (info, key)
    return todo


def check_with_arrow(directory: str, infos: Sequence[SegmentInfo], paths: Sequence[str]) -> None:
    """Each segment's content hash, footer, rows and seq range against the manifest."""
    from evolog.eventlog.sealed import open_segment

    for info, key in _unchecked(infos, paths).values():
        open_segment(directory, info)
        with _checked_lock:
            _checked.add(key)


def check_footers(
    con: duckdb.DuckDBPyConnection, infos: Sequence[SegmentInfo], paths: Sequence[str]
) -> None:
    """Each segment's row count and seq range (from its Parquet footer) against the
    manifest: a segment copied over another must not be read as the other's seqs."""
    todo = _unchecked(infos, paths)
    if not todo:
        return
    files = ", ".join(_sql_string(p) for p in todo)
    query = (
        "SELECT file_name, sum(row_group_num_rows), min(stats_min_value::BIGINT), "
        f"max(stats_max_value::BIGINT) FROM parquet_metadata([{files}]) "
        "WHERE path_in_schema = 'seq' GROUP BY file_name"
    )
    try:
        found = {row[0]: row[1:] for row in con.execute(query).fetchall()}
    except duckdb.Error as exc:
        raise CorruptLogError(f"unreadable sealed segment: {' '.join(str(exc).split())}") from None
    for path, (info, key) in todo.items():
        got = found.get(path)
        want = (info.rows, info.first_seq, info.last_seq)
        if got is None or tuple(got) != want:
            shown = "no seq column" if got is None else f"{got[0]} rows, seqs {got[1]}..{got[2]}"
            raise CorruptLogError(
                f"{path}: expected seqs {info.first_seq}..{info.last_seq} ({info.rows} rows, "
                f"per the manifest); the file holds {shown}"
            )
        with _checked_lock:
            _checked.add(key)
