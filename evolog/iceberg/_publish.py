"""Publishing a store's sealed segments into an Iceberg table: one commit per publish.

The table is the record of what was published: the data files under this store's
``store_id`` partition are compared with the store's manifest, and one snapshot makes
them equal. New segments are appended (``fast_append``); segments a compaction replaced
are removed in the same snapshot as the segment that replaced them, as one overwrite, so a
reader sees every event exactly once in every snapshot. Nothing is written before the
catalog's commit that a reader could see, so a publish killed at any point leaves the table
as it was, and the next publish does the whole job again. Publishing again with nothing
new commits nothing.

Where the table lives decides where its data files are: a table in a local warehouse
registers the segments in place (the store's own files); a table in object storage
(``s3://...``) gets a copy of each segment, uploaded once to a content-addressed object
(:mod:`._upload`) before the commit, so the table is readable from anywhere the storage
is, with no store's folder in reach.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from evolog.eventlog import FileLock, Paths, os_errors_as_storage, require_store
from evolog.eventlog.sealed import FileCommitter, Manifest, SegmentInfo

from ._catalog import (
    DEFAULT_TABLE,
    backend_errors,
    close_catalog,
    open_catalog,
    predicate,
    table_identifier,
    table_name,
)
from ._datafiles import Checked, DataFiles, Verifier, read_footers, segment_uri
from ._errors import IcebergInputError, PublishRefusedError
from ._schema import STORE_ID, grow, load_or_create
from ._storage import is_local, s3_properties
from ._upload import Uploader, object_uri

if TYPE_CHECKING:
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table

#: Commits lost to another publisher (of another store, into the same table) are retried.
RETRIES = 10
_SEGMENT = re.compile(r"seg-(\d{20})-(\d{20})-[0-9a-f]+\.parquet\Z")
_MAX_ID = 200


class PublishResult(NamedTuple):
    table: str
    store_id: str
    #: The snapshot this publish committed; None when the table already held everything.
    snapshot_id: int | None
    operation: str  # "append", "overwrite" (a compaction was reflected), or "none"
    added_files: int
    removed_files: int
    added_rows: int
    new_columns: list[str]
    sealed_seq: int
    seconds: float
    #: Segments copied to the table's object storage by this publish (0 for a local
    #: table, whose data files are the store's own; objects already there whole are
    #: not copied again).
    uploaded_files: int = 0


def default_store_id(root: str) -> str:
    """``host:/real/path/of/the/store``: unique per machine without any stored state."""
    return f"{socket.gethostname()}:{os.path.realpath(root)}"


def check_store_id(store_id: object) -> str:
    if (
        not isinstance(store_id, str)
        or not 0 < len(store_id) <= _MAX_ID
        or not store_id.isprintable()
        or store_id != store_id.strip()
    ):
        raise IcebergInputError(
            f"store id: expected 1-{_MAX_ID} printable characters without surrounding "
            f"spaces; got {store_id!r}"
        )
    return store_id


def publish(
    store: str | os.PathLike[str],
    catalog: str,
    table: str = DEFAULT_TABLE,
    *,
    store_id: str | None = None,
    warehouse: str | None = None,
    s3_endpoint: str | None = None,
    s3_region: str | None = None,
) -> PublishResult:
    """Publish the sealed segments of ``store`` into ``table`` of ``catalog`` (see the
    module docstring); the WAL tail (not sealed yet) is not published. ``s3_endpoint``,
    ``s3_region``: the S3 server of an ``s3://`` warehouse (else from the environment,
    see :func:`._storage.s3_properties`)."""
    start = time.perf_counter()
    ident = table_identifier(table)
    paths = require_store(store)
    sid = check_store_id(store_id if store_id is not None else default_store_id(paths.root))
    props = s3_properties(s3_endpoint, s3_region)
    cat = open_catalog(catalog, create=True, warehouse=warehouse, properties=props)
    # Under the store's seal lock: no seal, compaction or garbage collection changes the
    # segments while they are published, and two publishes of one store never interleave
    # (pyiceberg retries a commit that lost a race by re-applying it on the new table:
    # for two publishes of the same segments that would register them twice).
    lock = FileLock(paths.seal_lock)
    try:
        with lock.held(), os_errors_as_storage(f"publishing {paths.root}"):
            manifest = FileCommitter(paths.manifest).load()
            if manifest.legacy and manifest.segments:
                raise PublishRefusedError(
                    f"{paths.manifest}: refused, nothing published: the manifest has no "
                    "segment hashes (written by an older evolog); `evolog compact` adds them"
                )
            from evolog.eventlog.sealed import SCHEMA

            tbl = load_or_create(cat, ident, SCHEMA)
            return _publish(tbl, paths, sid, manifest, start)
    finally:
        lock.close()
        close_catalog(cat)


def _publish(tbl: Table, paths: Paths, sid: str, manifest: Manifest, start: float) -> PublishResult:
    _check_spec(tbl)
    location = tbl.location()
    uploader = None if is_local(location) else Uploader(tbl.io)

    def locate(directory: str, info: SegmentInfo) -> str:
        return segment_uri(directory, info) if uploader is None else object_uri(location, info)

    want = {locate(paths.segments, s): s for s in manifest.segments}
    checked: dict[str, Checked] = {}
    name = table_name(tbl)
    verifier = Verifier(paths.segments, uploader)
    try:
        for _ in range(RETRIES):
            present = _published(tbl, sid)
            add = [info for uri, info in want.items() if uri not in present]
            remove = [df for uri, df in present.items() if uri not in want]
            _check_replaced(remove, add, sid)
            if not add and not remove:
                return PublishResult(
                    name, sid, None, "none", 0, 0, 0, [], manifest.sealed_seq, _since(start)
                )
            todo = [i for i in add if locate(paths.segments, i) not in checked]
            for seg in read_footers(paths.segments, todo, locate):
                checked[seg.uri] = seg
            segs = [checked[locate(paths.segments, i)] for i in add]
            verifier.start(segs)  # hashed while pyiceberg writes the snapshot
            result = _commit(tbl, sid, segs, remove, manifest.sealed_seq, verifier)
            if result is not None:
                snapshot_id, new_columns = result
                op = "overwrite" if remove else "append"
                rows = sum(s.info.rows for s in segs)
                return PublishResult(
                    name,
                    sid,
                    snapshot_id,
                    op,
                    len(segs),
                    len(remove),
                    rows,
                    new_columns,
                    manifest.sealed_seq,
                    _since(start),
                    uploader.uploaded if uploader is not None else 0,
                )
            with backend_errors(f"reloading table {name}"):
                tbl = tbl.refresh()
    finally:
        verifier.close()
    raise PublishRefusedError(
        f"table {name}: other publishers committed first {RETRIES} times in a row; "
        "nothing published (publish again)"
    )


def _since(start: float) -> float:
    return round(time.perf_counter() - start, 6)


def _check_spec(tbl: Table) -> None:
    from pyiceberg.transforms import IdentityTransform

    spec = tbl.spec()
    fields = spec.fields
    source = tbl.schema().find_field(STORE_ID) if STORE_ID in tbl.schema().column_names else None
    if (
        source is None
        or len(fields) != 1
        or fields[0].source_id != source.field_id
        or not isinstance(fields[0].transform, IdentityTransform)
    ):
        raise PublishRefusedError(
            f"table {table_name(tbl)}: refused, nothing published: expected a table partitioned by "
            f"identity({STORE_ID}) (as `evolog publish iceberg` creates it); got {spec}"
        )


def _published(tbl: Table, sid: str) -> dict[str, DataFile]:
    """This store's data files in the table's current snapshot, by location."""
    with backend_errors(f"reading the files of table {table_name(tbl)}"):
        tasks = tbl.scan(row_filter=predicate("EqualTo", STORE_ID, sid)).plan_files()
        return {t.file.file_path: t.file for t in tasks if t.file.partition[0] == sid}


def _check_replaced(remove: Sequence[DataFile], add: Sequence[SegmentInfo], sid: str) -> None:
    """A file leaves the table only for a segment holding its seqs (a compaction, or the
    store moved): anything else means the store id is another store's."""
    ranges = [(s.first_seq, s.last_seq) for s in add]
    for df in remove:
        m = _SEGMENT.match(os.path.basename(df.file_path))
        first, last = (int(m[1]), int(m[2])) if m else (0, -1)
        if not m or not any(lo <= first and last <= hi for lo, hi in ranges):
            raise PublishRefusedError(
                f"refused, nothing published: the table holds {df.file_path} under store id "
                f"{sid!r}, which this store's manifest does not account for (another store "
                "published under this id? give each store its own --store-id)"
            )


def _commit(
    tbl: Table,
    sid: str,
    segs: Sequence[Checked],
    remove: Sequence[DataFile],
    sealed_seq: int,
    verifier: Verifier,
) -> tuple[int, list[str]] | None:
    """One snapshot adding ``segs`` and removing ``remove``, committed once ``verifier``
    has matched every segment; None if another writer committed first (the caller
    reloads and starts over)."""
    from pyiceberg.exceptions import CommitFailedException

    with backend_errors(f"publishing into table {table_name(tbl)}"):
        tx = tbl.transaction()
        props = {
            "evolog.store-id": sid,
            "evolog.sealed-seq": str(sealed_seq),
            "evolog.replaced-files": str(len(remove)),
        }
        producer = None
        try:
            new_columns = grow(tx, {s.metadata.schema.to_arrow_schema() for s in segs})
            # (Transaction.table_metadata is a deep copy per access: taken once.)
            build = DataFiles(tx.table_metadata, sid).build
            files = [build(s) for s in segs]
            update = tx.update_snapshot(snapshot_properties=props)
            producer = update.overwrite() if remove else update.fast_append()
            with producer:
                for df in remove:
                    producer.delete_data_file(df)
                for f in files:
                    producer.append_data_file(f)
            verifier.wait(segs)
        except Exception:
            # A changed segment is refused as such, whatever its damage broke first.
            try:
                verifier.wait(segs)
            finally:
                if producer is not None:
                    _discard(tbl, str(producer.commit_uuid))
            raise
        try:
            committed = tx.commit_transaction()
        except CommitFailedException:
            return None
        snapshot = committed.current_snapshot()
        assert snapshot is not None
        return snapshot.snapshot_id, new_columns


def _discard(tbl: Table, commit_uuid: str) -> None:
    """Remove the manifests a refused publish wrote (named after its commit's uuid; no
    snapshot references them) from a local warehouse; elsewhere they stay, unreferenced,
    as after any failed Iceberg commit."""
    probe = tbl.location_provider().new_metadata_location(commit_uuid)
    if not probe.startswith("file://"):
        return
    directory = os.path.dirname(probe[len("file://") :])
    with contextlib.suppress(OSError):
        for entry in os.listdir(directory):
            if commit_uuid in entry:
                with contextlib.suppress(OSError):
                    os.remove(os.path.join(directory, entry))
