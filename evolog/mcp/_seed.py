"""The handshake answers shipped with evolog (``handshake.json``), for a start with no cache.

The fast start answers the handshake from the SDK's answers of a previous start; right after
an install or an upgrade there is none, and a slow first start missed Claude Code's wait. So
the answers the SDK gives are also kept in the package, written by this module from the SDK
itself (``python -m evolog.mcp._seed > evolog/mcp/handshake.json``) and checked by a test to
equal what the installed SDK answers. They are used only while no cache matches, and are
still checked against the SDK's own answers once it is up (a difference is corrected and
announced, as with a stale cache).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

__all__ = ["CLIENT_PROTOCOLS", "load_seed", "seed_path", "seed_text"]

CLIENT_PROTOCOLS = ("2025-11-25", "2025-06-18")
"""The protocol versions the seed answers ``initialize`` for: what Claude Code 2.1 asks for,
and the previous one (older clients; the SDK client of the tests)."""
_LISTS = ("tools/list", "prompts/list", "resources/list", "resources/templates/list")


def seed_path() -> str:
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "handshake.json")


def load_seed() -> tuple[dict[str, Any], dict[str, Any]]:
    """The shipped ``initialize`` answers (by protocol version) and lists; empty if absent
    or damaged (the SDK answers, as before)."""
    try:
        with open(seed_path(), encoding="utf-8") as f:
            data = json.load(f)
        return dict(data["initialize"]), dict(data["lists"])
    except (OSError, ValueError, KeyError, TypeError):
        return {}, {}


def _ask(lines: list[dict[str, Any]]) -> dict[int, Any]:
    """The SDK's answers (serving alone, on a scratch store) to ``lines``, by id."""
    import subprocess  # here: the fast start reads the seed and should not pay for these
    import tempfile

    with tempfile.TemporaryDirectory(prefix="evolog-seed-") as scratch:
        env = {**os.environ, "EVOLOG_MCP_FAST_START": "0", "XDG_CACHE_HOME": scratch}
        cmd = [sys.executable, "-m", "evolog", "--store", os.path.join(scratch, "s"), "mcp"]
        text = "".join(json.dumps({"jsonrpc": "2.0", **m}) + "\n" for m in lines)
        with subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                              text=True) as proc:  # fmt: skip
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(text)
            proc.stdin.flush()
            wanted = {m["id"] for m in lines if "id" in m}
            answers: dict[int, Any] = {}
            while wanted - set(answers):
                line = proc.stdout.readline()
                if not line:
                    raise RuntimeError("evolog mcp closed its stdout before answering")
                msg = json.loads(line)
                if msg.get("id") in wanted:
                    answers[msg["id"]] = msg.get("result", msg.get("error"))
            proc.stdin.close()
            proc.wait(60)
        return answers


def seed_text() -> str:
    """What ``handshake.json`` holds: the installed SDK's answers, one deterministic text."""
    initialize: dict[str, Any] = {}
    lists: dict[str, Any] = {}
    for version in CLIENT_PROTOCOLS:  # one session each: initialize comes once a session
        init = {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "evolog-seed", "version": "0"},
        }
        lines: list[dict[str, Any]] = [
            {"id": 0, "method": "initialize", "params": init},
            {"method": "notifications/initialized"},
        ]
        lines += [{"id": i, "method": m, "params": {}} for i, m in enumerate(_LISTS, 1)]
        answers = _ask(lines)
        initialize[version] = answers[0]
        lists = lists or {m: answers[i] for i, m in enumerate(_LISTS, 1)}
    data = {"initialize": initialize, "lists": lists}
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    sys.stdout.write(seed_text())
