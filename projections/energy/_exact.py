"""The exact paths of the batched replay: per-entry clamps, and the per-event loop.

Both run over plain Python floats (a numpy scalar access costs about 3x a list's) and give
the per-event rules' results bit for bit: the same additions, in the same order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ._read import Rows
from .rules._state import ALIVE, EXECUTED, STARVED

if TYPE_CHECKING:
    from .rules._rules import LedgerRules

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
OP_OPEN, OP_CREDIT, OP_CLOSE, OP_SWEEP = range(4)


def clamp_runs(
    energy: F64, cap: float, floor: float, ords: I64, amounts: F64, chosen: npt.NDArray[np.bool_]
) -> I64:
    """``E = min(cap, E + a)`` for the chosen credits, entry by entry, in order.

    An entry whose balance falls to ``floor`` or below at any step is left untouched (a
    sweep might bury it there): those entries are returned.
    """
    if not chosen.any():
        return ords[:0]
    ords, amounts = ords[chosen], amounts[chosen]
    order = np.argsort(ords, kind="stable")
    ords = ords[order]
    cuts = np.flatnonzero(ords[1:] != ords[:-1]) + 1
    starts = np.r_[0, cuts].tolist()
    ends = np.r_[cuts, len(ords)].tolist()
    owners = ords[starts]
    values = amounts[order].tolist()
    result = []
    for e, lo, hi in zip(energy[owners].tolist(), starts, ends, strict=True):
        low = e
        for a in values[lo:hi]:
            e += a
            if e > cap:
                e = cap
            elif e < low:
                low = e
        result.append(e if low > floor else np.nan)
    final = np.array(result)
    fell = np.isnan(final)
    energy[owners[~fell]] = final[~fell]
    out: I64 = owners[fell]
    return out


def exact_loop(
    rules: LedgerRules,
    rows: Rows,
    slow: I64,
    opens: tuple[I64, I64],
    credits: tuple[I64, I64, F64, npt.NDArray[np.bool_]],
    closes: tuple[I64, I64],
    sweeps: tuple[I64, I64],
) -> None:
    """The per-event rules, restricted to the entries ``slow``, in row order.

    Within a row: escrow opens, then credits in order, then escrow releases, then sweeps.
    """
    is_slow = np.zeros(rules.state.n, bool)
    is_slow[slow] = True
    c_rows, c_ords, c_amounts, c_dec = credits
    groups = (
        (opens, OP_OPEN),
        (closes, OP_CLOSE),
        (sweeps, OP_SWEEP),
        ((c_rows, c_ords), OP_CREDIT),
    )
    where_parts: list[I64] = []
    phase_parts: list[I64] = []
    ord_parts: list[I64] = []
    for (rows_of, ords_of), kind in groups:
        keep = is_slow[ords_of]
        where_parts.append(rows_of[keep])
        ord_parts.append(ords_of[keep])
        phase_parts.append(np.full(int(keep.sum()), kind, np.int64))
    keep = is_slow[c_ords]
    n_credits = int(keep.sum())
    where, phase = np.concatenate(where_parts), np.concatenate(phase_parts)
    ords = np.concatenate(ord_parts)
    amount = np.zeros(len(ords))
    decider = np.zeros(len(ords), bool)
    amount[len(ords) - n_credits :] = c_amounts[keep]
    decider[len(ords) - n_credits :] = c_dec[keep]
    order = np.lexsort((np.arange(len(ords)), phase, where))
    ops = (where[order], phase[order], ords[order], amount[order], decider[order])
    _run_ops(rules, rows, slow, ops)


def _run_ops(
    rules: LedgerRules,
    rows: Rows,
    slow: I64,
    ops: tuple[I64, I64, I64, F64, npt.NDArray[np.bool_]],
) -> None:
    """The loop itself, over plain Python values (numpy scalars cost 3x more per access)."""
    cfg, c = rules.config, rules.state.cols
    eps, cap, hurt, track = cfg.alive_epsilon, cfg.max_energy, -cfg.damage_epsilon, False
    track = rules.track_all or bool(rules.track_ids)
    idx = slow.tolist()
    energy = dict(zip(idx, c["energy"][slow].tolist(), strict=True))
    escrow = dict(zip(idx, c["escrow"][slow].tolist(), strict=True))
    alive = {i for i, s in zip(idx, c["status"][slow].tolist(), strict=True) if s == ALIVE}
    pinned = {i for i in alive if c["pinned"][i]}
    earned = dict(zip(idx, c["earned"][slow].tolist(), strict=True))
    uses = dict.fromkeys(idx, 0)
    damaged: set[int] = set()
    hit_at: dict[int, int] = {}  # the row whose settlement last charged the entry a loss
    seqs = rows.seq
    for r, phase, i, amount, decider in zip(*(a.tolist() for a in ops), strict=True):
        if phase == OP_CREDIT:
            if i in alive:
                e = energy[i] + amount
                energy[i] = cap if e > cap else e
                earned[i] += amount
                uses[i] += 1
                if amount < hurt:
                    damaged.add(i)
                    hit_at[i] = r
                if track:
                    c["energy"][i] = energy[i]
                    rules.note(i, int(seqs[r]), "decided" if decider else "supported", amount)
        elif phase == OP_OPEN:
            escrow[i] += 1
        elif phase == OP_CLOSE:
            escrow[i] -= 1
        elif i in alive:
            if i in pinned:
                if energy[i] < 0.0:
                    energy[i] = 0.0
            elif energy[i] <= eps and escrow[i] == 0:
                alive.discard(i)
                c["energy"][i] = energy[i]
                net_loss = earned[i] < hurt or c["denied"][i]
                cause = EXECUTED if (hit_at.get(i) == r or net_loss) else STARVED
                rules.bury(i, cause, int(seqs[r]))
                energy[i] = float(c["energy"][i])
    c["energy"][slow] = [energy[i] for i in idx]
    c["earned"][slow] = [earned[i] for i in idx]
    used = np.array([uses[i] for i in idx], np.int64)
    c["uses"][slow] += used
    c["last_used"][slow[used > 0]] = rules.now
    if damaged:
        c["damaged"][list(damaged)] = True
