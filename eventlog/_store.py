"""Where things live in a store directory, and creating one."""

from __future__ import annotations

import contextlib
import errno
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


_SUBDIRS = ("wal", "segments", "index", "cache")


def init_store(root: str | os.PathLike[str]) -> Paths:
    """Create an empty store (idempotent on an existing store).

    A missing ``root`` is built in a temporary directory beside it and renamed into place, so
    a failure (a full disk, say) leaves nothing behind. An existing empty directory is filled
    in place (its owner's mode kept); a directory left half-made that way, or by an older
    version, holds only empty sub-directories and marker temp files, and the next ``init``
    recognises and completes it.
    """
    paths = Paths.of(root)
    if os.path.exists(paths.marker):
        return paths
    if os.path.exists(paths.root) and not os.path.isdir(paths.root):
        raise StoreExistsError(
            f"{paths.root}: expected an empty or missing directory for a new store; got a file"
        )
    if os.path.islink(paths.root) and not os.path.exists(paths.root):
        # Not replaced by a new directory: the link is someone's setup (a volume not mounted).
        raise StoreExistsError(
            f"{paths.root}: expected an empty or missing directory for a new store; got a "
            f"symbolic link to {os.readlink(paths.root)!r}, which does not exist"
        )
    if os.path.isdir(paths.root) and os.listdir(paths.root) and not _half_made(paths.root):
        raise StoreExistsError(
            f"{paths.root}: expected an empty or missing directory for a new store; "
            "got a non-empty directory without an evolog store"
        )
    try:
        if os.path.isdir(paths.root):
            # In place, keeping the directory its owner made (and its mode): it is empty or
            # holds only what an interrupted init leaves, and a failure here leaves it so.
            _build(paths.root)
        elif not _build_beside(paths):
            return init_store(root)  # it appeared meanwhile: decide again what it is
        fsync_dir(os.path.dirname(paths.root) or ".")
    except OSError as exc:  # a parent that is a file, no permission, a full disk
        if os.path.exists(paths.marker):  # another process made it meanwhile
            return paths
        raise storage_error(exc, f"creating a store at {paths.root}") from None
    return paths


def _half_made(root: str) -> bool:
    """Whether ``root`` holds nothing but what an interrupted :func:`_build` leaves."""
    for name in os.listdir(root):
        path = os.path.join(root, name)
        if name in _SUBDIRS and os.path.isdir(path) and not os.path.islink(path):
            if os.listdir(path):
                return False
        elif not (name.startswith(MARKER + ".tmp.") and os.path.isfile(path)):
            return False
    return True


def _build(root: str) -> None:
    """The directories, then the marker last: a store exists once its marker does."""
    for name in os.listdir(root) if os.path.isdir(root) else ():
        if name.startswith(MARKER + ".tmp.") and not _alive(name.rsplit(".", 1)[1]):
            # Another init at work on this directory keeps its own.
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(root, name))
    for d in (root, *(os.path.join(root, n) for n in _SUBDIRS)):
        os.makedirs(d, exist_ok=True)
    atomic_write(
        os.path.join(root, MARKER), msgspec.json.encode({"format": FORMAT, "kind": "evolog-store"})
    )


def _alive(pid: str) -> bool:
    if not (pid.isascii() and pid.isdigit()):
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except OSError:  # someone else's process: alive
        return True
    return True


def _build_beside(paths: Paths) -> bool:
    """Build the store in a new directory beside ``root`` (which does not exist), then
    rename it into place. False: ``root`` appeared meanwhile, not as a store."""
    import secrets
    import shutil

    parent = os.path.dirname(paths.root)
    if not os.path.lexists(parent):  # a parent that is a file fails below, as ENOTDIR
        os.makedirs(parent, exist_ok=True)
    # Not mkdtemp: its 0700 would become the store's mode; mkdir's follows the umask.
    tmp = os.path.join(
        parent, f".{os.path.basename(paths.root)}.init-{os.getpid()}-{secrets.token_hex(4)}"
    )
    try:
        os.mkdir(tmp)
    except OSError as exc:
        exc.filename = paths.root  # the build directory's name means nothing to the user
        raise
    try:
        _build(tmp)
        try:
            os.rename(tmp, paths.root)
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.EISDIR):
                raise
            return os.path.exists(paths.marker)  # True: another process made it first
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return True


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
