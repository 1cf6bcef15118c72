"""Small file-system helpers: locks, durable writes, OSError mapping."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from collections.abc import Iterator

from ._errors import StorageError


class FileLock:
    """An exclusive ``flock`` on a lock file, shared by every process using the store.

    flock locks belong to the open file description, so a killed holder releases its lock
    with its last descriptor: no stale lock files to clean up after kill -9.
    """

    def __init__(self, path: str) -> None:
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)

    def acquire(self, blocking: bool = True) -> bool:
        flags = fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB)
        try:
            fcntl.flock(self._fd, flags)
        except BlockingIOError:
            return False
        return True

    def release(self) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_UN)

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        self.acquire()
        try:
            yield
        finally:
            self.release()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)


def fsync_dir(path: str) -> None:
    """Make a rename or a new file in ``path`` durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    """os.write until everything is written (short writes happen near a full disk)."""
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def atomic_write(path: str, data: bytes) -> None:
    """Replace ``path`` with ``data``: temp file, fsync, rename, fsync dir."""
    tmp = f"{path}.tmp.{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        write_all(fd, data)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    os.close(fd)
    os.replace(tmp, path)
    fsync_dir(os.path.dirname(path) or ".")


def storage_error(exc: OSError, what: str) -> StorageError:
    """Map an OSError to our own error, saying what we were doing."""
    reason = (
        "the disk is full"
        if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
        else (exc.strerror or str(exc))
    )
    err = StorageError(exc.errno or 0, f"{what}: {reason}")
    if exc.filename is not None:  # assigning None would print as ": None"
        err.filename = exc.filename
    return err


@contextlib.contextmanager
def os_errors_as_storage(what: str) -> Iterator[None]:
    """Raise an OSError from the body (ours excepted) as a StorageError about ``what``."""
    try:
        yield
    except StorageError:
        raise
    except OSError as exc:
        raise storage_error(exc, what) from None
