"""The Claude Code hook's own files: per-session state and the dead letter, both bounded.

State: which attempt is open in a session lives in ``<store>/hooks/claude-code/<name>.json``,
where ``<name>`` is the session id with every byte outside ``[A-Za-z0-9_.-]`` written as
``%XX`` (reversible, so ``a/b`` and ``a_b`` never share a file), or ``=`` and the id's
SHA-256 when that would be longer than ``MAX_NAME`` characters. A session's file is removed
at ``SessionEnd`` (after ``Stop`` it keeps the signals the session saw); files untouched for
``STALE_AFTER_S`` (7 days: sessions that crashed before ``SessionEnd``) are removed at every
``SessionStart`` and ``SessionEnd``. The
state is a cache: if it is lost, the next prompt opens a new attempt. Each file is updated
under an flock, waited for at most ``STATE_LOCK_TIMEOUT_S``; a holder re-checks after locking
that the path still names the file it locked (another hook may have removed it).

Dead letter: a payload the hook could not record is appended, redacted (as text: the rules
see JSON escaped to any depth, so a secret inside a JSON string inside the payload is found)
and then cut to ``DEAD_LETTER_ENTRY`` characters, to ``<store>/dead-letter.ndjson`` (the
store is created if missing), else (a path that cannot be a store, or a failed write) to
``$XDG_STATE_HOME/evolog/dead-letter.ndjson`` (default ``~/.local/state/evolog/``). Past
``DEAD_LETTER_MAX`` bytes the file is renamed to ``dead-letter.ndjson.1`` (replacing the
previous one), so a dead letter never takes more than about twice that. A write that fails
(a full or read-only disk) is reported as such, never as kept.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import time
from collections.abc import Iterator
from typing import Any, Final, Generic, TypeVar

import msgspec

from evolog.eventlog import EventLogError, init_store

from ._content import redact, sha256_hex

__all__ = [
    "DEAD_LETTER_ENTRY",
    "DEAD_LETTER_MAX",
    "MAX_NAME",
    "STALE_AFTER_S",
    "STATE_LOCK_TIMEOUT_S",
    "Held",
    "fallback_dead_letter",
    "keep_dead_letter",
    "locked_state",
    "prune_states",
    "state_dir",
    "state_name",
]

MAX_NAME: Final = 120
STALE_AFTER_S: Final = 7 * 86400
STATE_LOCK_TIMEOUT_S: Final = 2.0
MAX_STATE_BYTES: Final = 1 << 20
DEAD_LETTER_MAX: Final = 1 << 20
DEAD_LETTER_ENTRY: Final = 64 * 1024
_SAFE: Final = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")

S = TypeVar("S", bound=msgspec.Struct)


# -- state ------------------------------------------------------------------------------
def state_dir(root: str) -> str:
    return os.path.join(root, "hooks", "claude-code")


def state_name(session: str) -> str:
    """The file name of a session's state (see the module docstring)."""
    raw = session.encode("utf-8", "surrogatepass")
    name = "".join(chr(b) if b in _SAFE else f"%{b:02X}" for b in raw)
    if len(name) > MAX_NAME:
        name = "=" + sha256_hex(raw)
    return name + ".json"


class Held(Generic[S]):
    """A session state held under its lock; set ``remove`` to delete the file on release."""

    def __init__(self, state: S) -> None:
        self.state = state
        self.remove = False


@contextlib.contextmanager
def locked_state(path: str, kind: type[S]) -> Iterator[Held[S]]:
    """Hold ``path``'s state under an exclusive flock; write it back (or remove it) after."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = _open_locked(path)
    try:
        data = os.pread(fd, MAX_STATE_BYTES, 0)
        try:
            state = msgspec.json.decode(data, type=kind) if data.strip() else kind()
        except msgspec.MsgspecError:
            state = kind()  # a torn or foreign file: the state is a cache, start afresh
        held = Held(state)
        yield held
        if held.remove:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        else:
            encoded = msgspec.json.encode(held.state)
            os.ftruncate(fd, 0)
            os.pwrite(fd, encoded, 0)
    finally:
        os.close(fd)


def _open_locked(path: str) -> int:
    deadline = time.monotonic() + STATE_LOCK_TIMEOUT_S
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            _flock_until(fd, deadline, path)
            # Another hook may have removed the file (Stop, SessionEnd, pruning) while this
            # one waited: then the lock is on an orphan, and the state must go to the path.
            if _same_file(fd, path):
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)


def _flock_until(fd: int, deadline: float, path: str) -> None:
    pause = 0.001
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    errno.ETIMEDOUT,
                    f"session state held by another process for over {STATE_LOCK_TIMEOUT_S:g} s",
                    path,
                ) from None
            time.sleep(pause)
            pause = min(pause * 2, 0.02)


def _same_file(fd: int, path: str) -> bool:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    own = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (own.st_dev, own.st_ino)


def prune_states(directory: str, now: float | None = None) -> int:
    """Remove state files untouched for ``STALE_AFTER_S``; return how many were removed."""
    now = time.time() if now is None else now
    removed = 0
    try:
        names = os.listdir(directory)
    except OSError:
        return 0
    for name in names:
        path = os.path.join(directory, name)
        with contextlib.suppress(OSError):
            if name.endswith(".json") and now - os.stat(path).st_mtime > STALE_AFTER_S:
                removed += _remove_if_idle(path, now)
    return removed


def _remove_if_idle(path: str, now: float) -> int:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return 0  # in use right now: not stale
        if _same_file(fd, path) and now - os.fstat(fd).st_mtime > STALE_AFTER_S:
            os.unlink(path)
            return 1
        return 0
    finally:
        os.close(fd)


# -- dead letter -------------------------------------------------------------------------
def fallback_dead_letter() -> str:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return os.path.join(base, "evolog", "dead-letter.ndjson")


def keep_dead_letter(store_root: str, raw: bytes, error: str) -> tuple[str | None, str]:
    """Append a dead letter; return (the file it went to, "") or (None, why it could not)."""
    # A JSON "\u0067hp_..." escape would hide a token from the rules: printable ASCII
    # escapes are read back first (a quote or a backslash stays escaped).
    text = _ESCAPED.sub(_unescape, raw.decode("utf-8", "replace"))
    entry: dict[str, Any] = {"at_us": time.time_ns() // 1000, "error": redact(error)}
    if len(text) > DEAD_LETTER_ENTRY:
        entry["payload_chars"] = len(text)
    # Redact before cutting: a secret cut at the limit could be too short for its rule.
    # Some way past the limit is scanned, no more (the rest is dropped anyway).
    entry["payload"] = redact(text[: 2 * DEAD_LETTER_ENTRY])[:DEAD_LETTER_ENTRY]
    line = msgspec.json.encode(entry) + b"\n"
    why = []
    targets = [fallback_dead_letter()]
    # In the store (created if missing) only when it is one: a directory that cannot
    # become a store is not ours to write in.
    try:
        targets.insert(0, init_store(store_root).dead_letter)
    except (OSError, EventLogError) as exc:
        why.append(f"{store_root}: {getattr(exc, 'strerror', None) or exc}")
    for path in targets:
        try:
            _append(path, line)
            return path, ""
        except OSError as exc:
            why.append(f"{path}: {exc.strerror or exc}")
    return None, "; ".join(why)


_ESCAPED: Final = re.compile(r"\\u00([2-7][0-9a-fA-F])")


def _unescape(m: re.Match[str]) -> str:
    char = chr(int(m.group(1), 16))
    return m.group(0) if char in '"\\\x7f' else char


def _append(path: str, line: bytes) -> None:
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    fd = _open_append(path)
    try:
        # Rotation needs the lock (two rotators would drop a generation); a writer that
        # cannot have it at once appends without rotating, never waits.
        locked = _try_lock(fd)
        if locked and os.fstat(fd).st_size + len(line) > DEAD_LETTER_MAX:
            os.replace(path, path + ".1")
            os.close(fd)
            fd = _open_append(path)
            locked = _try_lock(fd)
        start = os.fstat(fd).st_size
        try:
            written = os.write(fd, line)
        except OSError:
            if locked:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, start)
            raise
        if written != len(line):
            if locked:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, start)
            raise OSError(errno.ENOSPC, f"short write ({written} of {len(line)} bytes)")
    finally:
        os.close(fd)


def _open_append(path: str) -> int:
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False
