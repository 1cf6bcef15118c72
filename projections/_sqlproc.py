"""User SQL in query processes whose memory the operating system caps.

DuckDB's ``memory_limit`` covers its buffer manager, not the strings a SELECT list
builds (``SELECT repeat('x', 1000000) FROM range(2048)`` grew past 2 GB under a 64 MiB
limit), so a server that ran user SQL in its own process could be killed by one query.
:class:`SqlPool` keeps a few query processes started ahead of time (a new interpreter
each, never a fork of the threaded server), each with ``RLIMIT_DATA`` set once it has
loaded DuckDB: a query past the cap fails or ends its own process, never the server's.

A process answers one query at a time: a request is one JSON line on its stdin, the
answer a tagged, length-prefixed frame on its stdout (Arrow IPC, or the error's class and
message). The query runs there through :meth:`Projections.sql` with the same limits, so
its result is streamed and stops at ``max_rows`` or ``max_bytes`` inside the process.
A timeout past a grace period, a cancel (the client went away) or a process that died
kills it; the pool starts a replacement at once, so the next query finds one warm.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from typing import Any

import msgspec

from ._errors import EngineError, ProjectionError, QueryLimitError
from ._sqlguard import Cancel, QueryLimits

_HEAD = struct.Struct("!cQ")
_ARROW = b"A"
_ERROR = b"E"
#: Past its own time limit a query process has this long to answer before it is killed
#: (DuckDB's interrupt is checked between vectors, and the answer must still be written).
_GRACE_S = 2.0
#: Address space a process may add once warm, beyond twice the query's DuckDB memory and
#: twice its result bytes (the result, then its IPC copy): Python's and DuckDB's own
#: working sets, a connection's threads.
_SLACK_MB = 256
#: A process is replaced after this many queries, so what its allocators keep from
#: earlier queries never adds up.
_QUERIES_PER_PROCESS = 200
_CHILD = "from evolog.projections._sqlproc import _serve; _serve()"


class _Request(msgspec.Struct, frozen=True):
    root: str
    query: str
    as_of: int | None
    as_of_ts: int | None
    now: int | None
    timeout: float | None
    memory_mb: int | None
    threads: int | None
    max_rows: int | None
    max_bytes: int | None


class _Failure(msgspec.Struct, frozen=True):
    module: str
    name: str
    message: str
    kind: str | None = None


def cap_bytes(memory_mb: int | None, max_bytes: int | None) -> int:
    """What a warm query process may add to its data segment for one query."""
    mb = 2 * (memory_mb or 1024) + _SLACK_MB
    return (mb << 20) + 2 * (max_bytes or (256 << 20))


class _Worker:
    def __init__(self, cap: int) -> None:
        self.queries = 0
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(cap)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            close_fds=True,
            # Not in the server's process group: a Ctrl-C reaches the server, which stops
            # its query processes itself; they also end when their stdin closes.
            start_new_session=True,
        )

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        for pipe in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                if pipe is not None:
                    pipe.close()
        self.proc.wait()


class SqlPool:
    """``size`` warm query processes, each capped for queries of ``memory_mb`` and
    ``max_bytes``; :meth:`run` runs one query in one of them."""

    def __init__(self, size: int, memory_mb: int | None, max_bytes: int | None) -> None:
        self._cap = cap_bytes(memory_mb, max_bytes)
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._closed = False
        for _ in range(size):
            self._idle.append(_Worker(self._cap))

    def pids(self) -> list[int]:
        """The idle processes' ids (for tests and diagnostics)."""
        with self._lock:
            return [w.proc.pid for w in self._idle]

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.kill()

    def _take(self) -> _Worker:
        with self._lock:
            if self._closed:
                raise EngineError("the SQL query processes are stopped (the server is closing)")
            while self._idle:
                worker = self._idle.pop()
                if worker.alive:
                    return worker
                worker.kill()
        return _Worker(self._cap)

    def _give_back(self, worker: _Worker, healthy: bool) -> None:
        worker.queries += 1
        if healthy and worker.queries < _QUERIES_PER_PROCESS and worker.alive:
            with self._lock:
                if not self._closed:
                    self._idle.append(worker)
                    return
        worker.kill()
        with self._lock:
            if not self._closed:
                self._idle.append(_Worker(self._cap))  # the next query finds one warm

    def run(
        self,
        root: str,
        query: str,
        *,
        as_of: int | None = None,
        as_of_ts: int | None = None,
        now: int | None = None,
        limits: QueryLimits,
        cancel: Cancel | None = None,
    ) -> Any:
        """The query's rows as an Arrow table, or the error its process raised."""
        import pyarrow as pa

        cancel = cancel or Cancel()
        req = _Request(
            root, query, as_of, as_of_ts, now, limits.timeout, limits.memory_mb,
            limits.threads, limits.max_rows, limits.max_bytes,
        )  # fmt: skip
        deadline = None if limits.timeout is None else time.monotonic() + limits.timeout + _GRACE_S
        worker = self._take()
        healthy = False
        try:
            assert worker.proc.stdin is not None and worker.proc.stdout is not None
            try:
                worker.proc.stdin.write(msgspec.json.encode(req) + b"\n")
                worker.proc.stdin.flush()
            except OSError:
                raise self._died(worker, limits) from None
            tag, payload = self._answer(worker, limits, cancel, deadline)
            failure = None if tag == _ARROW else msgspec.json.decode(payload, type=_Failure)
            # A process that ran out of memory may keep what it could not free: replaced.
            healthy = failure is None or failure.kind != "memory"
        finally:
            self._give_back(worker, healthy)
        if failure is None:
            return pa.ipc.open_stream(payload).read_all()
        raise _rebuilt(failure)

    def _answer(
        self, worker: _Worker, limits: QueryLimits, cancel: Cancel, deadline: float | None
    ) -> tuple[bytes, bytes]:
        out = worker.proc.stdout
        assert out is not None
        fd = out.fileno()
        # The result is bounded inside the process; this bounds what the server accepts
        # from it, whatever it sends.
        most = 2 * (limits.max_bytes or (256 << 20)) + (1 << 20)
        buf = bytearray()
        need = _HEAD.size
        tag = b""
        while len(buf) < need:
            if cancel.reason is not None:
                worker.kill()
                raise QueryLimitError(cancel.reason, _cancel_kind(cancel.reason))
            if deadline is not None and time.monotonic() > deadline:
                worker.kill()
                raise QueryLimitError(
                    f"the query ran longer than its time limit of {limits.timeout:g} s "
                    "and was stopped",
                    "time",
                )
            ready, _, _ = select.select([fd], [], [], 0.05)
            if not ready:
                continue
            chunk = os.read(fd, min(need - len(buf), 1 << 20))
            if not chunk:
                raise self._died(worker, limits)
            buf += chunk
            if not tag and len(buf) >= _HEAD.size:
                tag, size = _HEAD.unpack_from(buf)
                if tag not in (_ARROW, _ERROR) or size > most:
                    worker.kill()
                    raise EngineError(f"a SQL query process answered a frame of {size} bytes")
                need = _HEAD.size + size
        return tag, bytes(buf[_HEAD.size :])

    def _died(self, worker: _Worker, limits: QueryLimits) -> QueryLimitError:
        worker.kill()
        code = worker.proc.returncode
        how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
        return QueryLimitError(
            f"the query's process ended ({how}): it needed more memory than the server gives "
            f"a query (DuckDB {limits.memory_mb} MiB, process cap {self._cap >> 20} MiB)",
            "memory",
        )


def _cancel_kind(reason: str) -> str:
    return "time" if "time limit" in reason else "cancel"


def _rebuilt(failure: _Failure) -> Exception:
    """The error the query process raised, as its own class when it is one of ours."""
    import importlib

    if failure.module.startswith(("evolog.projections", "evolog.eventlog")):
        with contextlib.suppress(Exception):
            cls = getattr(importlib.import_module(failure.module), failure.name)
            if isinstance(cls, type) and issubclass(cls, QueryLimitError):
                return cls(failure.message, failure.kind or "memory")
            if isinstance(cls, type) and issubclass(cls, Exception):
                exc: Exception = cls(failure.message)
                return exc
    return EngineError(failure.message)


# -- the query process -------------------------------------------------------------------
def _serve() -> None:
    """A query process's loop: one request per stdin line, one frame per answer."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Below the server's priority: hostile queries get what CPU its event loop leaves.
    with contextlib.suppress(OSError):
        os.nice(10)
    out = os.fdopen(os.dup(1), "wb")
    # Nothing but frames may reach the protocol's pipe: a stray print goes to stderr.
    os.dup2(2, 1)
    cap = int(sys.argv[1])
    _warm()
    _cap_memory(cap)
    for line in sys.stdin.buffer:
        req = msgspec.json.decode(line, type=_Request)
        tag, payload = _one(req)
        try:
            out.write(_HEAD.pack(tag, len(payload)))
            out.write(payload)
            out.flush()
        except OSError:  # the server is gone
            return


def _warm() -> None:
    import duckdb
    import evolog.projections._api
    import evolog.projections._catalog  # noqa: F401
    import pyarrow.dataset  # noqa: F401

    duckdb.connect().close()


def _cap_memory(cap: int) -> None:
    import resource

    used = 0
    with contextlib.suppress(OSError), open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmData:"):
                used = int(line.split()[1]) << 10
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_DATA, (used + cap, used + cap))


def _one(req: _Request) -> tuple[bytes, bytes]:
    import pyarrow as pa

    from ._api import Projections

    limits = QueryLimits(req.timeout, req.memory_mb, req.threads, req.max_rows, req.max_bytes)
    err: Exception
    try:
        table = Projections(req.root).sql(
            req.query, as_of=req.as_of, as_of_ts=req.as_of_ts, now=req.now, limits=limits
        )
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        return _ARROW, sink.getvalue().to_pybytes()
    except MemoryError as exc:  # pyarrow's and Python's own allocations past the cap
        err = QueryLimitError(_memory(limits, exc), "memory")
    except ProjectionError as exc:
        err = exc
        if not isinstance(exc, QueryLimitError) and _looks_oom(str(exc)):
            err = QueryLimitError(_memory(limits, exc), "memory")
    except Exception as exc:
        err = EngineError(f"the query failed: {type(exc).__name__}: {exc}")
        if _looks_oom(str(exc)):
            err = QueryLimitError(_memory(limits, exc), "memory")
    failure = _Failure(
        type(err).__module__, type(err).__qualname__, str(err), getattr(err, "kind", None)
    )
    return _ERROR, msgspec.json.encode(failure)


def _looks_oom(message: str) -> bool:
    low = message.lower()
    return "bad_alloc" in low or "out of memory" in low or "cannot allocate" in low


def _memory(limits: QueryLimits, exc: BaseException) -> str:
    # DuckDB's advice after the message (fewer threads, a temp directory) is not the
    # user's to follow on the server.
    detail = " ".join(str(exc).split()).split(" Possible solutions:")[0][:200]
    detail = detail or type(exc).__name__
    return (
        f"the query needs more memory than the server gives a query (DuckDB "
        f"{limits.memory_mb} MiB and a cap on its process): {detail}"
    )
