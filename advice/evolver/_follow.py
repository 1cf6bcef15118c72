"""``follow``: tail a live evolver memory graph into our log.

The byte offset after the last complete line imported is kept in a small state file under
the store's ``cache/`` (a cache: if it is lost, following starts over, and re-importing is
idempotent). A last line without its newline is being written: it is left until the newline
arrives. If the file is replaced or truncated (another inode, a shorter file, other first
bytes), following starts over from its beginning.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator

import msgspec
from evolog.eventlog import EventLog, temp_beside

from .._errors import EvolverSourceError
from ._file import MAX_LINE_BYTES, READ_CHUNK, EvolverImporter, ImportReport, read_range

_POLL_READ = MAX_LINE_BYTES + READ_CHUNK

FINGERPRINT_BYTES = 4096
STATE_DIR = "evolver-follow"


class FollowState(msgspec.Struct, frozen=True):
    """Where following a file stands: its identity, first bytes and the offset consumed."""

    path: str
    dev: int
    ino: int
    offset: int
    fingerprint: str

    def to_json(self) -> dict[str, object]:
        return {
            "path": self.path,
            "dev": self.dev,
            "ino": self.ino,
            "offset": self.offset,
            "fingerprint": self.fingerprint,
        }


def state_path(log: EventLog, path: str) -> str:
    """The follow-state file of ``path`` in the store's cache directory."""
    name = hashlib.blake2b(os.path.abspath(path).encode(), digest_size=10).hexdigest()
    return os.path.join(log.paths.cache, STATE_DIR, name + ".json")


def load_state(file: str) -> FollowState | None:
    """The saved state, or None if it is missing or unreadable (a cache: start over)."""
    try:
        with open(file, encoding="utf-8") as f:
            data = json.load(f)
        return FollowState(
            str(data["path"]),
            int(data["dev"]),
            int(data["ino"]),
            int(data["offset"]),
            str(data["fingerprint"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def save_state(file: str, state: FollowState) -> None:
    """Write the state atomically; failing to save a cache never stops following."""
    tmp = temp_beside(file)
    with contextlib.suppress(OSError):
        os.makedirs(os.path.dirname(file), exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(state.to_json(), f)
        os.replace(tmp, file)


def _fingerprint(path: str, offset: int) -> str:
    head = read_range(path, 0, min(offset, FINGERPRINT_BYTES))
    return hashlib.blake2b(head, digest_size=16).hexdigest()


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise EvolverSourceError(f"{path}: cannot stat the evolver graph: {exc.strerror}") from None


class Follower:
    """Follows one evolver file into a log; call :meth:`poll` repeatedly."""

    def __init__(self, log: EventLog, path: str, agent: str = "evolver", id_prefix: str = ""):
        self.log = log
        self.path = os.fspath(path)
        self.agent = agent
        self.id_prefix = id_prefix
        self.state_file = state_path(log, self.path)
        self.restarts = 0
        self._importer = EvolverImporter(log, self.path, agent, id_prefix)
        self._state: FollowState | None = None

    def _start_over(self, st: os.stat_result) -> FollowState:
        self._importer = EvolverImporter(self.log, self.path, self.agent, self.id_prefix)
        return FollowState(self.path, st.st_dev, st.st_ino, 0, _fingerprint(self.path, 0))

    def _resume(self, st: os.stat_result) -> FollowState:
        """The state to continue from: the saved one if it still describes this file."""
        saved = self._state or load_state(self.state_file)
        if (
            saved is None
            or (saved.dev, saved.ino) != (st.st_dev, st.st_ino)
            or st.st_size < saved.offset
            or saved.fingerprint != _fingerprint(self.path, saved.offset)
        ):
            if saved is not None:
                self.restarts += 1
            return self._start_over(st)
        if self._state is None and saved.offset:
            # A new process: learn the ids already used in the part imported before.
            self._importer.remember(read_range(self.path, 0, saved.offset), 0)
        return saved

    def poll(self, report: ImportReport) -> bool:
        """Import complete lines added since the last poll; True if the file exists."""
        st = _stat(self.path)
        if st is None:
            return False
        state = self._resume(st)
        # In bounded reads: a file that never ends (a device, a FIFO) must meet the line
        # cap, not be read whole first.
        consumed = state.offset
        while True:
            data = read_range(self.path, consumed, consumed + _POLL_READ)
            consumed = self._importer.feed(data, consumed, final=False, report=report)
            if len(data) < _POLL_READ:
                break
        if consumed != state.offset or self._state is None:
            fp = _fingerprint(self.path, consumed)
            state = FollowState(self.path, st.st_dev, st.st_ino, consumed, fp)
            save_state(self.state_file, state)
        self._state = state
        return True


@contextlib.contextmanager
def _ctrl_c_after() -> Iterator[None]:
    """Ctrl-C during a poll takes effect when the poll ends: the lines it appended, its
    saved offset and the report's counts then agree (a KeyboardInterrupt between the append
    and the count reported fewer events than were imported)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pressed: list[int] = []
    old = signal.getsignal(signal.SIGINT)
    if old == signal.SIG_IGN:  # `cmd &` in a script ignores SIGINT: keep that
        yield
        return
    signal.signal(signal.SIGINT, lambda signum, frame: pressed.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
    if pressed:
        raise KeyboardInterrupt


def follow_evolver(
    log: EventLog,
    path: str | os.PathLike[str],
    *,
    poll_seconds: float = 1.0,
    agent: str = "evolver",
    id_prefix: str = "",
    should_stop: Callable[[], bool] | None = None,
    on_poll: Callable[[ImportReport], None] | None = None,
) -> ImportReport:
    """Tail ``path`` into ``log`` until ``should_stop()`` is true or Ctrl-C; return totals.

    ``on_poll`` sees the running totals after every poll (for progress output).
    """
    follower = Follower(log, os.fspath(path), agent, id_prefix)
    report = ImportReport(follower.path)
    try:
        while True:
            with _ctrl_c_after():
                follower.poll(report)
            if on_poll is not None:
                on_poll(report)
            if should_stop is not None and should_stop():
                return report
            time.sleep(poll_seconds)
    except KeyboardInterrupt:
        # The state is saved after every poll, so stopping here loses nothing.
        return report
