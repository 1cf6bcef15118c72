"""The Claude dreamer: the anthropic SDK's Messages API writes the ISA programs.

The SDK is imported only when this dreamer is built, never on the log's append path.
The model comes from the ``model`` argument, else ``EVOLOG_CLAUDE_MODEL``; the key from
``api_key``, else ``ANTHROPIC_API_KEY``. Requests ask for temperature 0 (sent in the body:
anthropic 2.x no longer has the keyword); a model that rejects the parameter gets the
request again without it. The SDK's own retries are off: rate limits (429), overload (529),
other 5xx, 408/409 and connection failures are retried here with exponential backoff that
honours ``retry-after``; what still fails is raised as a :class:`dream.DreamerError`. A
reply the parser rejects gets one repair turn with the diagnostics, then raises
:class:`dream.DreamerOutputError`. A cycle stops on any of these errors, appending nothing,
unless it was asked to fall back to the heuristic dreamer (``DreamConfig(fallback=True)``,
``evolog dream --fallback heuristic``).
"""

from __future__ import annotations

import os
import random
import re
import time
from collections.abc import Callable, Sequence
from typing import Any, Final

from evolog.projections import StepRecord, StrategyNode

from ._dreamer import DreamProgram, LinkCandidate
from ._errors import (
    DreamerAPIError,
    DreamerConfigError,
    DreamerConnectionError,
    DreamerOutputError,
    DreamerRateLimitError,
)
from ._heuristic import SUMMARY_LIMIT
from ._prompts import SYSTEM_PROMPT, compact_prompt, link_prompt, repair_prompt, trace_prompt
from ._traces import Trace
from .isa._parser import parse_program

__all__ = ["DEFAULT_MODEL", "ClaudeDreamer", "strip_fences"]

DEFAULT_MODEL: Final = "claude-sonnet-4-6"
_RETRY_STATUSES: Final = frozenset({408, 409, 429})
_FENCE: Final = re.compile(r"^\s*(```|~~~)")


def strip_fences(text: str) -> str:
    """Drop Markdown fence lines a model may wrap its program in."""
    return "\n".join(line for line in text.splitlines() if not _FENCE.match(line))


class ClaudeDreamer:
    """A dreamer backed by Claude; see the module docstring."""

    name: Final = "claude"
    records_text: Final = True
    batch_size: Final = 20

    def __init__(
        self,
        *,
        model: str | None = None,
        api_key: str | None = None,
        http_client: Any = None,
        client: Any = None,
        max_tokens: int = 2048,
        temperature: float | None = 0.0,
        max_retries: int = 4,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        timeout: float = 120.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.model: str = model or os.environ.get("EVOLOG_CLAUDE_MODEL") or DEFAULT_MODEL
        if max_tokens < 1 or max_retries < 0 or backoff < 0:
            raise DreamerConfigError(
                "max_tokens must be >= 1, max_retries and backoff >= 0; got "
                f"{max_tokens}, {max_retries}, {backoff}"
            )
        self._max_tokens = max_tokens
        self._temperature = temperature
        self._retries = max_retries
        self._backoff = backoff
        self._max_backoff = max_backoff
        self._sleep = sleep
        self._anthropic = _import_anthropic()
        self._client = client or self._make_client(api_key, http_client, timeout)

    def _make_client(self, api_key: str | None, http_client: Any, timeout: float) -> Any:
        key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise DreamerConfigError(
                "the claude dreamer needs an API key: set ANTHROPIC_API_KEY or pass api_key"
            )
        return self._anthropic.Anthropic(
            api_key=key, http_client=http_client, max_retries=0, timeout=timeout
        )

    # -- the Dreamer interface ------------------------------------------------------------
    def dream_trace(self, trace: Trace) -> DreamProgram:
        """Ask for the SWS + REM program of one trace."""
        return self._program(trace_prompt(trace), trace.id)

    def link(self, candidates: Sequence[LinkCandidate]) -> DreamProgram:
        """Ask which candidate pairs deserve an edge (one call for all of them)."""
        if not candidates:
            return DreamProgram("")
        return self._program(link_prompt(candidates), None)

    def compact(self, node: StrategyNode, steps: Sequence[StepRecord]) -> DreamProgram:
        """Ask for a shorter summary of ``node``."""
        return self._program(compact_prompt(node, steps, SUMMARY_LIMIT), None)

    # -- calls --------------------------------------------------------------------------
    def _program(self, prompt: str, trace: str | None) -> DreamProgram:
        messages: list[dict[str, str]] = [{"role": "user", "content": prompt}]
        text, used_in, used_out = self.complete(messages)
        program = parse_program(strip_fences(text))
        if program.diagnostics:
            messages += [
                {"role": "assistant", "content": text},
                {"role": "user", "content": repair_prompt(program.diagnostics)},
            ]
            text, more_in, more_out = self.complete(messages)
            used_in, used_out = used_in + more_in, used_out + more_out
            program = parse_program(strip_fences(text))
            if program.diagnostics:
                first = program.diagnostics[0].message
                raise DreamerOutputError(
                    f"{self.model}: reply is not a valid program: {first}", text
                )
        return DreamProgram(strip_fences(text), trace, self.model, used_in, used_out)

    def complete(self, messages: list[dict[str, str]]) -> tuple[str, int, int]:
        """One Messages API call with retries; returns (text, input tokens, output tokens)."""
        send_temperature = self._temperature is not None
        attempt = 0
        while True:
            try:
                response = self._create(messages, send_temperature)
            except self._anthropic.BadRequestError as exc:
                if send_temperature and "temperature" in str(exc).lower():
                    send_temperature = False  # this model refuses sampling parameters
                    continue
                raise self._status_error(exc) from None
            except (self._anthropic.APIStatusError, self._anthropic.APIConnectionError) as exc:
                if not self._retryable(exc) or attempt >= self._retries:
                    raise self._final_error(exc, attempt) from None
                self._sleep(self._delay(exc, attempt))
                attempt += 1
                continue
            return self._read(response)

    def _create(self, messages: list[dict[str, str]], send_temperature: bool) -> Any:
        extra = {"temperature": self._temperature} if send_temperature else None
        return self._client.messages.create(
            model=self.model,
            max_tokens=self._max_tokens,
            system=SYSTEM_PROMPT,
            messages=messages,
            extra_body=extra,
        )

    def _read(self, response: Any) -> tuple[str, int, int]:
        text = "".join(
            getattr(block, "text", "") for block in response.content if block.type == "text"
        )
        usage = response.usage
        if response.stop_reason == "max_tokens":
            raise DreamerOutputError(
                f"{self.model}: reply cut at max_tokens={self._max_tokens}", text
            )
        if not text.strip():
            raise DreamerOutputError(f"{self.model}: empty reply", text)
        return text, int(usage.input_tokens or 0), int(usage.output_tokens or 0)

    def _retryable(self, exc: Exception) -> bool:
        if isinstance(exc, self._anthropic.APIConnectionError):
            return True
        status = int(getattr(exc, "status_code", 0) or 0)
        return status in _RETRY_STATUSES or status >= 500

    def _delay(self, exc: Exception, attempt: int) -> float:
        response = getattr(exc, "response", None)
        header = response.headers.get("retry-after") if response is not None else None
        try:
            hinted = float(header) if header is not None else None
        except ValueError:
            hinted = None
        if hinted is not None and hinted >= 0:
            return min(hinted, self._max_backoff)
        # Full jitter keeps many dreamers from retrying in lockstep.
        return random.uniform(0, min(self._max_backoff, self._backoff * 2**attempt))

    def _final_error(self, exc: Exception, attempt: int) -> Exception:
        tries = f"after {attempt + 1} attempt(s)"
        if isinstance(exc, self._anthropic.APIConnectionError):
            return DreamerConnectionError(f"{self.model}: cannot reach the API {tries}: {exc}")
        status = int(getattr(exc, "status_code", 0) or 0)
        if status in (429, 529):
            return DreamerRateLimitError(
                f"{self.model}: rate limited or overloaded (HTTP {status}) {tries}: "
                f"{_message(exc)}",
                status,
            )
        return self._status_error(exc, tries)

    def _status_error(self, exc: Exception, tries: str = "") -> DreamerAPIError:
        status = int(getattr(exc, "status_code", 0) or 0)
        where = f" {tries}" if tries else ""
        return DreamerAPIError(
            f"{self.model}: API error HTTP {status}{where}: {_message(exc)}", status
        )


def _message(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return f"{error.get('type', 'error')}: {error['message']}"
    return str(getattr(exc, "message", exc))


def _import_anthropic() -> Any:
    try:
        import anthropic
    except ImportError as exc:
        raise DreamerConfigError(
            f"the claude dreamer needs the anthropic SDK (pip install 'evolog[anthropic]'): {exc}"
        ) from None
    return anthropic
