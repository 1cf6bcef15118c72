"""What the Claude Code hook keeps of a payload: the content policy, redaction, failures.

The log can never forget, so the hook keeps what learning needs and no more. The policy
comes from ``EVOLOG_HOOK_CONTENT``:

=========  =================================================================================
policy     what a step, attempt and error signal keep
=========  =================================================================================
none       tool names, ok/failed, durations; every prompt, tool argument, result and error
           message is replaced by its size and hash (``<n> bytes sha256:<16 hex>``), so equal
           texts still group (``errsig:sha256:…``)
summary    (default) the prompt, the tool's main argument (command, file path, pattern, url,
           query; other inputs as their keys, size and hash), the error message; a tool's
           *result* only as its size and hash — file contents never reach the log
full       as ``summary``, plus the result text (up to ``MAX_TEXT`` characters)
=========  =================================================================================

An unknown value means ``none`` (the most private reading of a typo) and a warning.
Whatever is kept is first redacted (:func:`evolog.hook._redact.redact`: key blocks, tokens
of known formats, credentials in URLs, headers and command lines, values of secret-named
keys): each string on its own, then a structure once more as the JSON text it is kept as,
so a ``{"password": ...}`` pair is seen whole.

A ``PostToolUse`` payload reports a failure when (:func:`tool_failure`): the response says
``is_error`` or ``success: false``, or has a non-empty ``error``; an integer exit code
(``exit_code``, ``exitCode``, ``returncode``, ``return_code``) is not 0; ``interrupted`` is
true (a timeout or a user cancel); or, for a Bash-like response without an exit code, its
stderr states a non-zero exit (``Exit code 2``, ``exited with non-zero status code 1``),
says ``command not found`` or holds a Python traceback, or stdout is empty and a stderr
line starts like an error (``error:``, ``fatal:``, ``<path>:<line>: error``, ``npm ERR!``).
Non-empty stderr alone is *not* a failure: compilers, git, pip and progress bars write there
on success. Claude Code itself reports failed tools as
``PostToolUseFailure`` (``error``, ``is_interrupt``), which is always a failure.
"""

from __future__ import annotations

import functools
import importlib
import os
import re
from typing import Any, Final

import msgspec

from ._redact import REDACTED, is_secret_name, redact

__all__ = [
    "MAX_TEXT",
    "POLICIES",
    "content_policy",
    "digest",
    "input_summary",
    "kept",
    "redact",
    "result_summary",
    "sha256_hex",
    "text_for",
    "tool_failure",
]

MAX_TEXT: Final = 2000
POLICIES: Final = ("none", "summary", "full")
_ENV: Final = "EVOLOG_HOOK_CONTENT"
# Redaction runs on at most this much text: what lies past the cap is never kept anyway.
_SCAN: Final = 4 * MAX_TEXT

_FAILURES: Final = {
    "exit": r"(?im)(?:^exit (?:code|status)|exited with (?:non-zero )?(?:exit )?"
    r"(?:status|code)(?: code)?)\s*:?\s*(-?\d+)",
    # Lines that mean the command failed whatever else it printed.
    "fatal": r"(?m)^[\w./-]*:?.*\bcommand not found\b|^Traceback \(most recent call last\):",
    "error": r"(?im)^\s*(?:[^\s:]+(?::\d+)*:\s*)?(?:error|fatal|panic)\b|^npm err(?:!|or)",
}
_EXIT_KEYS: Final = ("exit_code", "exitCode", "returncode", "return_code")


def content_policy() -> tuple[str, str | None]:
    """The policy from the environment, and a warning when its value was not understood."""
    value = os.environ.get(_ENV, "").strip().lower() or "summary"
    if value in POLICIES:
        return value, None
    return "none", f"{_ENV}={value!r} is not one of {'|'.join(POLICIES)}; using 'none'"


@functools.cache
def _failure_pattern(name: str) -> re.Pattern[str]:
    return re.compile(_FAILURES[name])


def kept(value: Any) -> str | None:
    """A payload value as text the log may keep: redacted, then cut to ``MAX_TEXT``."""
    if value is None:
        return None
    # A structure's strings are redacted each alone first (their own ends are plain), then
    # once more as the JSON text kept, where a secret-named key and its value meet.
    s: str = (
        _redacted(value)
        if isinstance(value, str)
        else redact(msgspec.json.encode(_redacted(value)).decode()[:_SCAN])
    )
    return s if len(s) <= MAX_TEXT else s[: MAX_TEXT - 1] + "…"


def _redacted(value: Any, depth: int = 0) -> Any:
    if isinstance(value, str):
        # Cut before redacting only far past the limit (a secret cut in two could slip by).
        return redact(value[:_SCAN])
    if depth > 32:
        return "…"
    if isinstance(value, dict):
        # A value under a secret-named key goes whole (a list of tokens, a number PIN); a
        # mapping is walked, its own keys may say more.
        return {
            str(k): REDACTED
            if v is not None and not isinstance(v, dict) and is_secret_name(str(k))
            else _redacted(v, depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_redacted(v, depth + 1) for v in value]
    return value


def digest(value: Any) -> str:
    """``<n> bytes sha256:<16 hex>`` of a value (text as UTF-8, anything else as JSON)."""
    data = (
        value.encode("utf-8", "surrogatepass")
        if isinstance(value, str)
        else msgspec.json.encode(value)
    )
    return f"{len(data)} bytes sha256:{sha256_hex(data)[:16]}"


def sha256_hex(data: bytes) -> str:
    """SHA-256 without importing hashlib when CPython's built-in module is there: hashlib
    loads OpenSSL, about 2 ms of a cold hook's start (the digest is the same)."""
    for name in ("_sha2", "_sha256"):  # CPython 3.12+, then <= 3.11
        try:
            sha256 = importlib.import_module(name).sha256
            break
        except (ImportError, AttributeError):
            continue
    else:
        import hashlib

        sha256 = hashlib.sha256
    return str(sha256(data).hexdigest())


def text_for(value: Any, policy: str) -> str | None:
    """Free text (a prompt, an error message) under ``policy``."""
    if value is None or value == "":
        return None
    return digest(value) if policy == "none" else kept(value)


def input_summary(tool_input: Any, policy: str) -> str:
    """The tool's main argument, or its input's keys, size and hash."""
    if tool_input is None:
        return ""
    if isinstance(tool_input, dict):
        for key in ("command", "file_path", "path", "notebook_path", "pattern", "url", "query"):
            if isinstance(tool_input.get(key), str):
                main = tool_input[key]
                return digest(main) if policy == "none" else kept(main) or ""
        if policy != "full":
            keys = ",".join(sorted(str(k) for k in tool_input)[:8])
            return f"{{{keys}}} {digest(tool_input)}"
    return digest(tool_input) if policy == "none" else kept(tool_input) or ""


def result_summary(response: Any, policy: str) -> str:
    """A tool result under ``policy``: its text only under ``full``, else size and hash."""
    if response is None:
        return ""
    if policy == "full":
        if isinstance(response, dict) and isinstance(response.get("stdout"), str):
            return kept(response["stdout"]) or ""
        return kept(response) or ""
    return digest(response)


def tool_failure(response: Any) -> str | None:
    """The error of a ``PostToolUse`` response, or None when it looks successful.

    The rule is the module docstring's; the text returned is raw (the caller redacts it).
    """
    if isinstance(response, str):
        return response if response.lstrip().lower().startswith("error") else None
    if not isinstance(response, dict):
        return None
    stderr: str = response["stderr"] if isinstance(response.get("stderr"), str) else ""
    if response.get("is_error") or response.get("success") is False:
        return _first_text(response.get("error"), response.get("content"), stderr) or "tool error"
    if isinstance(response.get("error"), str) and response["error"].strip():
        return str(response["error"])
    for key in _EXIT_KEYS:
        code = response.get(key)
        if isinstance(code, int) and not isinstance(code, bool):
            return None if code == 0 else (stderr.strip() or f"exit code {code}")
    if response.get("interrupted") is True:
        return f"interrupted: {stderr.strip()}" if stderr.strip() else "interrupted"
    if not stderr.strip():
        return None
    exit_text = _failure_pattern("exit").search(stderr)
    if exit_text is not None:
        return None if int(exit_text.group(1)) == 0 else stderr.strip()
    if _failure_pattern("fatal").search(stderr):
        return stderr.strip()
    stdout = response.get("stdout")
    if not (isinstance(stdout, str) and stdout.strip()) and _failure_pattern("error").search(
        stderr
    ):
        return stderr.strip()
    return None


def _first_text(*values: Any) -> str | None:
    for value in values:
        if isinstance(value, str) and value.strip():
            return value
        if value not in (None, "", [], {}):
            return msgspec.json.encode(value).decode()
    return None
