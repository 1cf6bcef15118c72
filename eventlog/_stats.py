"""``stats``: what a store holds, computed from one snapshot."""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import pyarrow.compute as pc

from ._snapshot import Snapshot
from .schema._codec import kind_of
from .sealed._segments import open_segment, read_checked, segment_path


def stats(snap: Snapshot) -> dict[str, Any]:
    kinds: Counter[str] = Counter()
    for info in snap.segments:
        pf = open_segment(snap.paths.segments, info)
        path = segment_path(snap.paths.segments, info)
        counts = pc.value_counts(read_checked(pf, info, path, columns=["kind"])["kind"])
        for item in counts.to_pylist():
            kinds[item["values"]] += item["counts"]
    tail = snap.tail_events()
    kinds.update(kind_of(e) for e in tail)
    seg_bytes = sum(s.bytes for s in snap.segments)
    sealed_rows = sum(s.rows for s in snap.segments)
    wal_bytes = sum(os.path.getsize(p) for p in _wal_paths(snap))
    return {
        "store": snap.paths.root,
        "events": snap.head_seq,
        "sealed_events": sealed_rows,
        "tail_events": len(tail),
        "segments": len(snap.segments),
        "segment_bytes": seg_bytes,
        "bytes_per_sealed_event": round(seg_bytes / sealed_rows, 2) if sealed_rows else None,
        "wal_bytes": wal_bytes,
        "manifest_version": snap.manifest.version,
        "kinds": dict(sorted(kinds.items())),
        "min_ts": min((s.min_ts for s in snap.segments), default=None)
        if snap.segments
        else (min((e.ts for e in tail), default=None)),
    }


def _wal_paths(snap: Snapshot) -> list[str]:
    d = snap.paths.wal
    return [os.path.join(d, n) for n in os.listdir(d) if n.endswith(".wal")]
