"""Ticking: ticket expiry and the upkeep pass (vectorised over the population)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ._state import ALIVE, CAUSES, DEAD, EXECUTED, STARVED

if TYPE_CHECKING:
    from ._host import Rules as LedgerRules


def expire(rules: LedgerRules, seq: int) -> None:
    """Settle at 0 every ticket older than ``expire_after`` ticks."""
    st = rules.state
    while st.pending:
        key, ticket = next(iter(st.pending.items()))
        if st.tick - ticket.born_tick <= rules.config.expire_after:
            break  # tickets are pending in order of birth
        del st.pending[key]
        st.settled.add(key)
        st.cols["escrow"][list(ticket.held)] -= 1
        st.counters.expired += 1
        rules.sweep(ticket.held, seq)


def upkeep(rules: LedgerRules, seq: int) -> None:
    """Charge every alive entry, floor the pinned, bury the broke that no ticket holds."""
    st, cfg = rules.state, rules.config
    status, energy = st.view("status"), st.view("energy")
    alive = status == ALIVE
    energy[alive] -= cfg.upkeep
    pinned = alive & st.view("pinned")
    energy[pinned & (energy < 0.0)] = 0.0
    dead = alive & ~st.view("pinned") & (energy <= cfg.alive_epsilon)
    dead &= st.view("escrow") == 0
    bury_many(rules, np.flatnonzero(dead), seq)


def bury_many(rules: LedgerRules, idx: npt.NDArray[np.int64], seq: int) -> None:
    """Bury entries by the net-damage rule, in insertion order (an upkeep pass)."""
    if idx.size == 0:
        return
    c = rules.state.cols
    idx = idx[np.argsort(c["rank"][idx], kind="stable")]
    c["status"][idx] = DEAD
    c["energy"][idx] = np.minimum(c["energy"][idx], 0.0)
    c["died_tick"][idx] = rules.now
    c["died_seq"][idx] = seq
    # Upkeep drained it: "executed" only if its measured credits were net losses (or it was
    # denied admission), not for an entry that merely took a loss once (README, Survival).
    killed = c["denied"][idx] | (c["earned"][idx] < -rules.config.damage_epsilon)
    c["cause"][idx] = np.where(killed, EXECUTED, STARVED)
    rules.state.graveyard.extend(idx.tolist())
    if rules.track_all or rules.track_ids:
        for i in idx.tolist():
            rules.note(i, seq, f"died:{CAUSES[int(c['cause'][i])]}")
