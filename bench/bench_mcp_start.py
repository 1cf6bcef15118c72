"""``evolog mcp`` start-up as an MCP client sees it: time from spawning the process to the
answer to ``initialize``, to "connected" (``tools/list``, ``prompts/list`` and
``resources/list`` answered, as Claude Code asks them), and to the answer to the first
``tools/call`` (a ``recall``), medians over ``--runs`` starts (after one start that creates
the store and fills the handshake cache).

    python bench/bench_mcp_start.py                 # 5 starts
    python bench/bench_mcp_start.py --runs 9 --env EVOLOG_MCP_FAST_START=0

Claude Code waits ``MCP_CONNECT_TIMEOUT_MS`` (5000 ms by default) for its MCP servers before a
session goes on without them; a tool called before the server has listed its tools fails with
"still connecting". The figure to watch is therefore the time to "connected". The client
speaks the stdio transport itself (one JSON object a line), so the figures hold the server's
time only. Figures are only meaningful on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import IO, Any


def _request(stdin: IO[str], ident: int, method: str, params: dict[str, Any]) -> None:
    stdin.write(json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params}))
    stdin.write("\n")
    stdin.flush()


def _answer(stdout: IO[str], ident: int) -> dict[str, Any]:
    while True:
        line = stdout.readline()
        if not line:
            raise SystemExit(f"the server closed its stdout before answering request {ident}")
        msg = json.loads(line)
        if msg.get("id") == ident:
            if "error" in msg:
                raise SystemExit(f"request {ident} failed: {msg['error']}")
            result: dict[str, Any] = msg["result"]
            return result


def one_start(command: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True, bufsize=1
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        _request(
            proc.stdin,
            1,
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "0"},
            },
        )
        _answer(proc.stdout, 1)
        t_init = time.perf_counter() - t0
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        proc.stdin.write("\n")
        # What Claude Code asks while connecting; it counts the server connected (its tools
        # callable) once all three are answered.
        _request(proc.stdin, 2, "tools/list", {})
        _request(proc.stdin, 4, "prompts/list", {})
        _request(proc.stdin, 5, "resources/list", {})
        tools = _answer(proc.stdout, 2)["tools"]
        _answer(proc.stdout, 4)
        _answer(proc.stdout, 5)
        t_list = time.perf_counter() - t0
        if not any(t["name"] == "recall" for t in tools):
            raise SystemExit("tools/list has no recall tool")
        _request(
            proc.stdin,
            3,
            "tools/call",
            {
                "name": "recall",
                "arguments": {"query": "deploy the web service"},
            },
        )
        _answer(proc.stdout, 3)
        t_call = time.perf_counter() - t0
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    return t_init, t_list, t_call


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="starts to time (default 5)")
    ap.add_argument("--env", action="append", default=[], help="NAME=VALUE for the server")
    args = ap.parse_args()
    env = dict(os.environ)
    env.update(kv.split("=", 1) for kv in args.env)
    with tempfile.TemporaryDirectory() as tmp:
        store = os.path.join(tmp, "store")
        command = [sys.executable, "-m", "evolog", "--store", store, "mcp"]
        one_start(command, env)  # creates the store; warms the page cache
        runs = [one_start(command, env) for _ in range(args.runs)]
    for label, i in (("initialize", 0), ("connected", 1), ("first tools/call", 2)):
        values = sorted(r[i] * 1000 for r in runs)
        print(
            f"{label:<17} median {statistics.median(values):7.0f} ms   "
            f"min {values[0]:6.0f}   max {values[-1]:6.0f}   ({len(values)} starts)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
