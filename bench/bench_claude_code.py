"""Hook overhead with the real Claude Code CLI: no hooks, command hooks, http hooks to the worker,
and the plugin's hooks (a command hook per event that posts to the worker with curl and falls
back to the command hook).

One run measures the four side by side, interleaved turn by turn (none, command, http, plugin,
none, ...), each turn a headless ``claude -p`` against the scripted fake Anthropic API of
``tests/_fake_anthropic.py`` that asks for two Bash calls and then ends the turn:

* turn: the CLI's wall time, launch to exit, and the ``duration_ms`` it reports itself;
* per tool event: the fake API's gap between answering a tool call and the next request
  holds the PreToolUse hook, the tool and the PostToolUse hook; the gap's excess over the
  median gap without hooks, halved, is one event's overhead (p50 and p99 over every gap);
* to the first request: what SessionStart and UserPromptSubmit add before the model is asked;
* http: each hook's own time as Claude Code logs it (``--debug-file``: POST to answer).

Then the command hook alone (``evolog hook claude-code`` on a PostToolUse payload, a fresh
process each time) and the same payload posted to the worker, p50 over ``--standalone`` runs.

    .venv/bin/python bench/bench_claude_code.py --turns 5 --standalone 30
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from _fake_anthropic import FakeAnthropic, ToolCall, claude_cli, main_requests  # noqa: E402

from evolog.doctor._plugin import plugin_hooks  # noqa: E402
from evolog.hook._recall import settings as command_settings  # noqa: E402
from evolog.worker._files import read_token  # noqa: E402
from evolog.worker._settings import http_settings  # noqa: E402

EVOLOG = str(Path(sys.executable).with_name("evolog"))
PLAN = [
    ToolCall("Bash", {"command": "echo first-tool"}),
    ToolCall("Bash", {"command": "echo second-tool"}),
]
PERMISSIONS = {"permissions": {"allow": ["Bash(echo:*)"]}}
_POST = re.compile(r"^(\S+) \[DEBUG\] Hooks: HTTP hook POST to ")
_ANSWER = re.compile(r"^(\S+) \[DEBUG\] Hooks: HTTP hook response status ")
_NAMED = re.compile(r'\[DEBUG\] "Hook [\w:]+ \((\w+)\) ')
TOOL_EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure")


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _turn(claude: str, api: FakeAnthropic, work: Path, mode: str, settings: dict[str, Any],
          env: dict[str, str]) -> dict[str, Any]:  # fmt: skip
    api.seen.clear()
    debug = work / f"debug-{mode}-{time.monotonic_ns()}.log"
    args = [claude, "-p", "run both echoes", "--output-format", "json",
            "--settings", json.dumps(settings), "--debug-file", str(debug)]  # fmt: skip
    full = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(work / "home"),
        "ANTHROPIC_BASE_URL": api.url,
        "ANTHROPIC_API_KEY": "sk-ant-fake-key-for-bench",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        **env,
    }
    launched = time.monotonic()
    done = subprocess.run(args, cwd=work / "proj", env=full, capture_output=True, text=True)
    wall = time.monotonic() - launched
    if done.returncode != 0:
        raise SystemExit(f"claude exited {done.returncode} ({mode}): {done.stderr[-1000:]}")
    result = json.loads(done.stdout)
    reqs = main_requests(api.seen)
    if len(reqs) != len(PLAN) + 1:
        raise SystemExit(f"{mode}: expected {len(PLAN) + 1} model requests; got {len(reqs)}")
    gaps = [reqs[i + 1].arrived - reqs[i].answered for i in range(len(reqs) - 1)]
    return {
        "wall": wall,
        "duration": result["duration_ms"] / 1000,
        "first": reqs[0].arrived - launched,
        "gaps": gaps,
        "hooks": _http_hook_times(debug),
    }


def _http_hook_times(debug: Path) -> list[tuple[str, float]]:
    """(event, seconds from the http hook's POST to its answer), as the CLI logged them."""
    times: list[tuple[str, float]] = []
    started: str | None = None
    took: float | None = None
    for line in debug.read_text(errors="replace").splitlines():
        if (m := _POST.match(line)) is not None:
            started = m.group(1)
        elif (m := _ANSWER.match(line)) is not None and started is not None:
            a = datetime.fromisoformat(started.replace("Z", "+00:00"))
            b = datetime.fromisoformat(m.group(1).replace("Z", "+00:00"))
            took, started = (b - a).total_seconds(), None
        elif took is not None and (m := _NAMED.search(line)) is not None:
            times.append((m.group(1), took))
            took = None
    debug.unlink()
    return times


def _payload(i: int) -> bytes:
    return json.dumps({
        "hook_event_name": "PostToolUse", "session_id": "bench-standalone",
        "tool_name": "Bash", "tool_use_id": f"toolu_{i}", "tool_input": {"command": "echo hi"},
        "tool_response": {"stdout": "hi", "stderr": "", "interrupted": False},
    }).encode()  # fmt: skip


def _standalone(store: str, port: int, runs: int) -> dict[str, float]:
    command: list[float] = []
    env = {**os.environ, "EVOLOG_STORE": store}
    for i in range(runs):
        t = time.perf_counter()
        subprocess.run([EVOLOG, "hook", "claude-code"], input=_payload(i), env=env, check=True,
                       capture_output=True)  # fmt: skip
        command.append(time.perf_counter() - t)
    http: list[float] = []
    token = read_token(store)
    url = f"http://127.0.0.1:{port}/hook/claude-code"
    for i in range(runs):
        req = urllib.request.Request(url, _payload(runs + i), method="POST", headers={
            "Authorization": f"Bearer {token}", "Content-Type": "application/json"})  # fmt: skip
        t = time.perf_counter()
        with urllib.request.urlopen(req) as r:
            r.read()
        http.append(time.perf_counter() - t)
    return {
        "command_p50_ms": statistics.median(command) * 1000,
        "command_p99_ms": _pct(command, 0.99) * 1000,
        "http_p50_ms": statistics.median(http) * 1000,
        "http_p99_ms": _pct(http, 0.99) * 1000,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--turns", type=int, default=5, help="turns per mode (default 5)")
    p.add_argument("--standalone", type=int, default=30, help="standalone hook runs (30)")
    p.add_argument("--port", type=int, default=18731, help="the worker's port (18731)")
    p.add_argument("--dream-after", type=float, default=-1.0,
                   help="the worker's dream delay (default -1: none during the bench)")  # fmt: skip
    args = p.parse_args()
    claude = claude_cli()
    if claude is None:
        raise SystemExit(
            "the Claude Code CLI is not installed (npm i -g @anthropic-ai/claude-code)"
        )
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "proj").mkdir()
        (work / "home").mkdir()
        stores = {m: str(work / f"store-{m}") for m in ("command", "http", "plugin")}
        for store, port in ((stores["http"], args.port), (stores["plugin"], args.port + 1)):
            subprocess.run([EVOLOG, "--store", store, "worker", "start", "--port", str(port),
                            "--dream-after", str(args.dream_after)],
                           check=True, capture_output=True)  # fmt: skip
        try:
            modes = {
                "none": (PERMISSIONS, {}),
                "command": ({**command_settings(f"{EVOLOG} hook claude-code", stores["command"]),
                             **PERMISSIONS}, {}),
                "http": ({**http_settings(stores["http"], args.port, read_token(stores["http"]),
                                          f"{EVOLOG} hook claude-code"), **PERMISSIONS},
                         {"EVOLOG_WORKER_PORT": str(args.port)}),
                "plugin": ({**_plugin_settings(stores["plugin"]), **PERMISSIONS},
                           {"EVOLOG_WORKER_PORT": str(args.port + 1)}),
            }  # fmt: skip
            runs: dict[str, list[dict[str, Any]]] = {m: [] for m in modes}
            with FakeAnthropic(plan=PLAN, final_text="Both ran.") as api:
                for _ in range(args.turns):
                    for mode, (settings, env) in modes.items():
                        runs[mode].append(_turn(claude, api, work, mode, settings, env))
            served = _served(stores["http"], args.port)
            alone = _standalone(stores["http"], args.port, args.standalone)
        finally:
            for store, port in ((stores["http"], args.port), (stores["plugin"], args.port + 1)):
                subprocess.run([EVOLOG, "--store", store, "worker", "stop"],
                               env={**os.environ, "EVOLOG_WORKER_PORT": str(port)},
                               check=False, capture_output=True)  # fmt: skip
    _report(runs, alone, claude, args.turns)
    print(f"worker side, the turns' {served['count']} hook requests: "
          f"{served['under_5ms']} answered within 5 ms, {served['under_10ms']} within 10 ms, "
          f"mean {served['mean_ms']:.1f} ms (its /metrics)")  # fmt: skip


def _plugin_settings(store: str) -> dict[str, Any]:
    """plugin/hooks/hooks.json with what Claude Code substitutes into a plugin's commands."""
    text = json.dumps({"hooks": plugin_hooks()["hooks"]})
    for name, value in (
        ("${CLAUDE_PLUGIN_ROOT}", str(ROOT / "plugin")),
        ("${user_config.evolog}", EVOLOG),
        ("${user_config.store}", store),
    ):
        text = text.replace(name, value)
    out: dict[str, Any] = json.loads(text)
    return out


def _served(store: str, port: int) -> dict[str, float]:
    """The worker's own time per hook request so far (its /metrics histogram)."""
    auth = {"Authorization": f"Bearer {read_token(store)}"}
    req = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers=auth)
    with urllib.request.urlopen(req) as r:
        text = r.read().decode()
    found: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith('evolog_http_request_seconds_bucket{route="hook",le="0.005"}'):
            found["under_5ms"] = float(line.split()[-1])
        elif line.startswith('evolog_http_request_seconds_bucket{route="hook",le="0.01"}'):
            found["under_10ms"] = float(line.split()[-1])
        elif line.startswith('evolog_http_request_seconds_sum{route="hook"}'):
            found["sum"] = float(line.split()[-1])
        elif line.startswith('evolog_http_request_seconds_count{route="hook"}'):
            found["count"] = float(line.split()[-1])
    found["mean_ms"] = found.get("sum", 0.0) / max(found.get("count", 1.0), 1.0) * 1000
    return found


def _report(runs: dict[str, list[dict[str, Any]]], alone: dict[str, float], claude: str,
            turns: int) -> None:  # fmt: skip
    version = subprocess.run([claude, "--version"], capture_output=True, text=True).stdout
    base_gap = statistics.median(g for r in runs["none"] for g in r["gaps"])
    base_first = statistics.median(r["first"] for r in runs["none"])
    base_wall = statistics.median(r["wall"] for r in runs["none"])
    base_dur = statistics.median(r["duration"] for r in runs["none"])
    print(f"Claude Code {version.strip()}; {turns} two-tool turns per mode, interleaved; "
          f"load average {os.getloadavg()[0]:.2f}")  # fmt: skip
    print(f"{'mode':8} {'wall s':>7} {'+%':>6} {'cc dur s':>8} {'+%':>6} {'1st req s':>9} "
          f"{'ev p50 ms':>9} {'ev p99 ms':>9} {'http hook p50/p99 ms':>21}")  # fmt: skip
    out: dict[str, Any] = {"claude_code": version.strip(), "turns": turns, "standalone": alone}
    for mode, rs in runs.items():
        wall = statistics.median(r["wall"] for r in rs)
        dur = statistics.median(r["duration"] for r in rs)
        first = statistics.median(r["first"] for r in rs)
        events = [max(g - base_gap, 0.0) / 2 for r in rs for g in r["gaps"]]
        hooks = [h for r in rs for _, h in r["hooks"]]
        hook_text = (f"{statistics.median(hooks) * 1000:.1f}/{_pct(hooks, 0.99) * 1000:.1f}"
                     if hooks else "-")  # fmt: skip
        by_event: dict[str, list[float]] = {}
        for r in rs:
            for event, h in r["hooks"]:
                by_event.setdefault(event, []).append(h * 1000)
        print(f"{mode:8} {wall:7.2f} {100 * (wall / base_wall - 1):6.1f} {dur:8.2f} "
              f"{100 * (dur / base_dur - 1):6.1f} {first:9.2f} "
              f"{statistics.median(events) * 1000:9.1f} {_pct(events, 0.99) * 1000:9.1f} "
              f"{hook_text:>21}")  # fmt: skip
        out[mode] = {"wall_s": wall, "duration_s": dur, "first_request_s": first,
                     "added_to_first_request_s": first - base_first,
                     "event_overhead_p50_ms": statistics.median(events) * 1000,
                     "event_overhead_p99_ms": _pct(events, 0.99) * 1000,
                     "http_hook_ms": {e: sorted(v) for e, v in by_event.items()}}  # fmt: skip
    for event, ms in sorted(out["http"]["http_hook_ms"].items()):
        print(f"  http {event:18} n={len(ms):3} p50 {statistics.median(ms):6.1f} ms "
              f"p99 {_pct(ms, 0.99):6.1f} ms")  # fmt: skip
    tool = [v for e in TOOL_EVENTS for v in out["http"]["http_hook_ms"].get(e, [])]
    if tool:
        print(f"  http tool events        n={len(tool):3} p50 {statistics.median(tool):6.1f} ms "
              f"p99 {_pct(tool, 0.99):6.1f} ms")  # fmt: skip
    print(f"standalone PostToolUse: command hook p50 {alone['command_p50_ms']:.1f} ms "
          f"(p99 {alone['command_p99_ms']:.1f}); worker POST p50 {alone['http_p50_ms']:.1f} ms "
          f"(p99 {alone['http_p99_ms']:.1f})")  # fmt: skip
    print(json.dumps(out))


if __name__ == "__main__":
    main()
