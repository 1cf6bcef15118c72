"""Heuristic dream quality (issue 17.6): constraint precision and confidence calibration.

    python bench/bench_dream_quality.py --seeds 20

**Constraints.** tests/data/dream_labelled_traces.json: 42 traces of agent work (41 failed)
written for this, each labelled with the steps that were the mistake (or none: the approach
as a whole failed). The 30 ``design`` traces were looked at while writing the rule; the 12
``heldout`` ones were written after it was fixed and never used to change it. A constraint
is right when the step it tells to avoid is labelled, or when it blames the approach and no
step is labelled. ``old`` is the rule before issue 17.6
(one constraint per failed step, naming that step); ``new`` is ``blamed_steps``.

**Confidence.** A simulated history per seed: 100 approaches with a true success rate
``p ~ U(0.05, 0.95)``, each tried 1-5 times (outcome ~ Bernoulli(p), score U(0.6, 1) after a
success and U(0, 0.4) after a failure, as agents report them); one node per try, merged
into the first as consolidation does (fidelity 1). Reported: mean |confidence - p| and the
Brier score of the confidence against a fresh try, old rule (confidence (0.8|0.3 + score)/2,
merges max + 0.1 or - 0.1) and new (Laplace per trace, merges pool counts), per-seed
differences with a 95% interval, and the confidence given one lucky success.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
from evolog.dream import Trace, TraceStep
from evolog.dream._heuristic import blamed_steps, confidence_of
from evolog.dream.isa._vm import merged_confidence

LABELLED = Path(__file__).parent.parent / "tests" / "data" / "dream_labelled_traces.json"
T_975 = {19: 2.093, 23: 2.069, 29: 2.045, 39: 2.023, 49: 2.010}


def constraint_precision() -> dict[str, Any]:
    data = json.loads(LABELLED.read_text())
    out: dict[str, Any] = {}
    for rule, split in ((r, s) for s in ("design", "heldout") for r in ("old", "new")):
        right = total = found = causes = 0
        for t in data["traces"]:
            if t["status"] != "failed" or t["split"] != split:
                continue
            steps = tuple(
                TraceStep(
                    index=i, action=s["action"], tool=s["tool"], ok=s["ok"], error=s.get("error")
                )
                for i, s in enumerate(t["steps"])
            )
            if rule == "old":
                blamed = [s.index for s in steps if s.failed]
            else:
                blamed = [c.index for c, _ in blamed_steps(steps)]
            verdicts = [i in t["cause"] for i in blamed] if blamed else [t["cause"] == []]
            right, total = right + sum(verdicts), total + len(verdicts)
            causes += len(t["cause"])
            found += len(set(blamed) & set(t["cause"]))
        out[f"{split}_{rule}"] = {
            "constraints": total,
            "right": right,
            "precision": right / total,
            "labelled_causes_named": f"{found}/{causes}",
        }
    return out


def _old_confidence(succeeded: bool, score: float) -> float:
    return round(((0.8 if succeeded else 0.3) + score) / 2, 3)


def _old_merge(keep: float, merged: float) -> float:
    return min(1.0, max(keep, merged) + 0.1) if merged >= 0.5 else max(0.0, keep - 0.1)


def calibration(seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    err = {"old": [], "new": []}
    brier = {"old": [], "new": []}
    lucky: list[float] = []
    for _ in range(100):
        p = float(rng.uniform(0.05, 0.95))
        tries = int(rng.integers(1, 6))
        wins = rng.random(tries) < p
        scores = np.where(wins, rng.uniform(0.6, 1.0, tries), rng.uniform(0.0, 0.4, tries))
        old = new = 0.0
        for i, (won, score) in enumerate(zip(wins, scores, strict=True)):
            trace = Trace(id=f"t{i}", status="success" if won else "failed", score=float(score))
            o, c = _old_confidence(bool(won), float(score)), confidence_of(trace)
            old = o if i == 0 else _old_merge(old, o)
            new = c if i == 0 else merged_confidence(new, i, c, 1, 1.0)
        if tries == 1 and wins[0]:
            lucky.append(p)
        for name, conf in (("old", old), ("new", new)):
            err[name].append(abs(conf - p))
            brier[name].append((conf - p) ** 2 + p * (1 - p))  # expected, over a fresh try
    return {
        "mae_old": float(np.mean(err["old"])),
        "mae_new": float(np.mean(err["new"])),
        "brier_old": float(np.mean(brier["old"])),
        "brier_new": float(np.mean(brier["new"])),
        "lucky_p_sum": float(np.sum(lucky)),
        "lucky_n": float(len(lucky)),
    }


def interval(d: np.ndarray) -> list[float]:
    half = T_975.get(len(d) - 1, 1.96) * d.std(ddof=1) / math.sqrt(len(d))
    return [round(float(d.mean() - half), 4), round(float(d.mean() + half), 4)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", type=int, default=20)
    args = ap.parse_args()
    runs = [calibration(seed) for seed in range(args.seeds)]
    col = {k: np.asarray([r[k] for r in runs]) for k in runs[0]}
    lucky = Trace(id="t", status="success", score=0.9)
    summary = {
        "constraints": constraint_precision(),
        "calibration": {
            "seeds": args.seeds,
            "mae_old": float(col["mae_old"].mean()),
            "mae_new": float(col["mae_new"].mean()),
            "mae_new_minus_old_95": interval(col["mae_new"] - col["mae_old"]),
            "brier_old": float(col["brier_old"].mean()),
            "brier_new": float(col["brier_new"].mean()),
            "brier_new_minus_old_95": interval(col["brier_new"] - col["brier_old"]),
            "one_success_true_rate": float(col["lucky_p_sum"].sum() / col["lucky_n"].sum()),
            "one_success_confidence_old": _old_confidence(True, 0.9),
            "one_success_confidence_new": confidence_of(lucky),
        },
    }
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
