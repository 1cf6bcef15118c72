"""Which WAL file is the active one: the writer's view, followed across rotations.

A seal rotates the WAL under the write lock: it takes the write permission off the active
file (:func:`evolog.eventlog.wal._wal.retire`), then makes the next one, named by the seq after the
last one in the old file, and later deletes the old file. Every writer sees both in the
fstat it makes on each append anyway (mode, link count): no syscall more per append, and
no timestamp, which a rotation can share with the previous change of the directory on
coarse-grained filesystems (a writer that went on appending to the old file lost
acknowledged events and handed their seqs out twice).

A log that ends before seqs known to exist (seen by this writer, or recorded in the id
index) lost a WAL file or its tail: the writer refuses rather than hand those seqs out again.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from .._errors import CorruptLogError
from ..sealed._manifest import FileCommitter
from . import _frames as fr
from . import _wal

if TYPE_CHECKING:
    from .._store import Paths
    from ..index._idindex import IdIndex


class ActiveWal:
    """The active-file part of :class:`evolog.eventlog.wal._writer.Writer` (a mixin)."""

    # Provided by Writer.
    paths: Paths
    repairs: list[_wal.Repair]
    _dsync: bool
    _fd: int
    _base: int
    _size: int
    _next_seq: int
    _seen: int  # the newest seq this writer knows to exist

    def _index_open(self) -> IdIndex:
        raise NotImplementedError

    def _follow_active(self) -> bool:
        """Make ``_fd`` the active (newest) WAL file and ``_next_seq`` its next seq; whether
        anything changed since this writer's last look. The caller holds the write lock."""
        changed = False
        for _ in range(100):
            opened = self._fd < 0
            if opened:
                self._open_active()
                changed = True
            st = os.fstat(self._fd)
            if st.st_nlink == 0:  # deleted: sealed (then a newer file exists), or lost
                self._close_active()
                continue
            if st.st_size != self._size:
                changed = True
                path = os.path.join(self.paths.wal, _wal.wal_name(self._base))
                self._next_seq, self._size, repair = _wal.check_tail(
                    path, self._fd, st.st_size, self._base
                )
                if repair is not None:
                    self.repairs.append(repair)
                    _wal.report_repair(self.paths.recovery_log, repair)
            if st.st_mode & _wal.WRITABLE:
                return changed
            if opened:  # the newest file, retired by a rotation stopped before its next file
                self._check_known(self._next_seq - 1)
                self._start_next()
                return True
            self._close_active()  # rotated away from: the newer file is the active one
        raise CorruptLogError(f"{self.paths.wal}: WAL files keep changing; cannot append")

    def _start_next(self) -> None:
        """Make the next active file, at ``_next_seq``; the current one is retired."""
        fd, _ = _wal.create(self.paths.wal, self._next_seq, self._dsync)
        self._close_active()
        self._fd = fd
        self._base = self._next_seq
        self._size = fr.FILE_HEADER.size

    def _close_active(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
            # What the closed file held exists: the next file must hold it too, or carry on
            # from it (a deleted newest file is caught here, even before the index knows).
            self._seen = max(self._seen, self._next_seq - 1)

    def _check_known(self, head: int) -> None:
        """Raise unless the log holds every seq known to exist, before a file is made."""
        covered = self._index_open().covered_seq
        if covered > head or self._seen > head:
            raise _wal.missing_error(self.paths, head, covered, self._seen)

    def _open_active(self) -> None:
        self._close_active()
        files = _wal.list_wal(self.paths.wal)
        if files:
            self._base, path = files[-1]
            try:
                self._fd = _wal.open_append(path, self._dsync)
            except PermissionError:  # retired (read-only): read, then finish the rotation
                self._fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        else:
            sealed = FileCommitter(self.paths.manifest).load().sealed_seq
            self._check_known(sealed)
            self._base = sealed + 1
            self._fd, _ = _wal.create(self.paths.wal, self._base, self._dsync)
        self._size = -1
