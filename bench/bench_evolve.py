"""Memory evolution: run time of ``ace >> reasoning_bank >> reme`` and dedup quality.

Run time: a store with N items (N/2 notes with feedback, N/2 traces of tasks drawn from 200
templates, one in four failed), one offline run (``--embedder``, heuristics), then a
check that the appended events replay to the items the pipeline returned.

Dedup quality, two labelled sets; each strategy's dedup rule is applied to each pair as it
would be to two entries of a run:

* ``--labelled`` (bench/dedup_pairs.txt): 352 pairs written by hand, realistic lessons
  reworded the way a model writing them twice would (duplicates) and near-misses on the
  same tool, the same task, the opposite advice or another object; the even groups tune the
  candidate rules' thresholds, the odd groups are held out, and then the other way round
  (cross-validation). Every candidate is also run behind the shipped guard (opposite
  instructions and other step sequences never merge).
* ``--pairs N``: generated from 20 task families (the same lesson word for word or with
  casing, punctuation, a filler word or one step reworded; near-misses the same template
  about another object or with other steps). The shipped rules were chosen on this set.

    .venv/bin/python bench/bench_evolve.py --sizes 200 [--pairs 300] [--labelled FILE]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import time
from collections import Counter
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evolog.dream.evolve import EvolveItem, apply, pipeline, stage
from evolog.dream.evolve._guard import may_merge
from evolog.dream.evolve._reasoning_bank import dedup as rb_dedup
from evolog.dream.evolve._reme import dedup as reme_dedup
from evolog.eventlog import Attempt, Event, Outcome, Step
from evolog.projections.graph._embed import get_embedder

from evolog import Memory

_VERBS = [
    "fix",
    "debug",
    "migrate",
    "secure",
    "document",
    "test",
    "deploy",
    "monitor",
    "refactor",
    "profile",
]
_OBJECTS = [
    "the login service",
    "the orders query",
    "the payment api",
    "the nightly backup",
    "the docker image",
    "the ci pipeline",
    "the react dashboard",
    "the search index",
    "the billing report",
    "the user table",
    "the tls certificate",
    "the message queue",
    "the cache layer",
    "the auth token",
    "the csv importer",
    "the email sender",
    "the metrics exporter",
    "the mobile layout",
    "the pdf export",
    "the rate limiter",
]
_ACTIONS = [
    "read the logs",
    "reproduce locally",
    "write a failing test",
    "inspect the config",
    "patch the code",
    "run the tests",
    "deploy to staging",
    "check the metrics",
    "roll back",
    "add an index",
    "bump the version",
    "clear the cache",
    "restart the service",
    "update the docs",
]


def _trace(rng: random.Random, n: int) -> list[Event]:
    task = f"{rng.choice(_VERBS)} {rng.choice(_OBJECTS)}"
    tid = f"t{n}"
    steps = rng.sample(_ACTIONS, rng.randint(3, 6))
    failed = rng.random() < 0.25
    events: list[Event] = [Attempt(id=tid, action_id=tid, task=task)]
    for i, action in enumerate(steps):
        bad = failed and i == len(steps) - 1
        events.append(Step(id=f"{tid}.{i}", action_id=tid, index=i, action=action, ok=not bad,
                           error="exit 1" if bad else None))  # fmt: skip
    events.append(Outcome(id=f"{tid}.o", action_id=tid, status="failed" if failed else "success"))
    return events


def _view(items: list[EvolveItem]) -> list[tuple[Any, ...]]:
    return sorted((i.id, i.branch, i.text, i.title, i.when_to_use, i.helpful, i.harmful)
                  for i in items)  # fmt: skip


def run_time(size: int, seed: int = 7, embedder_name: str = "hashing") -> dict[str, Any]:
    rng = random.Random(seed)
    embedder = get_embedder(embedder_name)
    with tempfile.TemporaryDirectory() as tmp, Memory(Path(tmp) / "mem", durability="batch") as mem:
        for n in range(size // 2):
            what = f"{rng.choice(_VERBS)} {rng.choice(_OBJECTS)} then {rng.choice(_ACTIONS)}"
            item = mem.remember(f"b{n % 8}", f"note {n}: {what}").item
            if rng.random() < 0.2:
                mem.feedback(item, rng.choice(("helpful", "harmful", "neutral")))
        events: list[Event] = []
        for n in range(size - size // 2):
            events += _trace(rng, n)
        mem.append_many(events)
        p = pipeline("ace >> reasoning_bank >> reme")
        items, context = stage(mem.log, embedder=embedder)
        expected = p.evolve(tuple(items), context)
        start, cpu = time.perf_counter(), time.process_time()
        report = apply(mem.log, p, embedder=embedder)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        replayed, _ = stage(mem.log, embedder=embedder)
        return {
            "size": size,
            "embedder": embedder.name,
            "seconds": round(seconds, 3),
            "cpu_seconds": round(cpu, 3),  # this process only: a proxy on a loaded machine
            "events": len(report.events),
            "items_after": report.items_after,
            "replay_equal": _view(replayed) == _view(expected),
        }


_FILLERS = ("then", "carefully", "first", "again")


def _reword(rng: random.Random, goal: str, steps: list[str]) -> tuple[str, list[str]]:
    words = goal.split()
    how = rng.randrange(5)
    if how == 4:  # the same lesson learnt twice, word for word
        return goal, steps
    if how == 0:
        goal = goal.capitalize() + "."
    elif how == 1:
        goal = " ".join([*words[:1], rng.choice(_FILLERS), *words[1:]])
    elif how == 2:
        steps = [s.replace("the ", "") for s in steps]
    else:
        k = rng.randrange(len(steps))
        steps = [*steps[:k], steps[k] + " " + rng.choice(_FILLERS), *steps[k + 1 :]]
    return goal, steps


def _entry(n: int, goal: str, steps: list[str]) -> tuple[EvolveItem, EvolveItem]:
    text = "Steps: " + "; ".join(steps)
    rb = EvolveItem(id=f"rb{n}", title=goal, description=f"A way that worked to {goal}",
                    text=text, tags=("reasoning_bank",), seq=n)  # fmt: skip
    reme = EvolveItem(id=f"re{n}", when_to_use=f"When the task is to {goal}",
                      text="Do: " + " -> ".join(steps), tags=("reme",), pattern="success",
                      seq=n)  # fmt: skip
    return rb, reme


def dedup_quality(pairs: int, seed: int = 11) -> dict[str, Any]:
    rng = random.Random(seed)
    embedder = get_embedder("hashing")
    labelled: list[tuple[bool, tuple[EvolveItem, EvolveItem], tuple[EvolveItem, EvolveItem]]] = []
    for n in range(pairs):
        goal = f"{rng.choice(_VERBS)} {rng.choice(_OBJECTS)}"
        steps = rng.sample(_ACTIONS, rng.randint(3, 5))
        duplicate = n % 2 == 0
        if duplicate:
            goal2, steps2 = _reword(rng, goal, steps)
        elif rng.random() < 0.5:  # same template, another object
            goal2 = goal.split(" ", 1)[0] + " " + rng.choice([o for o in _OBJECTS if o not in goal])
            steps2 = list(steps)
        else:  # same task, other steps
            goal2, steps2 = goal, rng.sample(_ACTIONS, len(steps))
        a, b = _entry(2 * n, goal, steps), _entry(2 * n + 1, goal2, steps2)
        labelled.append((duplicate, (a[0], b[0]), (a[1], b[1])))
    out: dict[str, Any] = {"pairs": pairs, "duplicates": sum(d for d, _, _ in labelled)}
    for name, which, merged in (
        ("reasoning_bank", 1, lambda x: len(rb_dedup(x, 0.85, embedder)) == 1),
        ("reasoning_bank_exact", 1, lambda x: len(rb_dedup(x, 0.85, None)) == 1),
        ("reme", 2, lambda x: len(reme_dedup(x, 0.85, embedder)) == 1),
    ):
        tp = fp = fn = 0
        for row in labelled:
            said = merged(list(row[which]))
            tp, fp, fn = (
                tp + (said and row[0]),
                fp + (said and not row[0]),
                fn + (not said and row[0]),
            )
        out[name] = {
            "precision": round(tp / (tp + fp), 3) if tp + fp else None,
            "recall": round(tp / (tp + fn), 3) if tp + fn else None,
        }
    return out


Entry = tuple[str, str]  # (task, lesson)
LabelledPair = tuple[int, bool, str, str, Entry, Entry]  # group, duplicate, why, kind, a, b
_WORD = re.compile(r"[a-z0-9']+")
_STOP = frozenset(
    re.findall(r"\w+", "a an the and or of to in on for with by is are was were be been it its")
    + re.findall(r"\w+", "this that then than so as at from into only do does did")
)


def load_labelled(path: Path) -> list[LabelledPair]:
    """The pairs of bench/dedup_pairs.txt (its header says the format)."""
    out: list[LabelledPair] = []
    group, kind, anchor = -1, "s", ("", "")
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        mark, _, rest = line.partition(" ")
        if mark == "=":
            kind, _, rest = rest.partition(" ")
        why = "paraphrase"
        if mark == "x":
            why, _, rest = rest.partition(" ")
        task, bar, lesson = rest.partition("|")
        if mark not in "=~x" or not bar or kind not in ("s", "f"):
            raise SystemExit(f"{path}:{n}: expected '= s|f TASK | LESSON', '~ ...' or 'x WHY ...'")
        entry = (task.strip(), lesson.strip())
        if mark == "=":
            group, anchor = group + 1, entry
        else:
            out.append((group, mark == "~", why, kind, anchor, entry))
    return out


def _tokens(text: str) -> list[str]:
    words = (w for w in _WORD.findall(text.lower()) if w not in _STOP)
    return sorted({w[:-1] if len(w) > 4 and w.endswith("s") else w for w in words})


def _scores(pair: LabelledPair, embedders: dict[str, Any]) -> dict[str, Any]:
    """What each rule (and each candidate rule) sees of one pair."""
    _, dup, why, kind, (ta, la), (tb, lb) = pair
    both = ((ta, la), (tb, lb))
    rb = [EvolveItem(id=f"rb{k}", title=t, text=c, tags=("reasoning_bank",), seq=k)
          for k, (t, c) in enumerate(both)]  # fmt: skip
    reme = [EvolveItem(id=f"re{k}", when_to_use=t, text=c, tags=("reme",), pattern=kind, seq=k)
            for k, (t, c) in enumerate(both)]  # fmt: skip
    out: dict[str, Any] = {"dup": dup, "why": why}
    out["reasoning_bank_exact"] = len(rb_dedup(rb, 0.85, None)) == 1
    out["reme_seed"] = len(reme_dedup(reme, 0.85, None, "seed")) == 1
    for name, e in embedders.items():
        out[f"reasoning_bank_seed_{name}"] = len(rb_dedup(rb, 0.85, e, "seed")) == 1
        out[f"reasoning_bank_{name}"] = len(rb_dedup(rb, 0.85, e)) == 1
        out[f"reme_{name}"] = len(reme_dedup(reme, 0.85, e)) == 1
        v = e.embed([la, lb])
        out[f"content_cosine_{name}"] = float(v[0] @ v[1])
    words = SequenceMatcher(None, _tokens(la), _tokens(lb), autojunk=False)
    out["content_words"] = words.ratio()
    if "wordllama" in embedders:
        out["mean_wordllama_words"] = (out["content_cosine_wordllama"] + words.ratio()) / 2
    out["guard"] = may_merge(la, lb)
    return out


def _pr(rows: list[dict[str, Any]], said: Any) -> dict[str, Any]:
    tp = sum(1 for r in rows if said(r) and r["dup"])
    fp = sum(1 for r in rows if said(r) and not r["dup"])
    fn = sum(1 for r in rows if not said(r) and r["dup"])
    return {
        "precision": round(tp / (tp + fp), 3) if tp + fp else None,
        "recall": round(tp / (tp + fn), 3) if tp + fn else None,
        "false_merges": dict(
            sorted(Counter(r["why"] for r in rows if said(r) and not r["dup"]).items())
        ),
    }


def _fit(tune: list[dict[str, Any]], held: list[dict[str, Any]], f: str, guarded: bool) -> Any:
    """The threshold on feature ``f`` that maximises min(precision, recall) on ``tune``
    (the lowest on a tie), and what it gives on both halves."""

    def rule(t: float) -> Any:
        return lambda r: r[f] >= t and (r["guard"] or not guarded)

    def score(t: float) -> float:
        m = _pr(tune, rule(t))
        return min(m["precision"] or 0.0, m["recall"] or 0.0)

    best = max((t / 100 for t in range(5, 100)), key=lambda t: (score(t), -t))
    return {"threshold": best, "tune": _pr(tune, rule(best)), "held_out": _pr(held, rule(best))}


def labelled_quality(path: Path, embedders: tuple[str, ...] = ("wordllama", "hashing")) -> Any:
    """Precision and recall of each rule on the even groups (tuning) and the odd (held out).

    The rules as shipped have nothing to tune; the candidate rules (a threshold on the
    cosine of the two lessons, or on SequenceMatcher over their sorted content words) take
    the threshold that maximises min(precision, recall) on the tuning half only.
    """
    pairs = load_labelled(path)
    found = {n: get_embedder(n) for n in embedders}
    rows = [(p[0] % 2, _scores(p, found)) for p in pairs]
    halves = {"tune": [r for h, r in rows if h == 0], "held_out": [r for h, r in rows if h == 1]}
    out: dict[str, Any] = {
        "pairs": len(pairs),
        "duplicates": sum(p[1] for p in pairs),
        "tune_pairs": len(halves["tune"]),
        "held_out_pairs": len(halves["held_out"]),
        "rules": {},
        "candidates": {},
    }
    shipped = ["reme_seed", "reasoning_bank_exact", *(f"reasoning_bank_seed_{n}" for n in found)]
    shipped += [f"{s}_{n}" for n in found for s in ("reasoning_bank", "reme")]
    for rule in shipped:
        out["rules"][rule] = {h: _pr(rs, lambda r, k=rule: r[k]) for h, rs in halves.items()}
    features = ["content_words", *(f"content_cosine_{n}" for n in found)]
    features += ["mean_wordllama_words"] if "wordllama" in found else []
    for feature in features:
        for guarded in (False, True):
            name = f"{feature}, guarded" if guarded else feature
            out["candidates"][name] = {
                "tune_even": _fit(halves["tune"], halves["held_out"], feature, guarded),
                "tune_odd": _fit(halves["held_out"], halves["tune"], feature, guarded),
            }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="200")
    ap.add_argument("--embedder", default="hashing", help="for the run time (hashing, wordllama)")
    ap.add_argument("--pairs", type=int, default=300, help="generated pairs (0: none)")
    ap.add_argument("--labelled", default=str(Path(__file__).with_name("dedup_pairs.txt")),
                    help="the hand-written labelled pairs ('': skip)")  # fmt: skip
    args = ap.parse_args()
    for size in (int(s) for s in args.sizes.split(",") if s):
        print(json.dumps(run_time(size, embedder_name=args.embedder)))
    if args.pairs:
        print(json.dumps(dedup_quality(args.pairs)))
    if args.labelled:
        print(json.dumps(labelled_quality(Path(args.labelled)), indent=1))


if __name__ == "__main__":
    main()
