"""The closed loop: a simulated agent life with memory recalled, followed, credited.

    python bench/bench_loop.py --seeds 20 --episodes 600 --plot bench/loop_success.png

The world: 10 task families (deploying, flaky tests, migrations, ...), each with task
templates, four strategies and a hidden right one; the others are tempting (an agent with no
memory picks among them at random). Every ``--drift`` episodes the right strategy of half
the families changes. A fifth of the tasks are unrelated to every family (everyday and
generic software chores that share words with them). An episode: the arm injects memory
for the task; the agent follows the first injected item that names a strategy of the task's
kind with probability ``--follow`` (an agent ignores a memory about another kind of task),
else explores; the outcome is sampled (right strategy: 0.9, wrong: 0.1). After a success the
agent writes a note "To <task>: use <strategy>." into the family's branch.

Arms (every arm sees the same tasks and random numbers):

* ``none``: no memory; ``last_n``: the last 5 notes written, whatever the task;
* ``living_memory``: the reference rules of seed 004 (bench/_living_memory.py);
* ``recall``: evolog ``remember``/``recall`` (recall events recorded, no attribution);
* ``recall_ledger``: the full loop: the attempt names the followed item (``decided_by``)
  and the other injected ones (``supported_by``), the outcome credits them (delta +-1, ACE
  counters, the survival ledger with a tick every 20 episodes), dead items are not
  recalled, and when the agent explores it asks gene advice (strategies as genes).
* ``recall_ledger_evolve``: the full loop, the attempt also records its step ("use
  <strategy>", failed or not), and every ``--evolve-every`` episodes (a session's end)
  ``--pipeline`` (``ace >> reasoning_bank >> reme``) runs over the store with the default
  embedder and the offline heuristics (ACE retires the items whose harmful share exceeds 0.5;
  ReasoningBank and ReMe add an entry and a pattern per new attempt, deduplicated).

An injected item that warns against a strategy (an evolved pitfall: "Failed: ..." or
"Avoid: ...") is not followed: the agent leaves that strategy out when it explores. Only
evolved entries are written that way, so the other arms are unaffected.

``--paraphrase`` words the family prompts with bench/paraphrase_prompts.json (symptoms,
pasted errors, terse prompts, typos) while the notes keep the templates above: recall across
wordings. Each arm's ``this_minus_none`` is its per-seed paired difference in success
against ``none`` with a 95 % paired bootstrap interval over seeds.

Reported per arm: success rate on family tasks per window of episodes, overall success,
tokens injected per task (characters / 4), how often anything was injected for an
unrelated task; 95% intervals over seeds, and per-seed paired differences against
``recall_ledger``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import shutil
import sys
import tempfile
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _living_memory import LivingMemory

ARMS = ("none", "last_n", "living_memory", "recall", "recall_ledger", "recall_ledger_evolve")
LEDGER_ARMS = ("recall_ledger", "recall_ledger_evolve")
PIPELINE = "ace >> reasoning_bank >> reme"
PITFALL = re.compile(r"(?m)^(?:Failed|Avoid): ")
FAMILIES: dict[str, tuple[list[str], list[str]]] = {
    "deploy": (
        [
            "deploy the {x} service to production",
            "roll out a new release of the {x} service",
            "ship the {x} service build to the cluster",
        ],
        ["bluegreen", "canary", "rolling", "recreate"],
    ),
    "flaky": (
        [
            "fix the flaky {x} integration test",
            "the {x} test fails randomly in ci",
            "stabilise the intermittent {x} test failure",
        ],
        ["retry", "quarantine", "mockclock", "serialize"],
    ),
    "migration": (
        [
            "run the {x} database schema migration",
            "the {x} migration hangs on a table lock",
            "apply the pending {x} schema change",
        ],
        ["lockless", "batched", "offline", "shadowtable"],
    ),
    "memory": (
        [
            "the {x} worker leaks memory over time",
            "find the memory leak in the {x} process",
            "the {x} daemon runs out of memory",
        ],
        ["heapdump", "tracemalloc", "restartcron", "poolcap"],
    ),
    "dependency": (
        [
            "the {x} build breaks after a dependency upgrade",
            "pin the {x} package versions",
            "resolve the {x} dependency conflict",
        ],
        ["lockfile", "vendoring", "downgrade", "constraints"],
    ),
    "latency": (
        [
            "the {x} endpoint is slow under load",
            "reduce the p99 latency of the {x} api",
            "the {x} api responses take seconds",
        ],
        ["cachelayer", "indexing", "batching", "asyncio"],
    ),
    "auth": (
        [
            "users cannot log in to the {x} portal",
            "the {x} oauth token refresh fails",
            "single sign on breaks for the {x} app",
        ],
        ["clockskew", "rotatekeys", "cookiesame", "scopefix"],
    ),
    "docker": (
        [
            "the {x} docker image is too large",
            "the {x} container build is slow",
            "shrink the {x} container image",
        ],
        ["multistage", "distroless", "layercache", "slimbase"],
    ),
    "logging": (
        [
            "the {x} logs are missing request ids",
            "structured logging for the {x} job",
            "the {x} log volume is too high",
        ],
        ["contextvar", "jsonlogs", "sampling", "loglevels"],
    ),
    "queue": (
        [
            "the {x} queue consumers fall behind",
            "messages are lost in the {x} queue",
            "the {x} queue redelivers duplicates",
        ],
        ["prefetch", "ackmode", "idempotency", "partitions"],
    ),
}
NAMES = [
    "payments",
    "billing",
    "search",
    "checkout",
    "profile",
    "inventory",
    "reports",
    "gateway",
    "notifications",
    "analytics",
]
UNRELATED = [
    "write a birthday card message for the support team",
    "plan a weekend trip to the coast",
    "bake bread at home",
    "choose a laptop for university",
    "explain how earthquakes happen",
    "implement a trie for prefix autocomplete",
    "write a function that reverses a linked list",
    "add a progress bar to the command line tool",
    "convert roman numerals to integers",
    "write docstrings for the public api",
    "rename variables to follow the naming convention",
    "recommend a movie for family night",
    "train for a half marathon",
    "write a tutorial about recursion for beginners",
    "implement quicksort in rust",
    "draw a class diagram of the domain model",
    "explain the service worker lifecycle in a browser",
    "write a cover letter for a job at the test kitchen",
]
PARAPHRASES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "paraphrase_prompts.json")
T_975 = {4: 2.776, 9: 2.262, 19: 2.093, 29: 2.045, 39: 2.023}


def _t(n: int) -> float:
    return T_975.get(n - 1, 1.96 if n > 40 else 2.0)


def load_paraphrases(path: str) -> dict[str, list[str]]:
    """The paraphrased templates per family (bench/paraphrase_prompts.json), checked."""
    with open(path, encoding="utf-8") as f:
        families = json.load(f)["families"]
    if sorted(families) != sorted(FAMILIES):
        got = sorted(families)
        raise SystemExit(f"{path}: expected the families {sorted(FAMILIES)}; got {got}")
    for family, templates in families.items():
        for t in templates:
            if t.count("{x}") != 1:
                raise SystemExit(f"{path}: {family}: expected one {{x}} per template; got {t!r}")
    return {k: list(v) for k, v in families.items()}


class World:
    """Tasks, hidden right strategies and their drift, all from one seed.

    With ``paraphrases`` a family task is worded by one of them (the prompt the agent gets
    and recall sees) while what the agent writes down afterwards is still the bench's own
    template for the same job: memory written in one wording, asked for in another. The
    paraphrases are drawn from a generator of their own, so the world (tasks' families,
    names, drift, random draws) is the same with and without them."""

    def __init__(
        self,
        seed: int,
        episodes: int,
        drift: int,
        unrelated: float,
        paraphrases: dict[str, list[str]] | None = None,
    ) -> None:
        rng = random.Random(seed)
        wording = random.Random(f"paraphrase-{seed}")
        self.right = {f: rng.randrange(4) for f in FAMILIES}
        self.tasks: list[tuple[str | None, str]] = []
        self.prompts: list[str] = []
        self.rights: list[dict[str, int]] = []
        fams = sorted(FAMILIES)
        for ep in range(episodes):
            if ep and ep % drift == 0:
                for f in rng.sample(fams, len(fams) // 2):
                    self.right[f] = (self.right[f] + rng.randrange(1, 4)) % 4
            if rng.random() < unrelated:
                self.tasks.append((None, rng.choice(UNRELATED)))
                self.prompts.append(self.tasks[-1][1])
            else:
                f = rng.choice(fams)
                template = rng.choice(FAMILIES[f][0])
                name = rng.choice(NAMES)
                self.tasks.append((f, template.format(x=name)))
                said = wording.choice(paraphrases[f]) if paraphrases else template
                self.prompts.append(said.format(x=name))
            self.rights.append(dict(self.right))
        self.draws = [(rng.random(), rng.random(), rng.randrange(4)) for _ in range(episodes)]


class Arm:
    """One memory arm: ``inject(task)`` -> texts; ``learn(...)`` after the outcome."""

    def __init__(
        self, name: str, root: str, evolve_every: int = 50, pipeline: str = PIPELINE
    ) -> None:
        self.name = name
        self.evolve_every = evolve_every
        self.pipeline = pipeline
        self.evolved: list[dict[str, int]] = []
        self.notes: list[str] = []
        self.lm = LivingMemory() if name == "living_memory" else None
        self.mem: Any = None
        self.recalled: list[Any] = []
        if name in ("recall", *LEDGER_ARMS):
            from evolog import Memory

            self.mem = Memory(os.path.join(root, name), durability="none")

    def inject(self, task: str, action_id: str) -> list[tuple[str, str]]:
        """(item id, text) injected for the task, best first."""
        if self.name == "last_n":
            return [(str(i), t) for i, t in enumerate(self.notes[-5:][::-1])]
        if self.lm is not None:
            return [("", t) for t in self.lm.recall(task)]
        if self.mem is not None:
            res = self.mem.recall(task, action_id=action_id, survival=self.name in LEDGER_ARMS)
            self.recalled = res.items
            return [(i.id, i.text) for i in res.items]
        return []

    def advise(self, family: str) -> tuple[str | None, set[str]]:
        if self.name not in LEDGER_ARMS:
            return None, set()
        genes = [{"type": "Gene", "id": s} for s in FAMILIES[family][1]]
        a = self.mem.advise([f"family:{family}"], genes)
        return a.preferred_gene_id, set(a.banned_gene_ids)

    def learn(
        self,
        family: str,
        task: str,
        strategy: str,
        ok: bool,
        followed: str | None,
        injected: list[str],
        action_id: str,
        episode: int,
    ) -> None:
        note = f"To {task}: use {strategy}."
        if self.name in LEDGER_ARMS:
            from evolog.eventlog import Attempt, Event, Outcome, Step

            others = [i for i in injected if i and i != followed]
            prov = {"decided_by": [followed] if followed else [], "supported_by": others}
            events: list[Event] = [
                Attempt(
                    id=action_id,
                    action_id=action_id,
                    task=task,
                    gene=strategy,
                    signals=[f"family:{family}"],
                    **prov,
                )
            ]
            if self.name == "recall_ledger_evolve":
                events.append(Step(action_id=action_id, index=0, action=f"use {strategy}",
                                   ok=ok, error=None if ok else "the task failed"))  # fmt: skip
            events.append(
                Outcome(
                    action_id=action_id,
                    status="success" if ok else "failed",
                    delta=1.0 if ok else -1.0,
                    gene=strategy,
                    **prov,
                )
            )
            self.mem.append_many(events)
            if episode % 20 == 19:
                self.mem.tick()
        if not ok:
            return
        if self.name == "last_n":
            self.notes.append(note)
        elif self.lm is not None:
            self.lm.remember(family, note)
        elif self.mem is not None:
            self.mem.remember(family, note)

    def end_of_session(self, episode: int) -> None:
        """The evolution pipeline, every ``evolve_every`` episodes (evolve arm only)."""
        if self.name != "recall_ledger_evolve" or episode % self.evolve_every:
            return
        report = self.mem.evolve(self.pipeline)
        self.evolved.append(
            {
                "written": len(report.written),
                "retired": len(report.retired),
                "items": report.items_after,
            }
        )

    def close(self) -> None:
        if self.mem is not None:
            self.mem.close()


def strategy_in(text: str, family: str) -> str | None:
    words = set(text.lower().replace(".", " ").replace(":", " ").split())
    for s in FAMILIES[family][1]:
        if s in words:
            return s
    return None


def run_arm(
    name: str,
    world: World,
    follow: float,
    window: int,
    evolve_every: int = 50,
    pipeline: str = PIPELINE,
) -> dict[str, Any]:
    root = tempfile.mkdtemp(prefix=f"evolog-loop-{name}-")
    arm = Arm(name, root, evolve_every, pipeline)
    wins: list[list[int]] = []
    chars: list[int] = []
    unrelated_injected = unrelated = 0
    try:
        for ep, (family, task) in enumerate(world.tasks):
            if ep:
                arm.end_of_session(ep)
            action_id = f"ep{ep}"
            injected = arm.inject(world.prompts[ep], action_id)
            chars.append(sum(len(t) for _, t in injected))
            if family is None:
                unrelated += 1
                unrelated_injected += bool(injected)
                continue
            u_follow, u_ok, pick = world.draws[ep]
            strategies = FAMILIES[family][1]
            followed, choice = None, None
            avoided: set[str] = set()
            for item_id, text in injected:
                s = strategy_in(text, family)
                if s is not None and PITFALL.search(text):
                    avoided.add(s)  # a warning, not advice to follow
                elif s is not None:
                    if u_follow < follow:
                        followed, choice = item_id, s
                    break
            if choice is None:
                preferred, banned = arm.advise(family)
                banned = banned | avoided
                allowed = [s for s in strategies if s not in banned] or list(strategies)
                choice = preferred if preferred in allowed else allowed[pick % len(allowed)]
            right = strategies[world.rights[ep][family]]
            ok = u_ok < (0.9 if choice == right else 0.1)
            arm.learn(family, task, choice, ok, followed, [i for i, _ in injected], action_id, ep)
            while len(wins) <= ep // window:
                wins.append([])
            wins[ep // window].append(int(ok))
    finally:
        arm.close()
        shutil.rmtree(root, ignore_errors=True)
    related = [x for w in wins for x in w]
    return {
        "success": sum(related) / max(len(related), 1),
        "windows": [sum(w) / len(w) if w else float("nan") for w in wins],
        "tokens_per_task": sum(chars) / max(len(chars), 1) / 4,
        "unrelated_injected": unrelated_injected / max(unrelated, 1),
        "evolved": arm.evolved,
    }


def interval(values: list[float]) -> dict[str, float]:
    n = len(values)
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    half = _t(n) * sd / math.sqrt(n) if n > 1 else float("nan")
    return {"mean": round(mean, 4), "lo": round(mean - half, 4), "hi": round(mean + half, 4)}


def paired_bootstrap(diffs: list[float], resamples: int, seed: int = 0) -> dict[str, float]:
    """Mean of per-seed paired differences with a 95 % percentile bootstrap interval
    (seeds resampled with replacement; both arms of a seed saw the same world)."""
    rng = random.Random(seed)
    n = len(diffs)
    means = sorted(sum(rng.choices(diffs, k=n)) / n for _ in range(resamples))
    lo, hi = means[int(0.025 * resamples)], means[min(resamples - 1, int(0.975 * resamples))]
    return {"mean": round(sum(diffs) / n, 4), "lo": round(lo, 4), "hi": round(hi, 4), "n": n}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--episodes", type=int, default=600)
    p.add_argument("--drift", type=int, default=200)
    p.add_argument("--window", type=int, default=50)
    p.add_argument("--follow", type=float, default=0.8)
    p.add_argument("--unrelated", type=float, default=0.2)
    p.add_argument("--arms", default=",".join(ARMS))
    p.add_argument("--evolve-every", type=int, default=50, help="episodes per session")
    p.add_argument("--pipeline", default=PIPELINE, help="what the evolve arm runs")
    p.add_argument("--plot", help="write a PNG of success per window")
    p.add_argument("--json", help="write the results here")
    p.add_argument(
        "--paraphrase",
        nargs="?",
        const=PARAPHRASES,
        metavar="JSON",
        help="word family prompts with these paraphrases (default file: "
        "bench/paraphrase_prompts.json); notes are still written from the own templates",
    )
    p.add_argument("--resamples", type=int, default=10000, help="paired bootstrap resamples")
    args = p.parse_args(argv)
    arms = [a for a in args.arms.split(",") if a]
    paraphrases = load_paraphrases(args.paraphrase) if args.paraphrase else None
    runs: dict[str, list[dict[str, Any]]] = {a: [] for a in arms}
    for seed in range(args.seeds):
        world = World(seed, args.episodes, args.drift, args.unrelated, paraphrases)
        for a in arms:
            runs[a].append(
                run_arm(a, world, args.follow, args.window, args.evolve_every, args.pipeline)
            )
        print(
            f"seed {seed}: " + "  ".join(f"{a} {runs[a][-1]['success']:.3f}" for a in arms),
            file=sys.stderr,
            flush=True,
        )
    summary: dict[str, Any] = {"params": vars(args), "arms": {}}
    for a in arms:
        rs = runs[a]
        summary["arms"][a] = {
            "success": interval([r["success"] for r in rs]),
            "tokens_per_task": interval([r["tokens_per_task"] for r in rs]),
            "unrelated_injected": interval([r["unrelated_injected"] for r in rs]),
            "windows": [
                interval([r["windows"][w] for r in rs]) for w in range(len(rs[0]["windows"]))
            ],
        }
        if "recall_ledger" in runs and a != "recall_ledger":
            diffs = [
                x["success"] - y["success"] for x, y in zip(runs["recall_ledger"], rs, strict=True)
            ]
            summary["arms"][a]["recall_ledger_minus_this"] = interval(diffs)
        if "none" in runs and a != "none":
            diffs = [x["success"] - y["success"] for x, y in zip(rs, runs["none"], strict=True)]
            summary["arms"][a]["this_minus_none"] = paired_bootstrap(diffs, args.resamples)
        runs_evolved = [e for r in rs for e in r["evolved"]]
        if runs_evolved:  # per pipeline run, over every run of every seed
            summary["arms"][a]["per_evolve_run"] = {
                k: interval([float(e[k]) for e in runs_evolved]) for k in runs_evolved[0]
            }
    text = json.dumps(summary, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    if args.plot:
        plot(summary, args.plot, args.window)
    return 0


def plot(summary: dict[str, Any], path: str, window: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for a, res in summary["arms"].items():
        ws = res["windows"]
        xs = [(i + 1) * window for i in range(len(ws))]
        ax.plot(xs, [w["mean"] for w in ws], label=a)
        ax.fill_between(xs, [w["lo"] for w in ws], [w["hi"] for w in ws], alpha=0.15)
    for x in range(
        summary["params"]["drift"], summary["params"]["episodes"], summary["params"]["drift"]
    ):
        ax.axvline(x, color="grey", linestyle=":", linewidth=0.8)
    ax.set_xlabel("episode")
    ax.set_ylabel(f"success rate per {window} episodes (family tasks)")
    ax.set_title(f"closed loop, {summary['params']['seeds']} seeds, 95% CI; dotted: drift")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    raise SystemExit(main())
