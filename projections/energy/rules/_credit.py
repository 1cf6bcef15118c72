"""One decision's credit: darwin's ``decide``, ``assign_credit`` and ``advance_lifecycle``.

Functions of the rules' state (docs/reference/ledger.md §3, §6): who may decide,
what each named entry is credited for a measured outcome, and the trust lifecycle after.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ._state import ALIVE

if TYPE_CHECKING:
    from ._host import Rules as LedgerRules

Applied = list[tuple[int, float, bool]]


def decide(
    rules: LedgerRules, dec: Sequence[int], sup: Sequence[int]
) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """Probationary deciders become supporters; None: every named entry is on probation,
    so the answer is withheld (no ticket, no credit, no graduation).

    Only the living can be on probation (a dead decider still splits the credit).
    """
    c = rules.state.cols
    prob, status = c["probation"], c["status"]
    barred = [prob[i] > 0 and status[i] == ALIVE for i in (*dec, *sup)]
    if not any(barred):
        return tuple(dec), tuple(sup)
    if all(barred):
        return None
    demoted = barred[: len(dec)]
    keep = tuple(d for d, b in zip(dec, demoted, strict=True) if not b)
    return keep, (*sup, *(d for d, b in zip(dec, demoted, strict=True) if b))


def credit(
    rules: LedgerRules, dec: Sequence[int], sup: Sequence[int], delta: float, seq: int
) -> set[int]:
    """Credit one measured outcome, then advance the lifecycle of those credited.

    ``c = gain * tanh(delta / scale)``: ``c / k`` to each of k deciders (a juvenile's
    reduced to the share), ``c * share`` to each supporter; with no decider ``c / n`` to
    each of n supporters (the share of it to one on probation). Returns the entries that
    took a loss (for the cause of a death at this settle).
    """
    cfg, c = rules.config, rules.state.cols
    amount = cfg.credit_gain * math.tanh(delta / cfg.resource_scale)
    if amount == 0.0:
        return set()
    prob, share = c["probation"], cfg.supporting_share
    applied: Applied = []
    if dec:
        each = amount / len(dec)
        for d in dec:
            young = c["status"][d] == ALIVE and c["juvenile"][d] > 0
            apply(rules, d, each * (share if young else 1.0), True, applied, seq)
        for s in sup:
            apply(rules, s, amount * share, False, applied, seq)
    elif sup:
        base = amount / len(sup)
        for s in sup:
            apply(rules, s, base * share if prob[s] > 0 else base, False, applied, seq)
    advance(rules, applied, delta, seq)
    hurt = -cfg.damage_epsilon
    return {i for i, a, _ in applied if a < hurt}


def apply(
    rules: LedgerRules, i: int, amount: float, decider: bool, applied: Applied, seq: int
) -> None:
    """One credit application: alive entries only, capped, no floor."""
    c = rules.state.cols
    if c["status"][i] != ALIVE:
        return
    e = float(c["energy"][i]) + amount
    cap = rules.config.max_energy
    c["energy"][i] = cap if e > cap else e
    c["uses"][i] += 1
    c["earned"][i] += amount
    c["last_used"][i] = rules.now
    if amount < -rules.config.damage_epsilon:
        c["damaged"][i] = True
    applied.append((i, amount, decider))
    rules.note(i, seq, "decided" if decider else "supported", amount)


def advance(rules: LedgerRules, applied: Applied, delta: float, seq: int) -> None:
    """Probation graduates on positive credits; juvenile deciders of a loss are denied."""
    c = rules.state.cols
    for i, amount, decider in applied:
        if c["probation"][i] > 0 and amount > 0:
            c["probation"][i] -= 1
        if c["juvenile"][i] > 0:
            if delta < 0 and decider:
                c["energy"][i] = 0.0
                c["juvenile"][i] = 0
                c["denied"][i] = True
                c["damaged"][i] = True
                rules.note(i, seq, "admission_denied")
            else:
                c["juvenile"][i] -= 1
