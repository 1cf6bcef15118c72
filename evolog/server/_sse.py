"""Server-Sent Events of a job that runs on a worker thread and reports progress."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import msgspec
from anyio import to_thread

from ._http import problem_of

Report = Callable[[str, dict[str, Any]], None]


def sse(event: str, data: Any) -> bytes:
    return b"event: %s\ndata: %s\n\n" % (event.encode(), msgspec.json.encode(data))


async def job_events(
    job: Callable[[Report], dict[str, Any]], started: dict[str, Any] | None = None
) -> AsyncIterator[bytes]:
    """``started``, every event ``job`` reports (``report(name, data)`` from its thread), then
    ``completed`` with its result or ``error`` with the JSON error body. A client that leaves
    does not stop the job (a dream appends whole cycles or nothing)."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()

    def report(name: str, data: dict[str, Any]) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, (name, data))

    task = asyncio.ensure_future(to_thread.run_sync(job, report))
    yield sse("started", started or {})
    while True:
        get = asyncio.ensure_future(queue.get())
        await asyncio.wait({get, task}, return_when=asyncio.FIRST_COMPLETED)
        if get.done():
            yield sse(*get.result())
            continue
        get.cancel()
        while not queue.empty():
            yield sse(*queue.get_nowait())
        exc = task.exception()
        if exc is not None:
            yield sse("error", problem_of(exc).body())
        else:
            yield sse("completed", task.result())
        return
