"""The worker's files under ``<store>/worker/``: its secret, where it listens, its log.

``token``: the per-user secret an http hook sends as ``Authorization: Bearer TOKEN``
(created once, mode 0600, 32 random bytes). ``worker.json``: the pid and port of the
worker, written by whoever starts it (so a second start finds it at once) and rewritten
by the worker once it listens (``ready``); it is removed when the worker stops. It names the
evolog version and the Python environment the worker runs, so a worker left running from
before an upgrade (or from another installation) is found and replaced at the next start.
``worker.log``: the worker's stderr. Starting takes an flock on ``start.lock``, so two
sessions starting at the same moment start one worker.

Importing this module costs the command hook nothing it does not already import (it is
read at ``SessionStart`` with ``--start-worker``).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import signal
import sys
import time
from collections.abc import Iterator

import msgspec

from evolog.eventlog import temp_beside

__all__ = [
    "DEFAULT_PORT",
    "Record",
    "current",
    "ensure_started",
    "header_file",
    "read_token",
    "running",
    "stop",
    "worker_dir",
    "worker_port",
    "write_record",
]

DEFAULT_PORT = 8421
"""The worker's port unless ``EVOLOG_WORKER_PORT`` names another (``evolog serve``: 8420)."""


class Record(msgspec.Struct):
    pid: int
    port: int
    host: str = "127.0.0.1"
    started: float = 0.0
    ready: bool = False
    version: str = ""  # "" from an evolog that did not record it: another version
    executable: str = ""
    prefix: str = ""


def installed_version() -> str:
    """The installed distribution's version, read from its metadata now (an upgrade made
    while a process runs shows here, not in what the process imported)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("evolog")
    except PackageNotFoundError:
        return "unknown"


def current(pid: int, port: int, ready: bool = False) -> Record:
    """A record naming this process's evolog and environment."""
    return Record(
        pid=pid,
        port=port,
        started=time.time(),
        ready=ready,
        version=installed_version(),
        executable=sys.executable,
        prefix=sys.prefix,
    )


def stale(record: Record) -> str | None:
    """Why ``record``'s worker is not this installation's (another version or environment:
    ``sys.prefix``, as ``python`` and ``python3`` name one environment), else None."""
    version = installed_version()
    if record.version != version:
        return f"version {record.version or 'unrecorded'}, expected {version}"
    if record.prefix != sys.prefix:
        return f"environment {record.prefix or 'unrecorded'}, expected {sys.prefix}"
    return None


def worker_dir(root: str) -> str:
    return os.path.join(root, "worker")


def worker_port(environ: dict[str, str] | None = None) -> int:
    """``EVOLOG_WORKER_PORT`` or :data:`DEFAULT_PORT` (a bad value is an error naming it)."""
    raw = (os.environ if environ is None else environ).get("EVOLOG_WORKER_PORT", "").strip()
    if not raw:
        return DEFAULT_PORT
    try:
        port = int(raw)
    except ValueError:
        port = 0
    if not 1 <= port <= 65535:
        raise ValueError(f"EVOLOG_WORKER_PORT: expected a TCP port from 1 to 65535; got {raw!r}")
    return port


def read_token(root: str) -> str:
    """The store's worker secret, created (mode 0600) on first use."""
    directory = worker_dir(root)
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "token")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        with open(path, encoding="ascii") as f:
            token = f.read().strip()
        if not token:
            raise ValueError(f"{path}: expected a token; got an empty file (remove it)") from None
        return token
    token = secrets.token_urlsafe(32)
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write(token + "\n")
    return token


def header_file(root: str) -> str:
    """A file holding the ``Authorization`` header line (mode 0600), for ``curl -H @FILE``:
    a token on a command line would show in every user's process list."""
    line = f"Authorization: Bearer {read_token(root)}\n"
    path = os.path.join(worker_dir(root), "header")
    try:
        with open(path, encoding="ascii") as f:
            if f.read() == line:
                return path
    except OSError:
        pass
    tmp = temp_beside(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write(line)
    os.replace(tmp, path)
    return path


def _record_path(root: str) -> str:
    return os.path.join(worker_dir(root), "worker.json")


def read_record(root: str) -> Record | None:
    try:
        with open(_record_path(root), "rb") as f:
            return msgspec.json.decode(f.read(), type=Record)
    except (OSError, msgspec.DecodeError):
        return None


def write_record(root: str, record: Record) -> None:
    """Replace ``worker.json`` atomically (a reader sees the old or the new one)."""
    path = _record_path(root)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = temp_beside(path)
    with open(tmp, "wb") as f:
        f.write(msgspec.json.encode(record))
    os.replace(tmp, path)


def remove_record(root: str, pid: int) -> None:
    """Remove ``worker.json`` if it still names ``pid`` (a newer worker keeps its own)."""
    record = read_record(root)
    if record is not None and record.pid == pid:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(_record_path(root))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process reuses the pid: not our worker
        return False
    # A zombie (exited, not yet reaped by the parent that started it) is not a worker.
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


def _is_worker(pid: int) -> bool:
    """Whether ``pid`` runs ``evolog ... worker run`` (a pid reused after a crash or a
    reboot by another program is not our worker)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            words = f.read().split(b"\0")
    except OSError:
        return True  # no /proc (not Linux): trust the pid
    return b"worker" in words and b"run" in words


def running(root: str) -> Record | None:
    """The record of this store's worker if its process is alive."""
    record = read_record(root)
    if record is None or not _alive(record.pid) or not _is_worker(record.pid):
        return None
    return record


@contextlib.contextmanager
def _start_lock(root: str) -> Iterator[None]:
    directory = worker_dir(root)
    os.makedirs(directory, exist_ok=True)
    fd = os.open(
        os.path.join(directory, "start.lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600
    )
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def ensure_started(root: str, port: int, extra: list[str] | None = None) -> tuple[Record, bool]:
    """This store's worker, started detached if none runs; and whether it was started now.

    A running worker of another evolog version or environment (:func:`stale`) is stopped
    and replaced: after an upgrade the hooks would otherwise keep the old code. The child
    is a new session (it outlives the hook or shell that started it), reads nothing from
    stdin and writes its stderr to ``worker.log``.
    """
    import subprocess

    with _start_lock(root):
        record = running(root)
        if record is not None and record.ready and stale(record) is not None:
            stop(root)
            record = None
        if record is not None:
            return record, False
        header_file(root)  # the token, created before the worker reads it; the launcher's
        log = os.path.join(worker_dir(root), "worker.log")
        args = [sys.executable, "-m", "evolog", "--store", root, "worker", "run"]
        args += ["--port", str(port), *(extra or [])]
        # The log may name what a failed dream was reading: as private as the token.
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "ab") as err:
            child = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                start_new_session=True,
                close_fds=True,
                cwd=root,  # not the session's project: it may be removed while we run
            )
        record = current(child.pid, port)
        write_record(root, record)
        return record, True


def stop(root: str, wait_s: float = 10.0) -> Record | None:
    """Stop this store's worker (SIGTERM, a graceful stop); its record, or None if none ran."""
    record = running(root)
    if record is None:
        return None
    os.kill(record.pid, signal.SIGTERM)
    deadline = time.monotonic() + wait_s
    while _alive(record.pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    if _alive(record.pid):
        os.kill(record.pid, signal.SIGKILL)
    remove_record(root, record.pid)
    return record
