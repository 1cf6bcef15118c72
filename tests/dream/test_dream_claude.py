"""The Claude dreamer: the real anthropic client over a mock HTTP transport.

The transport serves what the Messages API serves (message objects with usage, error
envelopes with their types and headers), so the SDK's own parsing and error mapping run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest
from evolog.dream import (
    ClaudeDreamer,
    DreamConfig,
    DreamerAPIError,
    DreamerConfigError,
    DreamerConnectionError,
    DreamerOutputError,
    DreamerRateLimitError,
    Trace,
    TraceStep,
    dream,
)
from evolog.eventlog import DreamEnd, EventLog
from evolog.projections.graph._embed import HashingEmbedder
from evolog.projections.graph._memgraph import load_memgraph

from tests.dream.test_dream_cycle import trace_events

MODEL = "claude-sonnet-4-6"
TRACE = Trace(
    id="t1",
    task="fix the yaml import",
    status="failed",
    steps=(
        TraceStep(0, action="pip install yaml", ok=False, error="No matching distribution"),
        TraceStep(1, action="pip install pyyaml"),
    ),
)
PROGRAM = """\
EXTRACT_CONSTRAINT t1 "do not pip install 'yaml': the package is named pyyaml" environment
MARK_NOISE t1 0
MARK_CRITICAL t1 1
BUILD_PARENT "fix a missing yaml module" "install pyyaml, not yaml" 0.7
BUILD_CHILD $LAST_PARENT 0 "the distribution is pyyaml" "pip install pyyaml" "installed"
HALT
"""


def message(text: str, *, model: str = MODEL, stop: str = "end_turn") -> httpx2.Response:
    body = {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": 812,
            "output_tokens": 96,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }
    return httpx2.Response(200, json=body, headers={"request-id": "req_011CSHoEeqs5C35K2UUqR7Fy"})


def error(status: int, kind: str, text: str, **headers: str) -> httpx2.Response:
    body = {"type": "error", "error": {"type": kind, "message": text}}
    return httpx2.Response(status, json=body, headers={"request-id": "req_x", **headers})


class Server:
    """Answers requests from a script; records what it was sent."""

    def __init__(self, *replies: httpx2.Response | Callable[[dict[str, Any]], httpx2.Response]):
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[httpx2.Headers] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.requests.append(body)
        self.headers.append(request.headers)
        assert request.url.path == "/v1/messages"
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        return reply(body) if callable(reply) else reply

    def dreamer(self, **kw: Any) -> tuple[ClaudeDreamer, list[float]]:
        slept: list[float] = []
        client = httpx2.Client(transport=httpx2.MockTransport(self))
        dreamer = ClaudeDreamer(api_key="sk-ant-test", http_client=client, sleep=slept.append, **kw)
        return dreamer, slept


def test_a_program_with_usage() -> None:
    server = Server(message("```\n" + PROGRAM + "```\n"))
    dreamer, _ = server.dreamer()
    program = dreamer.dream_trace(TRACE)
    assert program.text.strip() == PROGRAM.strip()
    assert (program.model, program.input_tokens, program.output_tokens) == (MODEL, 812, 96)
    (sent,) = server.requests
    assert sent["model"] == MODEL and sent["temperature"] == 0.0
    assert "EXTRACT_CONSTRAINT" in sent["system"]
    assert "[0] " in sent["messages"][0]["content"] and "t1" in sent["messages"][0]["content"]
    assert "sk-ant-test" in server.headers[0].get("x-api-key", server.headers[0]["authorization"])


def test_model_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVOLOG_CLAUDE_MODEL", "claude-haiku-4-5")
    server = Server(lambda body: message(PROGRAM, model=body["model"]))
    dreamer, _ = server.dreamer()
    assert dreamer.dream_trace(TRACE).model == "claude-haiku-4-5"
    assert server.requests[0]["model"] == "claude-haiku-4-5"


def test_rate_limits_and_overload_are_retried_with_backoff() -> None:
    server = Server(
        error(
            429,
            "rate_limit_error",
            "Number of requests has exceeded your rate limit",
            **{"retry-after": "3"},
        ),
        error(529, "overloaded_error", "Overloaded"),
        error(500, "api_error", "Internal server error"),
        message(PROGRAM),
    )
    dreamer, slept = server.dreamer(backoff=0.5)
    assert dreamer.dream_trace(TRACE).input_tokens == 812
    assert len(server.requests) == 4
    assert slept[0] == 3.0  # retry-after honoured
    assert 0 <= slept[1] <= 1.0 and 0 <= slept[2] <= 2.0  # full-jitter exponential backoff


def test_retries_run_out() -> None:
    server = Server(error(529, "overloaded_error", "Overloaded"))
    dreamer, slept = server.dreamer(max_retries=2)
    with pytest.raises(DreamerRateLimitError, match=r"HTTP 529.*3 attempt") as info:
        dreamer.dream_trace(TRACE)
    assert info.value.status == 529 and len(slept) == 2


def test_client_errors_are_not_retried() -> None:
    server = Server(error(401, "authentication_error", "invalid x-api-key"))
    dreamer, slept = server.dreamer()
    with pytest.raises(DreamerAPIError, match=r"HTTP 401.*authentication_error: invalid x-api-key"):
        dreamer.dream_trace(TRACE)
    assert len(server.requests) == 1 and slept == []


def test_connection_failures() -> None:
    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("connection refused", request=request)

    client = httpx2.Client(transport=httpx2.MockTransport(refuse))
    slept: list[float] = []
    dreamer = ClaudeDreamer(api_key="k", http_client=client, sleep=slept.append, max_retries=1)
    with pytest.raises(DreamerConnectionError, match="cannot reach the API after 2 attempt"):
        dreamer.dream_trace(TRACE)
    assert len(slept) == 1


def test_a_model_that_refuses_temperature_gets_the_request_again() -> None:
    server = Server(
        error(400, "invalid_request_error", "`temperature` is deprecated for this model."),
        message(PROGRAM),
    )
    dreamer, _ = server.dreamer()
    dreamer.dream_trace(TRACE)
    assert "temperature" in server.requests[0] and "temperature" not in server.requests[1]


def test_a_bad_program_gets_one_repair_turn() -> None:
    server = Server(message("Here is the program:\n" + PROGRAM), message(PROGRAM))
    dreamer, _ = server.dreamer()
    program = dreamer.dream_trace(TRACE)
    assert program.input_tokens == 2 * 812
    repair = server.requests[1]["messages"]
    assert [m["role"] for m in repair] == ["user", "assistant", "user"]
    assert "unknown opcode 'Here'" in repair[2]["content"]


def test_unusable_replies() -> None:
    server = Server(message("I cannot help with that."))
    dreamer, _ = server.dreamer()
    with pytest.raises(DreamerOutputError, match="not a valid program"):
        dreamer.dream_trace(TRACE)
    cut = Server(message("BUILD_PARENT g", stop="max_tokens"))
    with pytest.raises(DreamerOutputError, match="max_tokens"):
        cut.dreamer()[0].dream_trace(TRACE)


def test_missing_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(DreamerConfigError, match="ANTHROPIC_API_KEY"):
        ClaudeDreamer()


def _answer(body: dict[str, Any]) -> httpx2.Response:
    prompt = body["messages"][-1]["content"]
    if prompt.startswith("Trace id: "):
        tid = prompt.split("\n", 1)[0].removeprefix("Trace id: ")
        if tid == "bad":
            return message(f"MARK_CRITICAL {tid} 99\nHALT")  # parses, but the VM rejects it
        return message(PROGRAM.replace("t1", tid))
    return message("HALT")  # links


def test_a_claude_cycle_records_model_usage_and_text(store: Path) -> None:
    log = EventLog(store, create=True, durability="none")
    log.append_many(
        trace_events(
            "good",
            "fix the yaml import",
            ["pip install yaml", "pip install pyyaml"],
            status="failed",
            failing=[0],
        )
    )
    log.append_many(trace_events("bad", "renew the certificate", ["renew", "install"]))
    dreamer, _ = Server(_answer).dreamer()
    config = DreamConfig(fallback=True)  # "bad" gets a program the VM rejects
    report = dream(log, dreamer=dreamer, embedder=HashingEmbedder(), config=config)
    (cycle,) = report.cycles
    assert cycle.fallbacks == 1
    assert any("fallback to heuristic for trace bad" in line for line in cycle.phase_log)
    (end,) = log.replay(kinds=["dream_end"])
    assert isinstance(end, DreamEnd) and end.status == "fallback"
    assert (end.model, end.input_tokens, end.output_tokens) == (MODEL, 2 * 812, 2 * 96)
    assert end.isa_text is not None and "# trace good" in end.isa_text
    assert "install pyyaml, not yaml" in end.isa_text
    graph = load_memgraph(log)
    goals = sorted(n.goal for n in graph.nodes())
    assert goals == ["fix a missing yaml module", "renew the certificate"]
    node = next(n for n in graph.nodes() if n.goal.startswith("fix"))
    assert graph.constraints(node.id)[0].failure_class == "environment"


@pytest.mark.integration
def test_real_api_dreams_a_trace() -> None:
    """Calls the real Messages API (needs ANTHROPIC_API_KEY); run with ``-m integration``."""
    if not os.environ.get("ANTHROPIC_API_KEY"):
        pytest.fail("set ANTHROPIC_API_KEY to run the integration test")
    program = ClaudeDreamer(max_tokens=1024).dream_trace(TRACE)
    assert "BUILD_PARENT" in program.text and program.output_tokens > 0
