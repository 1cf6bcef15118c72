"""Secrets never reach the store through the hook (issue 26.3).

The corpus (tests/secret_corpus.py) holds every secret kind in every place the hook keeps
text. Unit level: each kind in each context through what the hook keeps (``kept``); end to
end: the real `evolog hook claude-code` with every kind in every context, the dead letter
(a payload that does not parse, a payload that cannot be appended), a seal, then every byte
of the store (Parquet read back column by column) searched for every secret and its pieces.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from secret_corpus import MARKERS, Kind, benign, contexts, kinds, windows

from evolog.hook._content import MAX_TEXT, kept, redact
from evolog.hook._files import DEAD_LETTER_ENTRY

KINDS = kinds()


def leaks(k: Kind, text: str) -> list[str]:
    return [w for n in k.needles for w in windows(n) if w in text]


def test_the_corpus_is_wide() -> None:
    assert len(KINDS) >= 50 and len({k.name for k in KINDS}) == len(KINDS)
    pairs = sum(len(contexts(k)) for k in KINDS)
    assert pairs >= 6 * len(KINDS)


# A YAML block scalar runs to the end of its line and over the indented lines after it:
# there the text after the secret goes too, as YAML reads it.
SWALLOWED = {("yaml block scalar", "error"), ("yaml block scalar", "prose")}


@pytest.mark.parametrize("kind", KINDS, ids=[k.name for k in KINDS])
def test_every_kind_is_redacted_in_every_context(kind: Kind) -> None:
    for name, text in contexts(kind).items():
        out = kept(text) or ""
        assert not leaks(kind, out), f"{kind.name} in {name}: {out[:300]!r}"
        assert "[REDACTED" in out
        # Only the secret goes: the text around it stays.
        marker = "tail -n 20" if name == "command" and kind.command else MARKERS[name]
        assert marker in out or (kind.name, name) in SWALLOWED, f"{name}: {out[-200:]!r}"


def test_benign_text_is_left_exactly_as_it_was() -> None:
    changed = [(t, redact(t)) for t in benign() if redact(t) != t]
    assert changed == []


def test_a_secret_named_key_of_a_structure_is_redacted() -> None:
    # Each string of a structure is redacted alone, so the key's name was never seen.
    value = "Xq7" + "mP2vL9" + "wR4tZ"
    out = kept({"db": {"password": value, "host": "db"}, "token": [value], "n": 1}) or ""
    assert value not in out and '"host":"db"' in out and out.count("[REDACTED]") >= 2


def test_no_rule_reaches_past_an_escaped_newline_into_another_secret() -> None:
    # In JSON text every line is one: the .netrc rule ("machine|default ... password X")
    # once ran from an ini "[default]" to a later "my password is X" and cut "is".
    (k,) = [k for k in KINDS if k.name == "prose 'password is'"]
    text = json.dumps({"out": f"[default]\nregion = eu-west-1\n\n{k.snippet}"})
    assert not leaks(k, kept(text) or "")


def test_a_secret_cut_at_the_dead_letter_limit_is_still_redacted(tmp_path: Path) -> None:
    (k,) = [k for k in KINDS if k.name == "github classic pat"]
    pad = "x" * (DEAD_LETTER_ENTRY - 20 - len('{"prompt": "'))
    raw = f'{{"prompt": "{pad} {k.snippet} oops'.encode()
    run_hook(tmp_path / "s", raw)
    text = (tmp_path / "s" / "dead-letter.ndjson").read_text()
    assert json.loads(text)["payload_chars"] > DEAD_LETTER_ENTRY
    assert not leaks(k, text)


def test_a_token_hidden_by_a_json_unicode_escape_is_redacted_in_the_dead_letter(
    tmp_path: Path,
) -> None:
    # The payload does not parse, so the dead letter keeps it as text, where "\u0067hp_"
    # is a token the rules would not see.
    (k,) = [k for k in KINDS if k.name == "github classic pat"]
    raw = '{"prompt": "use \\u0067' + k.snippet[1:] + '", oops'
    run_hook(tmp_path / "s", raw.encode())
    text = (tmp_path / "s" / "dead-letter.ndjson").read_text()
    assert not leaks(k, text) and "[REDACTED]" in text


# -- end to end -----------------------------------------------------------------------------
def run_hook(store: Path, raw: bytes, env: dict[str, str] | None = None) -> None:
    full = {**os.environ, "XDG_STATE_HOME": str(store.parent / "xdg-state"), **(env or {})}
    full.pop("EVOLOG_HOOK_CONTENT", None)
    result = subprocess.run(
        [sys.executable, "-m", "evolog", "--store", str(store), "hook", "claude-code"],
        input=raw, capture_output=True, env=full, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0 and result.stdout == b"", result.stderr


def chunks(limit: int) -> list[str]:
    """Every (kind, context) text, packed into chunks of at most ``limit`` characters."""
    out: list[str] = []
    for k in KINDS:
        for text in contexts(k).values():
            if out and len(out[-1]) + 2 + len(text) <= limit:
                out[-1] += "\n\n" + text
            else:
                assert len(text) <= limit
                out.append(text)
    return out


def store_text(root: Path) -> tuple[bytes, int]:
    """Every byte under ``root``, Parquet also read back (its pages are compressed)."""
    parts: list[bytes] = []
    segments = 0
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        parts.append(path.read_bytes())
        if path.suffix == ".parquet":
            segments += 1
            table = pq.read_table(path)
            for column in table.columns:
                parts.extend(_strings(column.combine_chunks()))
    return b"\n".join(parts), segments


def _strings(array: pa.Array) -> list[bytes]:
    t = array.type
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t):
        return [v if isinstance(v, bytes) else str(v).encode() for v in array.to_pylist() if v]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _strings(array.flatten())
    if pa.types.is_struct(t):
        return [s for i in range(t.num_fields) for s in _strings(array.field(i))]
    return []


def test_the_real_hook_keeps_no_secret_anywhere_in_the_store(tmp_path: Path) -> None:
    store = tmp_path / "s"
    base = {"session_id": "secrets", "cwd": "/srv/app", "transcript_path": "/t.jsonl"}
    packed = chunks(MAX_TEXT - 200)  # nothing is cut: every secret reaches the redaction
    payloads: list[dict[str, Any]] = []
    # Three chunks a round: a prompt, a command and its failure's error, two of each kind.
    for i in range(0, len(packed), 3):
        prompt, command, error = (packed[(i + j) % len(packed)] for j in range(3))
        payloads.append({"hook_event_name": "UserPromptSubmit", "prompt": prompt})
        if i % 2:
            payloads.append({"hook_event_name": "PostToolUseFailure", "tool_name": "Bash",
                             "tool_use_id": f"t{i}", "tool_input": {"command": command},
                             "error": error})  # fmt: skip
        else:
            response = {"stdout": error, "stderr": error, "exit_code": 1}
            payloads.append({"hook_event_name": "PostToolUse", "tool_name": "Bash",
                             "tool_use_id": f"t{i}", "tool_input": {"command": command},
                             "tool_response": response})  # fmt: skip
    payloads.append({"hook_event_name": "Stop", "stop_hook_active": False})
    for p in payloads:
        run_hook(store, json.dumps({**base, **p}).encode())
    # Dead letters: payloads that do not parse (each chunk raw and as JSON in a JSON string),
    # then ones that parse but cannot be appended (the write lock is held).
    batches = [packed[i : i + 8] for i in range(0, len(packed), 8)]
    for batch in batches:
        fields = {f"c{j}": c for j, c in enumerate(batch)}
        body = json.dumps({**fields, "nested": json.dumps(fields)}).encode()
        assert len(body) < DEAD_LETTER_ENTRY  # nothing is cut
        run_hook(store, b'{"hook_event_name": "PostToolUse", "tool_input": ' + body + b", oops")
    fd = os.open(store / "write.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        for batch in batches[:2]:
            payload = {**base, "hook_event_name": "UserPromptSubmit", "prompt": batch[0],
                       "extra": {"output": json.dumps({"lines": batch})}}  # fmt: skip
            run_hook(store, json.dumps(payload).encode(), {"EVOLOG_HOOK_LOCK_TIMEOUT": "0"})
    finally:
        os.close(fd)
    sealed = subprocess.run(
        [sys.executable, "-m", "evolog", "--store", str(store), "seal"],
        capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    assert sealed.returncode == 0, sealed.stderr
    haystack, segments = store_text(tmp_path)
    # The store did keep the text around the secrets, from the log and the dead letter.
    letters = (store / "dead-letter.ndjson").read_text().splitlines()
    assert segments >= 1 and len(letters) == len(batches) + 2
    assert haystack.count(b"LOG_LEVEL=info") >= len(KINDS)
    found = {k.name: w for k in KINDS for n in k.needles for w in windows(n)
             if w.encode() in haystack}  # fmt: skip
    assert found == {}
