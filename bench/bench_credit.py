"""How many Claude Code tasks the hook credits as successes, against how many succeeded.

Replays a run of sessions through the real hook command (one process per payload, as Claude
Code runs it): tasks whose tool ran and passed, tasks whose only call was refused at the
permission prompt (a PreToolUse and nothing after it), tasks whose calls all failed, and
text-only turns; each session's prompt recalls one strategy node. Prints the outcomes by
status, the node's counted successes and failures, and its ledger energy.

    python bench/bench_credit.py            # 5 passed, 3 refused, 2 failed, 2 text-only
    python bench/bench_credit.py --passed 8 --refused 4 --failed 2 --text 2
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
from typing import Any


def _hook(store: str, payload: dict[str, Any]) -> None:
    subprocess.run(
        [sys.executable, "-m", "evolog", "--store", store, "hook", "claude-code"],
        input=json.dumps(payload).encode(),
        capture_output=True,
        timeout=120,
        check=True,
        # Recall's wall-clock bound is a share of this: on a loaded machine the default (2 s)
        # can cut it short, and a session then injects (and credits) nothing.
        env={**os.environ, "EVOLOG_HOOK_LOCK_TIMEOUT": "20"},
    )


def _session(store: str, sid: str, kind: str) -> None:
    base = {"session_id": sid, "cwd": "/src/proj"}
    prompt = "deploy the web service to production please"
    _hook(store, {**base, "hook_event_name": "UserPromptSubmit", "prompt": prompt})
    call = {"tool_name": "Bash", "tool_use_id": "t1", "tool_input": {"command": "./deploy.sh"}}
    if kind != "text":
        _hook(store, {**base, "hook_event_name": "PreToolUse", **call})
    if kind in ("passed", "failed"):
        response = (
            {"stdout": "done", "exit_code": 0}
            if kind == "passed"
            else {"stdout": "", "stderr": "Error: deploy failed", "exit_code": 1}
        )
        _hook(store, {**base, "hook_event_name": "PostToolUse", **call, "tool_response": response})
    _hook(store, {**base, "hook_event_name": "Stop", "stop_hook_active": False})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--passed", type=int, default=5)
    ap.add_argument("--refused", type=int, default=3)
    ap.add_argument("--failed", type=int, default=2)
    ap.add_argument("--text", type=int, default=2)
    args = ap.parse_args()

    from evolog.eventlog import Attempt, ChildStep, EventLog, Node, Outcome
    from evolog.projections.graph._memgraph import load_memgraph

    from evolog import Memory

    store = tempfile.mkdtemp(prefix="bench-credit-")
    with Memory(store) as mem:
        mem.append_many(
            [
                Node(cycle="c1", node="n-deploy", goal="deploy the web service to production",
                     summary="run the deploy script", confidence=0.8),
                ChildStep(cycle="c1", node="n-deploy", index=0, action="run ./deploy.sh"),
            ]
        )  # fmt: skip
        start = mem.ledger().entry("n-deploy")
    plan = (["passed"] * args.passed + ["refused"] * args.refused + ["failed"] * args.failed
            + ["text"] * args.text)  # fmt: skip
    for n, kind in enumerate(plan):
        _session(store, f"bench-{n}", kind)
    with EventLog(store) as log:
        evs = list(log.replay())
        statuses = collections.Counter(e.status for e in evs if isinstance(e, Outcome))
        injected = sum(1 for e in evs if isinstance(e, Attempt) and "n-deploy" in e.decided_by)
        wins, losses = load_memgraph(log).outcomes("n-deploy")
    with Memory(store) as mem:
        end = mem.ledger().entry("n-deploy")
    print(f"sessions: {len(plan)} ({args.passed} passed, {args.refused} refused at the "
          f"permission prompt, {args.failed} failed, {args.text} text-only)")  # fmt: skip
    print(f"sessions the node was injected into: {injected}")
    print("outcomes by status:", dict(sorted(statuses.items())))
    print(f"node n-deploy: {wins} successes, {losses} failures counted "
          f"(tasks that succeeded: {args.passed})")  # fmt: skip
    if start is not None and end is not None:
        print(f"ledger energy of n-deploy: {start.energy:.3f} -> {end.energy:.3f}")


if __name__ == "__main__":
    main()
