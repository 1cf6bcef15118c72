"""The batched credit path: a run of attempts and outcomes between two ticks, at once.

Within such a run the tick count is fixed and, when no alive entry is on probation or
juvenile, every credit's amount is fixed by the events alone. An entry's balance then
depends only on its own credits, applied in order. ``np.add.at`` applies them in order,
unbuffered, so its result is bit-identical to the per-event loop, as long as neither the
cap nor a burial can intervene; that is certain when

* every credit is >= 0 (the cap is then ``min(cap, sum)``: a clamp is absorbing), or
* every credit is < 0 and the final balance is still alive (balances only fall), or
* the balance stays inside (epsilon, cap) by a rounding margin whatever the order.

Entries that fail these tests (and pinned or history-tracked ones) are replayed exactly,
credit by credit, with their escrow and settle-time burials, in a short Python loop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ._exact import clamp_runs, exact_loop
from ._np import unique, unique_first, unique_inverse
from ._plan import DIRECT, DROPPED, IGNORED, OPEN, SETTLE, Plan
from ._read import Ragged, Rows
from .rules._state import ALIVE, UNBORN, Ticket

if TYPE_CHECKING:
    from .rules._rules import LedgerRules

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
_ROUNDING = 2.0**-50


def gather(ragged: Ragged, rows: I64) -> tuple[I64, I64, I64]:
    """(owner position in ``rows``, index within its list, value) of every listed element."""
    starts = ragged.offsets[rows]
    lengths = ragged.offsets[rows + 1] - starts
    total = int(lengths.sum())
    owner = np.repeat(np.arange(len(rows), dtype=np.int64), lengths)
    first = np.cumsum(lengths) - lengths
    within = np.arange(total, dtype=np.int64) - first[owner]
    return owner, within, ragged.values[starts[owner] + within]


def _listed(rows: Rows, which: I64) -> tuple[I64, I64, I64]:
    """Every entry named by rows ``which``, deciders then supporters, in list order.

    Returns (row, part: 0 decider / 1 supporter, ordinal), sorted by row then part.
    """
    d_owner, d_within, d_vals = gather(rows.dec, which)
    s_owner, s_within, s_vals = gather(rows.sup, which)
    owner = np.concatenate([d_owner, s_owner])
    part = np.concatenate([np.zeros(len(d_owner), np.int64), np.ones(len(s_owner), np.int64)])
    within = np.concatenate([d_within, s_within])
    order = np.lexsort((within, part, owner))
    return owner[order], part[order], np.concatenate([d_vals, s_vals])[order]


def apply_range(rules: LedgerRules, rows: Rows, plan: Plan, lo: int, hi: int) -> None:
    """Apply rows ``lo..hi`` (attempts and outcomes only, no tick between them)."""
    st = rules.state
    role = plan.role[lo:hi]
    st.counters.ignored_attempts += int(np.count_nonzero(role == IGNORED))
    st.counters.dropped += int(np.count_nonzero(role == DROPPED))
    span = np.arange(lo, hi, dtype=np.int64)
    opens = span[role == OPEN]
    settles = span[(role == SETTLE) | (role == DIRECT)]
    st.counters.settled += len(settles)
    # Entries named by each settle (its own lists, or its ticket's) and held by each ticket.
    s_owner, s_part, s_ords = _listed(rows, plan.source[settles])
    s_rows = settles[s_owner]
    o_owner, _, o_ords = _listed(rows, opens)
    o_rows = opens[o_owner]
    _births(rules, rows, np.concatenate([o_rows, s_rows]), np.concatenate([o_ords, s_ords]))
    tickets = plan.ticket[settles]
    closing = settles[tickets >= 0]
    c_owner, _, c_ords = _listed(rows, plan.ticket[closing])
    c_rows = closing[c_owner]
    credit_rows, credit_ords, amounts, deciders = _credits(
        rules, plan, settles, (s_owner, s_part, s_ords)
    )
    sweep_rows = np.concatenate([s_rows, c_rows])
    sweep_ords = np.concatenate([s_ords, c_ords])
    open_pairs = _unique_pairs(o_rows, o_ords)
    close_pairs = _unique_pairs(c_rows, c_ords)
    slow = _fast_credits(rules, credit_ords, amounts, sweep_ords)
    if slow.size:
        exact_loop(
            rules,
            rows,
            slow,
            open_pairs,
            (credit_rows, credit_ords, amounts, deciders),
            close_pairs,
            (sweep_rows, sweep_ords),
        )
    escrow = st.cols["escrow"]
    np.add.at(escrow, open_pairs[1], 1)
    np.add.at(escrow, close_pairs[1], -1)
    _pending(rules, rows, plan, lo, opens, closing)


def _births(rules: LedgerRules, rows: Rows, where: I64, ords: I64) -> None:
    """Birth, in order of first appearance, every unborn entry these rows name."""
    st = rules.state
    order = np.argsort(where, kind="stable")
    where, ords = where[order], ords[order]
    unborn = st.cols["status"][ords] == UNBORN
    if not unborn.any():
        return
    new, first = unique_first(ords[unborn])
    by_appearance = np.argsort(first)
    new, first = new[by_appearance], first[by_appearance]
    c, cfg = st.cols, rules.config
    c["status"][new] = ALIVE
    c["energy"][new] = cfg.spawn_energy
    c["juvenile"][new] = cfg.admission_window
    c["born_tick"][new] = rules.now
    c["born_seq"][new] = rows.seq[where[unborn][first]]
    c["rank"][new] = st.born + np.arange(len(new))
    st.born += len(new)
    if rules.track_all or rules.track_ids:
        for i, r in zip(new.tolist(), where[unborn][first].tolist(), strict=True):
            rules.note(i, int(rows.seq[r]), "born")


def _credits(
    rules: LedgerRules, plan: Plan, settles: I64, listed: tuple[I64, I64, I64]
) -> tuple[I64, I64, F64, npt.NDArray[np.bool_]]:
    """Each credit's (row, ordinal, amount, is-decider), in application order.

    The same float expressions as the per-event rules: ``c / k`` to each of k deciders,
    ``c * share`` to each supporter, ``c / n`` to each of n supporters with no decider.
    """
    owner, part, ords = listed
    c = plan.credit[settles][owner]
    is_dec = part == 0
    k = np.bincount(owner[is_dec], minlength=len(settles))[owner]
    n = np.bincount(owner[~is_dec], minlength=len(settles))[owner]
    share = rules.config.supporting_share
    amounts = np.where(
        is_dec, c / np.maximum(k, 1), np.where(k > 0, c * share, c / np.maximum(n, 1))
    )
    live = c != 0.0
    return settles[owner][live], ords[live], amounts[live], is_dec[live]


def _unique_pairs(where: I64, ords: I64) -> tuple[I64, I64]:
    """Distinct (row, ordinal) pairs: a ticket holds each of its entries once."""
    if not len(ords):
        return where, ords
    width = int(ords.max()) + 1
    combined = unique(where * width + ords)
    return combined // width, combined % width


def _tracked(rules: LedgerRules, ords: I64) -> npt.NDArray[np.bool_]:
    if rules.track_all:
        return np.ones(len(ords), bool)
    if not rules.track_ids:
        return np.zeros(len(ords), bool)
    index = rules.state.index
    wanted = [index[x] for x in rules.track_ids if x in index]
    return np.isin(ords, wanted)


def _fast_credits(rules: LedgerRules, ords: I64, amounts: F64, swept: I64) -> I64:
    """Apply every credit that needs no burial check; return the entries that do.

    Entries whose balance provably meets neither the cap nor a burial take ``np.add.at``;
    other plain entries run the clamp entry by entry and keep the result if the balance
    never fell to the burial threshold; the rest, and every pinned, tracked or broke entry
    a sweep touches, are returned.
    """
    st, cfg = rules.state, rules.config
    c = st.cols
    energy, eps, cap = c["energy"], cfg.alive_epsilon, cfg.max_energy
    uniq, inv = unique_inverse(ords)
    gain = np.bincount(inv, np.where(amounts > 0, amounts, 0.0), len(uniq))
    loss = np.bincount(inv, np.where(amounts < 0, -amounts, 0.0), len(uniq))
    count = np.bincount(inv, minlength=len(uniq))
    start = energy[uniq].copy()
    alive = c["status"][uniq] == ALIVE
    plain = alive & ~c["pinned"][uniq] & (start > eps) & ~_tracked(rules, uniq)
    margin = (count + 2) * _ROUNDING * (np.abs(start) + gain + loss)
    survives = start - loss - margin > eps
    ok = plain & ((loss == 0) | (gain == 0) | (survives & (start + gain + margin < cap)))
    chosen = ok[inv]
    np.add.at(energy, ords[chosen], amounts[chosen])
    picked = uniq[ok]
    final = np.minimum(energy[picked], cap)
    energy[picked] = final
    broke = final <= eps  # only all-loss entries can get here: replay them exactly
    if broke.any():
        energy[picked[broke]] = start[ok][broke]
        ok[np.flatnonzero(ok)[broke]] = False
    capped = plain & ~ok & ~((gain == 0) | (loss == 0))
    fell = clamp_runs(energy, cap, eps, ords, amounts, capped[inv])
    capped[np.searchsorted(uniq, fell)] = False
    done = ok | capped
    # The net credit in application order, as the per-event rules add it (bit for bit).
    settled = done[inv]
    np.add.at(c["earned"], ords[settled], amounts[settled])
    picked = uniq[done]
    c["uses"][picked] += count[done]
    c["last_used"][picked] = rules.now
    hurt = np.bincount(inv, amounts < -cfg.damage_epsilon, len(uniq)) > 0
    c["damaged"][picked] |= hurt[done]
    swept = unique(swept)
    risky = swept[(c["status"][swept] == ALIVE) & (c["pinned"][swept] | (energy[swept] <= eps))]
    return unique(np.concatenate([uniq[alive & ~done], risky]))


def _pending(rules: LedgerRules, rows: Rows, plan: Plan, lo: int, opens: I64, closing: I64) -> None:
    """Tickets that outlive the run join the pending list; older ones settled here leave."""
    st = rules.state
    closed = plan.ticket[closing]
    for a in closed[closed < lo].tolist():
        del st.pending[_key(rows, a)]
    for a in opens[~np.isin(opens, closed)].tolist():
        dec, sup = rows.dec.row(a), rows.sup.row(a)
        st.pending[_key(rows, a)] = Ticket(st.tick, dec, sup, tuple(dict.fromkeys(dec + sup)))


def _key(rows: Rows, r: int) -> str:
    return str(rows.keys[int(rows.key[r])].as_py())
