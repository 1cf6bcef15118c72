"""Small file-system helpers: locks, durable writes, OSError mapping."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import NamedTuple

from ._errors import LockTimeoutError, StorageError

#: A waiting interactive command names the lock's holder after this long (seconds): a
#: lock held for a moment by another append is normal and not worth a line.
NOTICE_AFTER_S = 0.5


class LockWait(NamedTuple):
    """How to wait for a lock another process holds.

    ``timeout``: give up (:class:`LockTimeoutError`) after this many seconds; None waits as
    long as it takes. ``notice``: called once with a one-line message naming the holder when
    the wait passes :data:`NOTICE_AFTER_S`.
    """

    timeout: float | None = None
    notice: Callable[[str], None] | None = None


class FileLock:
    """An exclusive ``flock`` on a lock file, shared by every process using the store.

    flock locks belong to the open file description, so a killed holder releases its lock
    with its last descriptor: no stale lock files to clean up after kill -9.

    The file is opened (read-write, created if missing) only when the lock is first taken,
    so readers that build a writer they never use work on read-only media.
    """

    def __init__(self, path: str, wait: LockWait | None = None) -> None:
        self.path = path
        self.wait = wait
        self._fd = -1

    def _open(self) -> int:
        try:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            err = StorageError(
                f"{self.path}: cannot take the store's lock ({exc.strerror or exc}); "
                "writing needs write access to the store, reading "
                "does not"
            )
            err.errno = exc.errno
            raise err from None
        return self._fd

    def acquire(self, blocking: bool = True) -> bool:
        fd = self._fd if self._fd >= 0 else self._open()
        # Uncontended, this is the one flock a blocking call would have cost.
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if not blocking:
                return False
        if self.wait is None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        elif self.wait.timeout is None:
            self._wait_forever(fd, self.wait)
        else:
            self._wait_until(fd, self.wait, self.wait.timeout)
        return True

    def _wait_forever(self, fd: int, wait: LockWait) -> None:
        timer = None
        if wait.notice is not None:
            # The main thread sleeps in flock (woken the moment the lock is free); the
            # notice comes from a timer, only if the wait lasts.
            timer = threading.Timer(NOTICE_AFTER_S, self._notify, (fd, wait.notice))
            timer.daemon = True
            timer.start()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        finally:
            if timer is not None:
                timer.cancel()

    def _wait_until(self, fd: int, wait: LockWait, timeout: float) -> None:
        # flock has no timeout: poll, backing off to a few ms between tries.
        start = time.monotonic()
        pause = 0.001
        noticed = wait.notice is None
        while True:
            time.sleep(pause)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                pass
            waited = time.monotonic() - start
            if not noticed and waited >= NOTICE_AFTER_S:
                noticed = True
                self._notify(fd, wait.notice)
            if waited >= timeout:
                holder = lock_holder(fd)
                raise LockTimeoutError(
                    f"{self.path}: expected the lock within {timeout:.1f} s; it is still held by "
                    f"{_describe(holder)}",
                    holder=holder,
                )
            pause = min(pause * 2, 0.02, max(timeout - waited, 0.001))

    def _notify(self, fd: int, notice: Callable[[str], None] | None) -> None:
        if notice is not None:
            notice(f"waiting for {self.path}, held by {_describe(lock_holder(fd))}")

    def release(self) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_UN)

    def fileno(self) -> int:
        """The lock file's descriptor (after the first :meth:`acquire`)."""
        return self._fd

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        self.acquire()
        try:
            yield
        finally:
            self.release()

    def close(self) -> None:
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = -1


def lock_holder(fd: int) -> int | None:
    """The pid holding the flock on ``fd``'s file, from /proc/locks (None if unknown).

    Read from the kernel rather than recorded by the holder: a pid written at each locking
    would cost every durable append a write, and one written per writer names whoever
    opened last, not whoever holds the lock.
    """
    try:
        st = os.fstat(fd)
        with open("/proc/locks", encoding="ascii", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    want = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    by_inode = []
    for line in lines:
        fields = line.split()
        if len(fields) < 6 or fields[1] == "->" or fields[1] != "FLOCK":
            continue  # waiters ("->") and POSIX locks are not holders of this flock
        if not fields[4].isdigit():
            continue
        if fields[5] == want:
            return int(fields[4])
        if fields[5].rsplit(":", 1)[-1] == str(st.st_ino):
            by_inode.append(int(fields[4]))  # e.g. overlayfs reports the lower device
    return by_inode[0] if len(by_inode) == 1 else None


def _describe(pid: int | None) -> str:
    if pid is None:
        return "another process (its pid is unknown here)"
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = " ".join(f.read().decode("utf-8", "replace").replace("\0", " ").split())
    except OSError:
        cmd = ""
    cmd = cmd if len(cmd) <= 80 else cmd[:79] + "…"
    return f"pid {pid} ({cmd})" if cmd else f"pid {pid}"


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


def temp_beside(path: str) -> str:
    """A temporary name beside ``path`` that no other writer uses: two threads or processes
    replacing the same file at once each write their own (with one shared name, one renames
    the other's half-written file into place). The pid stays last, so a sweep can tell a dead
    writer's leftover; os.urandom rather than secrets, which would load OpenSSL in the hook."""
    return f"{path}.tmp.{os.urandom(6).hex()}.{os.getpid()}"


def atomic_write(path: str, data: bytes) -> None:
    """Replace ``path`` with ``data``: temp file, fsync, rename, fsync dir."""
    tmp = temp_beside(path)
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
