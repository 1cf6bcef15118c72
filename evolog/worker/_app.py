"""The worker's application: ``evolog serve``'s app plus ``POST /hook/claude-code``.

A payload is recorded by the command hook's own function
(:func:`evolog.hook._hooks.answer_claude_code`) on one thread, in arrival order, so the
worker is safe with several sessions and agents at once: their payloads queue, and the log
serialises appends with every other process anyway. Only ``SessionStart`` (posted by the
``SessionStart`` command hook's ``curl``) and ``UserPromptSubmit`` wait for their answer (the
context to inject), within :data:`ANSWER_WAIT_S`: every other event is
answered at once and recorded behind the answer, so recording a tool call never delays
the agent (an http hook cannot be ``async`` in Claude Code; answering first is the same).
A payload that could not be recorded goes to the dead letter, as with the command hook.

After ``Stop`` or ``SessionEnd`` a dream is due once ``dream_after`` seconds pass without
another (a debounce); it runs the offline heuristic dreamer through the server's writer on
a thread of its own, never while another dream runs, and never in a hook's way. With an
``evolve`` expression (``"ace >> reasoning_bank >> reme"``), that memory-evolution pipeline
runs over the items after each dream, offline (the seed's dedup rules, no model).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import msgspec
from starlette.responses import Response

from evolog.projections.graph import prefer_strong
from evolog.server import AppState, Problem, ServerConfig, Tokens, create_app, endpoint, read_body

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request

__all__ = ["ANSWER_MARGIN_S", "ANSWER_WAIT_S", "HOOK_PATH", "Worker", "worker_app"]

HOOK_PATH = "/hook/claude-code"
ANSWER_WAIT_S = {"SessionStart": 4.0, "UserPromptSubmit": 9.0}
"""Longest an event waits for its context before it is answered with none: within the
``SessionStart`` curl's 5 s (else the payload is sent twice) and the http hook's 10 s.
Recall on the hook thread gives up by then (:func:`evolog.hook._recall.answer_by`, with
:data:`ANSWER_MARGIN_S` to spare), counted from the payload's arrival: a slow recall, or one
queued behind other payloads, answers with no context and is recorded as none, so no
attempt names items the agent was never shown."""
ANSWER_MARGIN_S = 0.5
"""What the answer keeps in hand for the append and the reply after recall gives up."""
_DREAMS = frozenset({"Stop", "StopFailure", "SessionEnd"})


class Worker:
    """What the hook route and the dream cadence share."""

    def __init__(self, store: str, dream_after: float, evolve: str | None = None) -> None:
        from ._files import installed_version

        self.store = store
        self.version = installed_version()
        self.dream_after = dream_after
        self.evolve = evolve
        self.hooks = ThreadPoolExecutor(max_workers=1, thread_name_prefix="evolog-hook")
        # A long-lived process can afford the strong encoder (~1.5 s to load, ~200 MB): it
        # loads beside the hooks, which route with the lean one until it is ready. Recall
        # events name the encoder that decided, so either answer replays exactly.
        threading.Thread(target=prefer_strong, name="evolog-encoder", daemon=True).start()
        self.dreams = ThreadPoolExecutor(max_workers=1, thread_name_prefix="evolog-dream")
        self._due: asyncio.TimerHandle | None = None
        self._dreaming = False
        self._again = False
        self.dreamt = 0

    def record(self, payload: dict[str, Any], raw: bytes, due: float | None = None) -> bytes:
        """Record on the hook thread; the answer, or b"" (a failure is dead-lettered). Recall
        gives up at ``due`` (``time.monotonic()``), when the answer is owed."""
        from evolog.hook import answer_by, answer_claude_code, content_policy, dead_letter

        try:
            policy, _ = content_policy()
            with answer_by(due) if due is not None else contextlib.nullcontext():
                answer = answer_claude_code(payload, self.store, policy)
        except Exception as exc:
            with contextlib.suppress(Exception):
                dead_letter(self.store, raw, exc)
            answer = b""
        if payload.get("hook_event_name") == "SessionStart":
            self._retire_if_upgraded()
        return answer

    def _retire_if_upgraded(self) -> None:
        """Stop (gracefully, this answer still sent) once evolog was upgraded under us: the
        session's hooks then fall back to the command hook, which starts the new version."""
        from ._files import installed_version

        with contextlib.suppress(Exception):
            now = installed_version()
            if now != self.version:
                _say(f"evolog worker: evolog {now} installed (this is {self.version}): stopping")
                os.kill(os.getpid(), signal.SIGTERM)

    # -- dreams ---------------------------------------------------------------------------
    def poke(self, state: AppState) -> None:
        """A session stopped: (re)start the debounce (on the event loop)."""
        if self.dream_after < 0:
            return
        if self._due is not None:
            self._due.cancel()
        loop = asyncio.get_running_loop()
        self._due = loop.call_later(self.dream_after, self._fire, state)

    def _fire(self, state: AppState) -> None:
        self._due = None
        if self._dreaming:  # one more when this one ends: it may have missed the newest
            self._again = True
            return
        self._dreaming = True
        loop = asyncio.get_running_loop()
        # Behind the hooks queued so far: the dream reads the outcome of the Stop it follows.
        barrier = self.hooks.submit(lambda: None)
        barrier.add_done_callback(lambda _: loop.call_soon_threadsafe(self._run_dream, loop, state))

    def _run_dream(self, loop: asyncio.AbstractEventLoop, state: AppState) -> None:
        job = self.dreams.submit(self._dream, state)
        job.add_done_callback(lambda _: loop.call_soon_threadsafe(self._dream_done, state))

    def _dream(self, state: AppState) -> None:
        from evolog.server import DreamRequest
        from evolog.server.routes import run_dream

        started = time.monotonic()
        try:
            report = run_dream(state, DreamRequest())
        except Exception as exc:
            _say(f"evolog worker: dream failed: {type(exc).__name__}: {exc}")
            return
        self.dreamt += 1
        took = time.monotonic() - started
        _say(f"evolog worker: dreamt in {took:.2f} s: {msgspec.json.encode(report).decode()}")
        if self.evolve:
            self._evolve(state, self.evolve)

    def _evolve(self, state: AppState, expression: str) -> None:
        from evolog.dream.evolve import apply, pipeline

        started = time.monotonic()
        try:
            report = apply(state.store.log, pipeline(expression))
        except Exception as exc:
            _say(f"evolog worker: evolve failed: {type(exc).__name__}: {exc}")
            return
        took = time.monotonic() - started
        _say(f"evolog worker: evolved in {took:.2f} s: {msgspec.json.encode(report).decode()}")

    def _dream_done(self, state: AppState) -> None:
        self._dreaming = False
        if self._again:
            self._again = False
            self._fire(state)


def _say(line: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        print(line.replace("\n", " ")[:2000], file=sys.stderr, flush=True)


def _hook_route(worker: Worker) -> Any:
    @endpoint("write", "hook")
    async def hook(request: Request, state: AppState) -> Response:
        """Record one Claude Code hook payload; answer what the command hook would print."""
        from evolog.hook import MAX_PAYLOAD_BYTES  # the command hook's bound

        raw = await read_body(request, MAX_PAYLOAD_BYTES)
        try:
            payload = msgspec.json.decode(raw)
        except msgspec.DecodeError as exc:
            raise Problem(400, f"expected a JSON hook payload; got invalid JSON ({exc})") from None
        if not isinstance(payload, dict):
            got = type(payload).__name__
            raise Problem(400, f"expected a JSON object as the hook payload; got {got}")
        name = payload.get("hook_event_name")
        wait = ANSWER_WAIT_S.get(str(name))
        due = None if wait is None else time.monotonic() + wait - ANSWER_MARGIN_S
        loop = asyncio.get_running_loop()
        job = loop.run_in_executor(worker.hooks, worker.record, payload, raw, due)
        if name in _DREAMS:
            worker.poke(state)
        answer = b""
        if wait is not None:
            try:
                answer = await asyncio.wait_for(asyncio.shield(job), wait)
            except TimeoutError:
                _say(f"evolog worker: {name} answered without context after {wait:g} s")
        return Response(answer.strip() or b"{}", 200, media_type="application/json")

    return hook


def worker_app(
    store: str, port: int, token: str, dream_after: float, evolve: str | None = None
) -> Starlette:
    """The worker's app on loopback (its token is the only one it accepts)."""
    from starlette.routing import Route

    config = ServerConfig(
        store=store, host="127.0.0.1", port=port, tokens=Tokens(write=frozenset({token}))
    )
    app = create_app(config)
    worker = Worker(store, dream_after, evolve)
    route = _hook_route(worker)
    app.router.routes.append(Route(HOOK_PATH, route, methods=["POST"]))
    app.exact[("POST", HOOK_PATH)] = route  # type: ignore[attr-defined]
    inner = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(a: Starlette) -> AsyncIterator[None]:
        async with inner(a):
            try:
                yield
            finally:
                if worker._due is not None:
                    worker._due.cancel()
                # What was answered is recorded before the store closes.
                loop = asyncio.get_running_loop()
                await loop.run_in_executor(None, lambda: worker.hooks.shutdown(wait=True))
                await loop.run_in_executor(
                    None, lambda: worker.dreams.shutdown(wait=True, cancel_futures=True)
                )

    app.router.lifespan_context = lifespan
    app.state.worker = worker
    return app
