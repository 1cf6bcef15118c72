"""The Claude Code hook as a user trusts it: failures recorded, secrets and file contents kept
out of a log that cannot forget, bounded files, an honest dead letter. Every case runs the
real `evolog hook claude-code` in a subprocess with the payloads Claude Code sends."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from evolog.eventlog import Attempt, EventLog, Outcome, Signal, Step

from evolog.hook._content import redact, tool_failure
from evolog.hook._files import DEAD_LETTER_ENTRY, DEAD_LETTER_MAX, STALE_AFTER_S

SETUP_PAGE = Path(__file__).resolve().parents[2] / "docs" / "claude-code.md"
SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def hook(
    store: Path,
    payload: Any,
    raw: bytes | None = None,
    *,
    env: dict[str, str] | None = None,
    stderr: int | None = subprocess.PIPE,
) -> subprocess.CompletedProcess[bytes]:
    data = raw if raw is not None else json.dumps(payload).encode()
    full_env = {**os.environ, "XDG_STATE_HOME": str(store.parent / "xdg-state")}
    full_env.pop("EVOLOG_HOOK_CONTENT", None)
    return subprocess.run(
        [sys.executable, "-m", "evolog", "--store", str(store), "hook", "claude-code"],
        input=data,
        stdout=subprocess.PIPE,
        stderr=stderr,
        env={**full_env, **(env or {})},
        timeout=60,
        check=False,
    )


def events(store: Path) -> list[Any]:
    with EventLog(store) as log:
        return list(log.replay())


def run_session(store: Path, sid: str, posts: list[dict[str, Any]], **kw: Any) -> None:
    """A prompt, then each tool payload (PreToolUse first), then Stop."""
    base = {"session_id": sid, "cwd": "/src", "transcript_path": "/t.jsonl"}
    sequence: list[dict[str, Any]] = [
        {"hook_event_name": "UserPromptSubmit", "prompt": "fix the build"}
    ]
    for i, post in enumerate(posts):
        call = {"tool_name": post["tool_name"], "tool_use_id": f"toolu_{i}",
                "tool_input": post.get("tool_input", {})}  # fmt: skip
        sequence += [{"hook_event_name": "PreToolUse", **call}, {**call, **post}]
    sequence.append({"hook_event_name": "Stop", "stop_hook_active": False})
    for payload in sequence:
        result = hook(store, {**base, **payload}, **kw)
        assert result.returncode == 0 and result.stderr == b"", result.stderr


def bash_post(stdout: str, stderr: str, interrupted: bool = False) -> dict[str, Any]:
    return {
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "make", "description": "build"},
        "tool_response": {
            "stdout": stdout, "stderr": stderr, "interrupted": interrupted, "isImage": False,
        },
    }  # fmt: skip


# -- failures are recorded ----------------------------------------------------------------
def test_documented_settings_register_every_event_the_hook_records() -> None:
    block = re.search(r"```json\n(\{\n  \"hooks\".*?)```", SETUP_PAGE.read_text(), re.S)
    assert block is not None
    hooks = json.loads(block.group(1))["hooks"]
    assert "PostToolUseFailure" in hooks  # how Claude Code reports a failed tool
    assert set(hooks) >= {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse",
                          "Stop", "SessionEnd"}  # fmt: skip


def test_post_tool_use_failure_gives_a_failed_step_signal_and_outcome(tmp_path: Path) -> None:
    store = tmp_path / "s"
    failure = {
        "hook_event_name": "PostToolUseFailure",
        "tool_name": "Bash",
        "tool_input": {"command": "npm test", "description": "Run test suite"},
        "error": "Command exited with non-zero status code 1",
        "is_interrupt": False,
    }
    run_session(store, "f1", [failure])
    step = next(e for e in events(store) if isinstance(e, Step))
    assert step.ok is False and step.error == "Command exited with non-zero status code 1"
    assert any(isinstance(e, Signal) and "tool_error:Bash" in e.signals for e in events(store))
    assert [e.status for e in events(store) if isinstance(e, Outcome)] == ["failed"]


def test_interrupted_tool_failure_says_so(tmp_path: Path) -> None:
    store = tmp_path / "s"
    failure = {"hook_event_name": "PostToolUseFailure", "tool_name": "Bash",
               "tool_input": {"command": "sleep 900"}, "error": "",
               "is_interrupt": True}  # fmt: skip
    run_session(store, "f2", [failure])
    step = next(e for e in events(store) if isinstance(e, Step))
    assert step.ok is False and step.error == "interrupted"


@pytest.mark.parametrize(
    ("stdout", "stderr", "interrupted", "ok"),
    [
        ("", "fatal: not a git repository (or any of the parent directories): .git", False, False),
        ("", "bash: line 1: pyhton: command not found", False, False),
        ("partial output", "", True, False),
        ("", "Exit code 2\nmake: *** [all] Error 2", False, False),
        ("built\n", "Traceback (most recent call last):\nKeyError: 'a'", False, False),
        ("", "src/a.c:3:1: error: expected ';' before '}' token", False, False),
        # success with noise on stderr: progress, warnings, git's chatter
        ("3 passed\n", "", False, True),
        ("", "Cloning into 'repo'...\nremote: Counting objects: 5, done.", False, True),
        ("ok\n", "warning: unused variable 'x'", False, True),
        ("", "npm WARN deprecated request@2.88.2", False, True),
    ],
)
def test_bash_post_tool_use_outcome_rule(
    tmp_path: Path, stdout: str, stderr: str, interrupted: bool, ok: bool
) -> None:
    store = tmp_path / "s"
    run_session(store, "b", [bash_post(stdout, stderr, interrupted)])
    step = next(e for e in events(store) if isinstance(e, Step))
    assert step.ok is ok
    assert [e.status for e in events(store) if isinstance(e, Outcome)] == [
        "success" if ok else "failed"
    ]


def test_tool_failure_rule_on_explicit_fields() -> None:
    assert tool_failure({"stdout": "", "stderr": "boom", "exit_code": 3}) == "boom"
    assert tool_failure({"stdout": "", "stderr": "error: but fine", "exit_code": 0}) is None
    assert tool_failure({"is_error": True, "content": "no such file"}) == "no such file"
    assert tool_failure({"success": False}) == "tool error"
    assert tool_failure({"stdout": "", "stderr": "Exit code 0", "interrupted": False}) is None
    assert tool_failure("Error: file not found") == "Error: file not found"
    assert tool_failure({"type": "text", "file": {"content": "error: in a file"}}) is None


# -- what is kept ----------------------------------------------------------------------------
def read_post(content: str) -> dict[str, Any]:
    return {
        "hook_event_name": "PostToolUse",
        "tool_name": "Read",
        "tool_input": {"file_path": "/src/.env"},
        "tool_response": {"type": "text", "file": {"filePath": "/src/.env", "content": content,
                                                   "numLines": 2, "startLine": 1,
                                                   "totalLines": 2}},
    }  # fmt: skip


def test_file_contents_are_not_kept_by_default(tmp_path: Path) -> None:
    store = tmp_path / "s"
    content = "DATABASE_URL=postgres://app:pw@db/app\nFEATURE_FLAG=on\n"
    run_session(store, "r1", [read_post(content)])
    step = next(e for e in events(store) if isinstance(e, Step))
    assert step.action == "Read /src/.env" and step.ok is True
    assert re.fullmatch(r"\d+ bytes sha256:[0-9a-f]{16}", step.result)
    assert b"FEATURE_FLAG" not in b"".join(p.read_bytes() for p in (store / "wal").iterdir())


def test_full_policy_keeps_results_redacted(tmp_path: Path) -> None:
    store = tmp_path / "s"
    content = f"GITHUB_TOKEN={SECRET}\nFEATURE_FLAG=on\n"
    run_session(store, "r2", [read_post(content)], env={"EVOLOG_HOOK_CONTENT": "full"})
    step = next(e for e in events(store) if isinstance(e, Step))
    assert "FEATURE_FLAG=on" in step.result and SECRET not in step.result
    assert "GITHUB_TOKEN=[REDACTED]" in step.result


def test_none_policy_keeps_no_text(tmp_path: Path) -> None:
    store = tmp_path / "s"
    failure = {"hook_event_name": "PostToolUseFailure", "tool_name": "Bash",
               "tool_input": {"command": "cat secret.txt"},
               "error": "Permission denied"}  # fmt: skip
    run_session(store, "n", [failure], env={"EVOLOG_HOOK_CONTENT": "none"})
    attempt = next(e for e in events(store) if isinstance(e, Attempt))
    step = next(e for e in events(store) if isinstance(e, Step))
    assert attempt.task is not None and "fix the build" not in attempt.task
    assert "cat secret" not in step.action and "Permission" not in (step.error or "")
    assert step.ok is False and step.tool == "Bash"


def test_an_unknown_policy_keeps_the_least_and_warns(tmp_path: Path) -> None:
    store = tmp_path / "s"
    payload = {"session_id": "u", "hook_event_name": "UserPromptSubmit", "prompt": "hello"}
    result = hook(store, payload, env={"EVOLOG_HOOK_CONTENT": "ful"})
    assert result.returncode == 0 and b"using 'none'" in result.stderr
    assert events(store)[0].task != "hello"


def test_secrets_in_prompts_commands_and_errors_are_redacted(tmp_path: Path) -> None:
    store = tmp_path / "s"
    base = {"session_id": "sec"}
    hook(store, {**base, "hook_event_name": "UserPromptSubmit", "prompt": f"use {SECRET}"})
    cmd = "curl -H 'Authorization: Bearer abcdefghijklmnopqrstuvwxyz' https://api"
    failure = {"hook_event_name": "PostToolUseFailure", "tool_name": "Bash",
               "tool_input": {"command": cmd}, "tool_use_id": "t",
               "error": "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG is invalid"}  # fmt: skip
    hook(store, {**base, **failure})
    log = json.dumps([repr(e) for e in events(store)])
    for secret in (SECRET, "abcdefghijklmnopqrstuvwxyz", "wJalrXUtnFEMI"):
        assert secret not in log
    assert "[REDACTED]" in log


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("key AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
        (f"token {SECRET}", SECRET),
        ("github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "github_pat_11ABCDEFG0123456789"),
        ("ANTHROPIC_API_KEY=sk-ant-api03-abcdefghijklmnopqrstuv", "sk-ant-api03"),
        ("client = OpenAI(api_key='sk-proj-abcdefghijklmnopqrstuv')", "sk-proj-abc"),
        ("Authorization: Bearer eyJhbGciOi.eyJzdWIiOi.SflKxwRJSM", "SflKxwRJSM"),
        ('export DB_PASSWORD="hunter2 2"', "hunter2"),
        ("password: correct-horse", "correct-horse"),
        ('{"client_secret": "s3cr3t"}', "s3cr3t"),
        ("git clone https://bob:pa55word@example.com/r.git", "pa55word"),
        ("slack xoxb-1234567890-abcdefghij", "xoxb-1234567890"),
        (
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n"
            "-----END OPENSSH PRIVATE KEY-----",
            "b3BlbnNzaC1rZXk",
        ),
    ],
)
def test_redaction_patterns(text: str, secret: str) -> None:
    assert secret not in redact(text) and "[REDACTED" in redact(text)


@pytest.mark.parametrize(
    "text", ["max_tokens=2048", "PWD=/home/me", "pytest -q tests/test_token.py", "3 passed"]
)
def test_redaction_leaves_ordinary_text(text: str) -> None:
    assert redact(text) == text


# -- state files -------------------------------------------------------------------------
def test_sessions_whose_names_differ_only_in_escaped_bytes_keep_apart(tmp_path: Path) -> None:
    store = tmp_path / "s"
    for sid in ("a/b", "a_b"):
        hook(store, {"session_id": sid, "hook_event_name": "UserPromptSubmit", "prompt": sid})
    for sid in ("a/b", "a_b"):
        hook(store, {"session_id": sid, "hook_event_name": "PostToolUse", "tool_name": "Read",
                     "tool_use_id": f"t-{sid}", "tool_input": {"file_path": "/x"},
                     "tool_response": "x"})  # fmt: skip
    evs = events(store)
    assert not [e for e in evs if isinstance(e, Outcome)]  # neither closed the other
    attempts = {e.session: e.action_id for e in evs if isinstance(e, Attempt)}
    assert len(attempts) == 2
    for step in (e for e in evs if isinstance(e, Step)):
        assert step.action_id == attempts[step.session]


def test_session_state_is_removed_at_session_end(tmp_path: Path) -> None:
    store = tmp_path / "s"
    run_session(store, "done", [bash_post("ok", "")])
    states = store / "hooks" / "claude-code"
    # After Stop the state holds no attempt, only what the session saw (for the next one).
    (kept,) = states.iterdir()
    assert json.loads(kept.read_bytes()).get("action_id") is None
    hook(store, {"session_id": "done", "hook_event_name": "SessionEnd", "reason": "exit"})
    assert list(states.iterdir()) == []
    hook(store, {"session_id": "e", "hook_event_name": "UserPromptSubmit", "prompt": "p"})
    assert len(list(states.iterdir())) == 1
    hook(store, {"session_id": "e", "hook_event_name": "SessionEnd", "reason": "exit"})
    assert list(states.iterdir()) == []
    assert [e.status for e in events(store) if isinstance(e, Outcome)] == ["success", "abandoned"]


def test_stale_session_state_is_pruned(tmp_path: Path) -> None:
    store = tmp_path / "s"
    for sid in ("crashed", "live"):
        hook(store, {"session_id": sid, "hook_event_name": "UserPromptSubmit", "prompt": "p"})
    states = store / "hooks" / "claude-code"
    old = time.time() - STALE_AFTER_S - 60
    os.utime(states / "crashed.json", (old, old))
    hook(store, {"session_id": "new", "hook_event_name": "SessionStart", "source": "startup"})
    assert sorted(p.name for p in states.iterdir()) == ["live.json"]


# -- the dead letter -------------------------------------------------------------------------
def test_dead_letter_rotates_and_entries_are_capped(tmp_path: Path) -> None:
    store = tmp_path / "s"
    hook(store, None, raw=b"not json")
    letter = store / "dead-letter.ndjson"
    letter.write_bytes(b"{}\n" * (DEAD_LETTER_MAX // 3 + 1))
    result = hook(store, None, raw=b"x" * (4 * DEAD_LETTER_ENTRY))
    assert result.returncode == 0
    assert (store / "dead-letter.ndjson.1").stat().st_size > DEAD_LETTER_MAX - 3
    (entry,) = [json.loads(line) for line in letter.read_text().splitlines()]
    assert len(entry["payload"]) == DEAD_LETTER_ENTRY
    assert entry["payload_chars"] == 4 * DEAD_LETTER_ENTRY
    assert letter.stat().st_size < DEAD_LETTER_ENTRY + 1024


def test_dead_letter_is_redacted(tmp_path: Path) -> None:
    store = tmp_path / "s"
    hook(store, None, raw=f'{{"prompt": "{SECRET}", oops'.encode())
    text = (store / "dead-letter.ndjson").read_text()
    assert SECRET not in text and "[REDACTED]" in text


def test_closed_stderr_still_exits_zero_and_keeps_the_payload(tmp_path: Path) -> None:
    store = tmp_path / "s"
    read_end, write_end = os.pipe()
    os.close(read_end)  # whatever the hook writes to stderr gets EPIPE
    try:
        result = hook(store, None, raw=b"not json", stderr=write_end)
    finally:
        os.close(write_end)
    assert result.returncode == 0
    lines = (store / "dead-letter.ndjson").read_text().splitlines()
    assert [json.loads(line)["payload"] for line in lines] == ["not json"]


def test_a_full_disk_is_reported_and_the_fallback_used(tmp_path: Path) -> None:
    store = tmp_path / "s"
    hook(store, {"session_id": "s", "hook_event_name": "SessionStart"})
    (store / "dead-letter.ndjson").symlink_to("/dev/full")  # every write: ENOSPC
    result = hook(store, None, raw=b"not json")
    fallback = tmp_path / "xdg-state" / "evolog" / "dead-letter.ndjson"
    assert result.returncode == 0
    assert result.stderr.decode().strip().endswith(f"payload kept in {fallback}")
    assert json.loads(fallback.read_text())["payload"] == "not json"


def test_no_writable_place_says_the_payload_was_lost(tmp_path: Path) -> None:
    store = tmp_path / "s"
    hook(store, {"session_id": "s", "hook_event_name": "SessionStart"})
    (store / "dead-letter.ndjson").symlink_to("/dev/full")
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    result = hook(store, None, raw=b"not json", env={"XDG_STATE_HOME": str(blocker)})
    err = result.stderr.decode()
    assert result.returncode == 0 and err.count("\n") == 1
    assert "payload lost" in err and "No space left on device" in err and "kept" not in err
