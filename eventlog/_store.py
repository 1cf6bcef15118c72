"""Where things live in a store directory, and creating one."""

from __future__ import annotations

import contextlib
import os
from typing import NamedTuple

import msgspec

from ._errors import StoreExistsError, StoreNotFoundError
from ._files import atomic_write, fsync_dir, storage_error

MARKER = "EVOLOG"
FORMAT = 1


class Paths(NamedTuple):
    root: str
    marker: str
    manifest: str
    write_lock: str
    seal_lock: str
    wal: str
    segments: str
    id_index: str
    cache: str
    recovery_log: str
    dead_letter: str

    @classmethod
    def of(cls, root: str | os.PathLike[str]) -> Paths:
        r = os.path.abspath(os.fspath(root))
        j = os.path.join
        return cls(
            r,
            j(r, MARKER),
            j(r, "manifest.json"),
            j(r, "write.lock"),
            j(r, "seal.lock"),
            j(r, "wal"),
            j(r, "segments"),
            j(r, "index"),
            j(r, "cache"),
            j(r, "recovery.log"),
            j(r, "dead-letter.ndjson"),
        )


def init_store(root: str | os.PathLike[str]) -> Paths:
    """Create an empty store (idempotent on an existing store)."""
    paths = Paths.of(root)
    if os.path.exists(paths.marker):
        return paths
    if os.path.isdir(paths.root) and os.listdir(paths.root):
        raise StoreExistsError(
            f"{paths.root}: expected an empty or missing directory for a new store; "
            "got a non-empty directory without an evolog store"
        )
    if os.path.exists(paths.root) and not os.path.isdir(paths.root):
        raise StoreExistsError(
            f"{paths.root}: expected an empty or missing directory for a new store; got a file"
        )
    try:
        for d in (paths.root, paths.wal, paths.segments, paths.id_index, paths.cache):
            os.makedirs(d, exist_ok=True)
        atomic_write(paths.marker, msgspec.json.encode({"format": FORMAT, "kind": "evolog-store"}))
        fsync_dir(os.path.dirname(paths.root) or ".")
    except OSError as exc:  # a parent that is a file, no permission, a full disk
        raise storage_error(exc, f"creating a store at {paths.root}") from None
    return paths


def require_store(root: str | os.PathLike[str]) -> Paths:
    paths = Paths.of(root)
    if not os.path.exists(paths.marker):
        raise StoreNotFoundError(
            f"{paths.root}: expected an evolog store; found none (create one with "
            f"`evolog init {paths.root}`)"
        )
    for d in (paths.wal, paths.segments, paths.id_index, paths.cache):
        if not os.path.isdir(d):
            # On read-only media a reader goes on without it; a writer fails on its lock
            # with a clear error before it would need the directory.
            with contextlib.suppress(OSError):
                os.makedirs(d, exist_ok=True)
    return paths
