"""Dedup of written lessons: grouped cross-validation of the word-alignment rule.

On bench/dedup_pairs.txt and bench/dedup_pairs_b.txt (352 + 116 hand-written pairs in
88 + 29 groups: an anchor lesson, two rewordings, two near-misses), the rule of
``dream/evolve/_align.py`` (the pooled-vector prefilter, then the alignment score >= a
threshold) is fitted on some groups (the threshold maximising min(precision, recall), the
lowest of a 0.001 grid on a tie) and applied to the others. Folds are whole groups (an
anchor's rewordings never straddle the fit and the test): the even/odd halves both ways,
and 4 and 8 folds by group number modulo k. Printed per fold and pooled over the folds'
held-out pairs, for each shipped embedder.

``--fit`` prints the threshold fitted on all pairs (the constants of ``_align.THRESHOLDS``)
and what the strategies' dedups, as shipped, give on every pair with them.

    .venv/bin/python bench/bench_dedup_cv.py [--fit] [--embedders wordllama,hashing]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evolog.dream.evolve import EvolveItem
from evolog.dream.evolve._align import THRESHOLDS, Aligner
from evolog.dream.evolve._guard import contrary, may_merge
from evolog.dream.evolve._reasoning_bank import dedup as rb_dedup
from evolog.dream.evolve._reme import dedup as reme_dedup
from evolog.projections.graph._embed import get_embedder

from bench.bench_evolve import LabelledPair, load_labelled

PAIRS = (Path(__file__).with_name("dedup_pairs.txt"), Path(__file__).with_name("dedup_pairs_b.txt"))
"""Both hand-written sets: the second was first an independent test of a threshold fitted
on the first (bench/RESULTS.md); the shipped thresholds are fitted on both."""


def load_sets(paths: tuple[Path, ...] | list[Path]) -> list[LabelledPair]:
    """The pairs of several labelled files, their groups numbered on across files."""
    out: list[LabelledPair] = []
    for path in paths:
        base = 1 + max((p[0] for p in out), default=-1)
        out += [(base + g, *rest) for g, *rest in load_labelled(path)]
    return out


Row = dict[str, Any]


def features(pairs: list[LabelledPair], embedder: Any, whole: bool = False) -> list[Row]:
    """Per pair: its group, label, kind of near-miss, score and whether it passes the
    prefilter and the contrary-advice check (the lessons, or with ``whole`` the task and
    the lesson joined)."""
    texts = sorted({f"{e[0]} {e[1]}" if whole else e[1] for p in pairs for e in (p[4], p[5])})
    at = {t: k for k, t in enumerate(texts)}
    aligner = Aligner(texts, embedder)
    rows = []
    for group, dup, why, _, a, b in pairs:
        ka, kb = (at[f"{e[0]} {e[1]}" if whole else e[1]] for e in (a, b))
        rows.append({
            "group": group, "dup": dup, "why": why,
            "score": aligner.score(ka, kb),
            "near": bool(aligner.candidates(ka, [kb])) and not contrary(a[1], b[1]),
            "guard": may_merge(a[1], b[1]),
        })  # fmt: skip
    return rows


def decide(rows: list[Row], t: float, guarded: bool = False) -> list[bool]:
    return [r["near"] and r["score"] >= t and (r["guard"] or not guarded) for r in rows]


def measure(rows: list[Row], said: list[bool]) -> dict[str, Any]:
    tp = sum(1 for s, r in zip(said, rows, strict=True) if s and r["dup"])
    fp = sum(1 for s, r in zip(said, rows, strict=True) if s and not r["dup"])
    fn = sum(1 for s, r in zip(said, rows, strict=True) if not s and r["dup"])
    wrong = Counter(r["why"] for s, r in zip(said, rows, strict=True) if s and not r["dup"])
    return {
        "precision": round(tp / (tp + fp), 3) if tp + fp else None,
        "recall": round(tp / (tp + fn), 3) if tp + fn else None,
        "tp": tp, "fp": fp, "fn": fn, "false_merges": dict(sorted(wrong.items())),
    }  # fmt: skip


def fit(rows: list[Row], guarded: bool = False) -> float:
    def worst(t: float) -> float:
        m = measure(rows, decide(rows, t, guarded))
        return min(m["precision"] or 0.0, m["recall"] or 0.0)

    return max((k / 1000 for k in range(1001)), key=lambda t: (worst(t), -t))


def folds(scheme: str) -> list[tuple[str, Any]]:
    """(name, is-held-out(group)) per fold of ``scheme``."""
    if scheme == "halves":
        return [("fit even, test odd", lambda g: g % 2 == 1),
                ("fit odd, test even", lambda g: g % 2 == 0)]  # fmt: skip
    k = int(scheme.removesuffix("-fold"))
    return [(f"test groups = {i} mod {k}", lambda g, i=i, k=k: g % k == i) for i in range(k)]


def cross_validate(rows: list[Row], scheme: str, guarded: bool = False) -> dict[str, Any]:
    per, held, said = [], [], []
    for name, test in folds(scheme):
        t = fit([r for r in rows if not test(r["group"])], guarded)
        out = [r for r in rows if test(r["group"])]
        got = decide(out, t, guarded)
        per.append({"fold": name, "threshold": t, **measure(out, got)})
        held += out
        said += got
    ok = sum(1 for f in per if min(f["precision"] or 0, f["recall"] or 0) >= 0.9)
    worst = min(per, key=lambda f: min(f["precision"] or 0, f["recall"] or 0))
    return {"pooled": measure(held, said), "folds_at_goal": f"{ok}/{len(per)}", "worst": worst,
            "folds": per}  # fmt: skip


def shipped(pairs: list[LabelledPair], name: str) -> dict[str, Any]:
    """The strategies' dedups as shipped (default rule, fitted constant) on every pair."""
    embedder = get_embedder(name)
    out: dict[str, Any] = {}
    for strategy in ("reasoning_bank", "reme"):
        rows, said = [], []
        for _, dup, why, kind, (ta, la), (tb, lb) in pairs:
            both = ((ta, la), (tb, lb))
            if strategy == "reasoning_bank":
                rb = [EvolveItem(id=f"rb{k}", title=t, text=c, tags=("reasoning_bank",), seq=k)
                      for k, (t, c) in enumerate(both)]  # fmt: skip
                merged = len(rb_dedup(rb, 0.85, embedder)) == 1
            else:
                reme = [EvolveItem(id=f"re{k}", when_to_use=t, text=c, tags=("reme",),
                                   pattern=kind, seq=k)
                        for k, (t, c) in enumerate(both)]  # fmt: skip
                merged = len(reme_dedup(reme, 0.85, embedder)) == 1
            rows.append({"dup": dup, "why": why})
            said.append(merged)
        out[strategy] = measure(rows, said)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--labelled", default=",".join(map(str, PAIRS)), help="files, comma-separated")
    ap.add_argument("--embedders", default="wordllama,hashing")
    ap.add_argument("--fit", action="store_true", help="fit on all pairs, run the strategies")
    args = ap.parse_args()
    pairs = load_sets([Path(f) for f in args.labelled.split(",")])
    for name in args.embedders.split(","):
        embedder = get_embedder(name)
        rows = features(pairs, embedder)
        report: dict[str, Any] = {"embedder": embedder.name}
        if args.fit:
            t = fit(rows)
            report |= {"fitted_on_all": t, "on_all": measure(rows, decide(rows, t)),
                       "shipped_constant": THRESHOLDS.get(embedder.name),
                       "strategies_as_shipped": shipped(pairs, name)}  # fmt: skip
        else:
            for scheme in ("halves", "4-fold", "8-fold"):
                report[scheme] = cross_validate(rows, scheme)
            report["variants_pooled"] = {
                "guarded (the negation/steps guard as well)": {
                    s: cross_validate(rows, s, guarded=True)["pooled"] for s in ("halves", "8-fold")
                },
                "task and lesson joined": {
                    s: cross_validate(features(pairs, embedder, whole=True), s)["pooled"]
                    for s in ("halves", "8-fold")
                },
            }
        print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
