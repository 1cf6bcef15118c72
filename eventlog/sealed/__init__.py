"""Sealed data: Parquet segments, the checksummed manifest that commits them, sealing and
compaction, and reading segments back (replay, Arrow batches).

What other parts of evolog import from here.
"""

from typing import TYPE_CHECKING

from evolog._lazy import lazy_exports

if TYPE_CHECKING:
    from ._arrow import SCHEMA, TS_TYPE, events_to_table, table_to_events
    from ._manifest import FileCommitter, Manifest, SegmentInfo, content_hash, stat_segment
    from ._replay import Filter, arrow_batches, events, segment_events
    from ._seal import CompactResult, SealResult
    from ._segments import (
        DAMAGE,
        conform,
        footer_seqs,
        open_segment,
        read_checked,
        read_part,
        segment_path,
    )


__all__ = [
    "DAMAGE",
    "SCHEMA",
    "TS_TYPE",
    "CompactResult",
    "FileCommitter",
    "Filter",
    "Manifest",
    "SealResult",
    "SegmentInfo",
    "arrow_batches",
    "conform",
    "content_hash",
    "events",
    "events_to_table",
    "footer_seqs",
    "open_segment",
    "read_checked",
    "read_part",
    "segment_events",
    "segment_path",
    "stat_segment",
    "table_to_events",
]


__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "._seal": "CompactResult SealResult",
        "._segments": "DAMAGE conform footer_seqs open_segment read_checked read_part segment_path",
        "._manifest": "FileCommitter Manifest SegmentInfo content_hash stat_segment",
        "._replay": "Filter arrow_batches events segment_events",
        "._arrow": "SCHEMA TS_TYPE events_to_table table_to_events",
    },
    globals(),
)
