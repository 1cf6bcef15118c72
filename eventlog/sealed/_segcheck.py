"""A full check of one sealed segment against its manifest entry (``verify``, upgrades)."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ._manifest import SegmentInfo, content_hash
from ._segments import DAMAGE


def check_segment(directory: str, info: SegmentInfo) -> tuple[list[str], str]:
    """(problems, content hash) of one segment: its bytes against the manifest's hash and
    size, every page (decompressed, checksums verified), row count, gap-free seqs
    ``first..last``, and the ts range the manifest gives (time-travel reads skip segments
    by it, so a wrong ``min_ts`` silently drops events from an as-of answer)."""
    path = os.path.join(directory, info.file)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return [f"{info.file}: listed in the manifest but missing"], ""
    except OSError as exc:
        return [f"{info.file}: unreadable ({exc.strerror})"], ""
    digest = content_hash(data)
    out = []
    if len(data) != info.bytes:
        out.append(f"{info.file}: expected {info.bytes} bytes; got {len(data)}")
    if info.hash and digest != info.hash:
        out.append(f"{info.file}: content hash mismatch (the file changed after the seal)")
    try:
        table = pq.read_table(pa.BufferReader(data), page_checksum_verification=True)
        out.extend(_table_problems(table, info))
    except DAMAGE as exc:  # a damaged footer can fail lazily, as names are decoded
        out.append(f"{info.file}: unreadable ({' '.join(str(exc).split())})")
    return out, digest


def _table_problems(table: pa.Table, info: SegmentInfo) -> list[str]:
    out = []
    n = table.num_rows
    if n != info.rows:
        out.append(f"{info.file}: expected {info.rows} rows; got {n}")
    if n and "seq" in table.column_names:
        seq = table["seq"]
        lo, hi = seq[0].as_py(), seq[-1].as_py()
        diffs = pc.subtract(seq.slice(1), seq.slice(0, n - 1)) if n > 1 else None
        gap_free = diffs is None or pc.all(pc.equal(diffs, 1)).as_py()
        if (lo, hi) != (info.first_seq, info.last_seq) or not gap_free:
            out.append(f"{info.file}: seqs are not {info.first_seq}..{info.last_seq} gap-free")
    if n and "ts" in table.column_names:
        ts = pc.min_max(table["ts"].cast(pa.int64()))
        got = (ts["min"].as_py(), ts["max"].as_py())
        if got != (info.min_ts, info.max_ts):
            out.append(
                f"{info.file}: expected ts {info.min_ts}..{info.max_ts} (per the manifest); "
                f"got {got[0]}..{got[1]}"
            )
    return out
