"""What the opt-in reflection at ``Stop`` costs, and what a lesson then does over a run of tasks.

Replays sessions through the real hook command (one process per payload, as Claude Code runs
it), each a prompt, a failed ``pytest`` call, a successful ``uv run pytest`` and ``Stop``, in a
store with reflection off and in one with it on (``memory.json`` ``hook.reflect_lessons``).
Prints the median wall time of the ``Stop`` process in each, then, for the store with
reflection on, how the lesson it wrote fared: its tries and ledger energy after the sessions
that followed, and after a run of failing sessions, whether it is still recalled.

    python bench/bench_reflect.py                 # 6 sessions per store, 4 failing ones after
    python bench/bench_reflect.py --sessions 10 --failing 6
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
from typing import Any

TASK = "run the unit tests of the parser package"


def _hook(store: str, payload: dict[str, Any]) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "evolog", "--store", store, "hook", "claude-code"],
        input=json.dumps(payload).encode(),
        capture_output=True,
        timeout=120,
        check=True,
        env={**os.environ, "EVOLOG_HOOK_LOCK_TIMEOUT": "20"},
    )
    return time.perf_counter() - start


def _call(tid: str, command: str, ok: bool) -> dict[str, Any]:
    response = (
        {"stdout": "5 passed", "exit_code": 0}
        if ok
        else {"stderr": "ModuleNotFoundError: No module named 'lark'", "exit_code": 1}
    )
    return {"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": tid,
            "tool_input": {"command": command}, "tool_response": response}  # fmt: skip


def _session(store: str, sid: str, fix: bool) -> float:
    """One session; the wall time of its Stop process."""
    base = {"session_id": sid, "cwd": "/src/proj"}
    _hook(store, {**base, "hook_event_name": "UserPromptSubmit", "prompt": TASK})
    _hook(store, {**base, **_call("t1", "pytest tests/parser", False)})
    if fix:
        _hook(store, {**base, **_call("t2", "uv run pytest tests/parser", True)})
    return _hook(store, {**base, "hook_event_name": "Stop"})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=6, help="overcome sessions per store")
    ap.add_argument("--failing", type=int, default=4, help="failing sessions afterwards")
    args = ap.parse_args()
    from evolog import Memory

    root = tempfile.mkdtemp(prefix="evolog-bench-reflect-")
    stores = {}
    for mode in ("off", "on"):
        store = os.path.join(root, mode)
        with Memory(store) as mem:
            mem.remember("backbone", "The user prefers short answers.")
        if mode == "on":
            with open(os.path.join(store, "memory.json"), "w") as f:
                json.dump({"hook": {"reflect_lessons": True}}, f)
        stops = [_session(store, f"{mode}{n}", True) for n in range(args.sessions)]
        stores[mode] = store
        ms = sorted(s * 1000 for s in stops)
        print(
            f"reflection {mode:3}: Stop median {statistics.median(ms):.0f} ms "
            f"(min {ms[0]:.0f}, max {ms[-1]:.0f}) over {len(ms)} sessions"
        )
    store = stores["on"]
    with Memory(store) as mem:
        mem.recall(TASK, record=False)  # brings the item index to the head
        lessons = [i for i in mem._items().fold.state.items.values() if i.kind == "lesson"]
        for item in lessons:
            entry = mem.ledger().entry(item.id)
            print(f"lesson {item.id}: tries {item.tries}, energy {entry.energy:.3f}"
                  if entry else f"lesson {item.id}: not in the ledger")  # fmt: skip
    for n in range(args.failing):
        _session(store, f"fail{n}", False)
    with Memory(store) as mem:
        for item in lessons:
            entry = mem.ledger().entry(item.id)
            shown = item.id in [i.id for i in mem.recall(TASK, record=False).items]  # refreshes
            again = mem._items().fold.state.items[item.id]
            print(f"after {args.failing} failing sessions: tries {again.tries}, "
                  f"alive {entry.alive if entry else None}, recalled {shown}")  # fmt: skip


if __name__ == "__main__":
    main()
