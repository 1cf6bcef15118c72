"""The hook's recall on held-out domains, through the hook's own code: does it inject
memories a task is not about, and does it find the ones it is about?

The same sets and halves as bench/bench_router_holdout.py: each half's traces are dreamed
into a store, and every related, near and unrelated task of the half goes through the
``UserPromptSubmit`` injection of the Claude Code hook (``evolog.hook._hooks._inject``: the
attempt it opens, ``for_prompt`` under the store's ``memory.json``, the attempt line). Nothing
is fitted here: since recall's strategy is route's (``evolog._recall.routed_strategy``), the
rule deciding is the router's shipped one for the encoder, so every half is held out for a
rule fitted elsewhere (wordllama's on set A pooled, minilm's on set A's first split; see
bench/RESULTS.md), and set A's figures are in-sample for both.

    .venv/bin/python bench/bench_recall_holdout.py [--splits 5] [--set DIR ...]
        [--embedder wordllama|minilm] [--rule FLOOR,MARGIN,LEXICAL]

``--embedder minilm`` makes the strong encoder the process's own (``prefer_strong``, as the
worker does); ``--rule`` replaces the encoder's applicability rule for the run (to measure a
candidate rule on the hook's path; summary margin on, radius 0.4).

A related task counts when a strategy of its domain is among the block's first 3 items (and,
stricter, when the first item is); an unrelated one when anything is injected. Per related
block: characters as injected, strategy items and strategy lines (``- Strategy [``), those
showing their evidence (``worked N of M
tries``), and duplicates (items beyond the first whose steps are the same under the
near-match rule of projections.memory._steps, or whose text repeats one shown before).

Prints one line per held-out half and a summary per set: mean over halves, and the rates at
the issue's mix of unrelated kinds (:data:`bench.bench_router_holdout.MIX`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evolog.advice.routing._applicability import DEFAULT_RULES, ApplicabilityRule
from evolog.dream._cycle import dream
from evolog.eventlog import EventLog
from evolog.projections.graph._cache import graph_views
from evolog.projections.graph._embed import Embedder, get_embedder, prefer_strong
from evolog.projections.memory import STRATEGY, ItemIndex
from evolog.projections.memory._steps import same_steps

from bench.bench_router import strategy_events
from bench.bench_router_holdout import HOLDOUT, MIX, domains_of, half_tasks, halves, load_holdout
from evolog.hook._hooks import _inject, _open, _State

EVIDENCE = re.compile(r"worked \d+ of \d+ tries")
"""What a strategy line shows as its evidence (advice.recall._block.evidence)."""


def choose_embedder(name: str) -> Embedder:
    """The encoder the hook would run with: the lean default in a cold process, the strong
    one in a process that called ``prefer_strong`` (the worker)."""
    if os.environ.get("EVOLOG_EMBEDDER"):
        raise SystemExit("unset EVOLOG_EMBEDDER: the bench chooses the encoder (--embedder)")
    if name == "minilm":
        if prefer_strong() is None:
            raise SystemExit("minilm: the strong encoder does not load (evolog[encoder])")
        return get_embedder()
    return get_embedder(name)


def build_store(
    path: str, domains: list[dict[str, Any]], embedder: Embedder, copies: int = 1
) -> Any:
    """A store of every trace of ``domains`` (``copies`` runs each), dreamed; its graph."""
    with EventLog(path, create=True, durability="none") as log:
        for d in domains:
            for i, t in enumerate(d["traces"]):
                for k in range(copies):
                    steps = [REWORD[k % len(REWORD)](s) for s in t["steps"]]
                    trace = {"id": f"{d['name']}/{i}.{k}", "task": t["task"], "steps": steps}
                    log.append_many(strategy_events(trace))
        dream(log, embedder=embedder)
        return graph_views(log)


REWORD = (
    lambda s: s,
    lambda s: f"then {s}",
    lambda s: f"{s[:1].upper()}{s[1:]} again",
    lambda s: f"now {s.lower()}",
)
"""How the k-th copy of a trace words its steps (another run saying the same thing)."""


def hook_block(log: EventLog, task: str) -> tuple[str, list[str]]:
    """What the hook's ``UserPromptSubmit`` injects for ``task``: the text and the item ids
    in the block's order (both empty when nothing is injected)."""
    st = _State()
    events = [_open(st, task, {"agent": "claude-code", "session": "bench"})]
    _, got = _inject(log, {"prompt": task}, st, events, time.monotonic() + 120.0)
    return got.text, list(got.supported)


def duplicates(items: list[Any]) -> int:
    """Items after the first of their approach (same steps) or their text."""
    seen: list[Any] = []
    out = 0
    for item in items:
        if any((item.steps and same_steps(item.steps, s.steps)) or item.text == s.text
               for s in seen):  # fmt: skip
            out += 1
        seen.append(item)
    return out


def block_figures(log: EventLog, text: str, ids: list[str]) -> dict[str, Any]:
    """Characters, strategy lines, those with evidence, and duplicates of one block."""
    index = ItemIndex(log.paths)
    with log.snapshot() as snap:
        state = index.refresh(snap, log).state
    items = [state.items[i] for i in ids if i in state.items]
    # The block's own mark of a strategy entry; its id may be shown shortened.
    lines = [ln for ln in text.splitlines() if ln.startswith("- Strategy [")]
    return {
        "chars": len(text),
        "strategy_items": sum(i.kind == STRATEGY for i in items),
        "strategy_lines": len(lines),
        "with_evidence": sum(bool(EVIDENCE.search(ln)) for ln in lines),
        "duplicates": duplicates(items),
        "items": len(ids),
    }


def collect(folder: Path, splits: int, embedder: Embedder) -> list[dict[str, Any]]:
    """Every task of every half through the hook, with what was injected."""
    domains, unrelated = load_holdout(folder)
    out = []
    for seed in range(splits):
        for half, (d, u) in enumerate(halves(domains, unrelated, seed)):
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "store")
                domain_of = domains_of(build_store(path, d, embedder))
                with EventLog(path, durability="none") as log:
                    for kind, task, want in half_tasks(d, u):
                        text, ids = hook_block(log, task)
                        row = {"seed": seed, "half": half, "kind": kind, "want": want,
                               "domains": [domain_of.get(i) for i in ids]}  # fmt: skip
                        if kind == "related" and text:
                            row["block"] = block_figures(log, text, ids)
                        out.append(row)
    return out


def rates(rows: list[dict[str, Any]]) -> dict[str, float]:
    related = [r for r in rows if r["kind"] == "related"]
    out = {
        "related_right_top3": sum(r["want"] in r["domains"][:3] for r in related) / len(related),
        "related_right_first": sum(r["domains"][:1] == [r["want"]] for r in related) / len(related),
        "related_injected": sum(bool(r["domains"]) for r in related) / len(related),
    }
    for kind in MIX:
        got = [r for r in rows if r["kind"] == kind]
        out[f"{kind}_injected"] = sum(bool(r["domains"]) for r in got) / max(1, len(got))
    out["unrelated_at_issue_mix"] = sum(w * out[f"{k}_injected"] for k, w in MIX.items())
    return out


def blocks(rows: list[dict[str, Any]]) -> dict[str, float]:
    got = [r["block"] for r in rows if "block" in r]
    lines = sum(b["strategy_lines"] for b in got)
    return {
        "related_blocks": len(got),
        "median_chars": statistics.median(b["chars"] for b in got) if got else 0,
        "max_chars": max((b["chars"] for b in got), default=0),
        "items_per_block": round(statistics.fmean(b["items"] for b in got), 2) if got else 0,
        "strategy_items": sum(b["strategy_items"] for b in got),
        "strategy_lines": lines,
        "strategy_lines_with_evidence": sum(b["with_evidence"] for b in got),
        "blocks_with_duplicate": sum(b["duplicates"] > 0 for b in got),
        "duplicates_per_block": round(statistics.fmean(b["duplicates"] for b in got), 3)
        if got
        else 0,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--splits", type=int, default=5)
    p.add_argument("--set", dest="sets", action="append", type=Path, default=[])
    p.add_argument("--embedder", choices=["wordllama", "minilm"], default="wordllama")
    p.add_argument("--rule", help="FLOOR,MARGIN,LEXICAL: the encoder's rule for this run")
    args = p.parse_args(argv)
    embedder = choose_embedder(args.embedder)
    if args.rule:
        floor, margin, lexical = (float(x) for x in args.rule.split(","))
        rules: Any = DEFAULT_RULES  # a bench may try a rule in its own process
        rules[embedder.name] = ApplicabilityRule(floor, margin, 0.4, lexical, True)
    for folder in args.sets or [HOLDOUT]:
        rows = collect(folder, args.splits, embedder)
        parts = sorted({(r["seed"], r["half"]) for r in rows})
        per = []
        for s, h in parts:
            got = [r for r in rows if (r["seed"], r["half"]) == (s, h)]
            per.append(rates(got))
            figures = {k: round(100 * v, 1) for k, v in per[-1].items()}
            print(json.dumps({"set": folder.name, "split": s, "half": h, **figures}), flush=True)
        summary = {k: round(100 * statistics.fmean(x[k] for x in per), 1) for k in per[0]}
        print(json.dumps({
            "set": folder.name, "encoder": embedder.name, "splits": args.splits,
            "rule": str(DEFAULT_RULES.get(embedder.name)), "mean_over_halves": summary,
            "blocks": blocks(rows),
        }), flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
