"""The replay driver: rows read from the log, through the plan, into the rules.

Rows are cut into runs of attempts and outcomes with no tick inside. A long run whose
credits are fixed by the events (no alive entry on probation or juvenile) goes through the
batched path; anything else (lifecycle, merges, nodes, ticks, short or restricted runs)
goes through the per-event rules. Both give bit-identical balances (tests/test_ledger_*).
"""

from __future__ import annotations

import numpy as np

from ._batch import apply_range
from ._plan import DIRECT, DROPPED, IGNORED, OPEN, SETTLE, Plan
from ._read import ATTEMPT, LIFECYCLE, MERGE, NODE, OUTCOME, Rows
from .rules._rules import LedgerRules
from .rules._state import ALIVE

#: Runs shorter than this go through the per-event rules (the batch has a fixed cost).
MIN_BATCH = 24


def replay_rows(rules: LedgerRules, rows: Rows, plan: Plan, batch: bool = True) -> None:
    """Apply every row to fresh ``rules`` (``batch=False``: the per-event rules only)."""
    st = rules.state
    if st.n:
        raise ValueError("replay_rows needs a fresh ledger state")
    st.add_ids(rows.ids)
    n = rows.n
    decisive = (rows.kind == ATTEMPT) | (rows.kind == OUTCOME)
    cut_before = np.flatnonzero(~decisive | (plan.before > 0))
    cut_after = np.flatnonzero(plan.after > 0)
    # With an admission window, newborns are juvenile: their credits depend on their state.
    batch = batch and rules.config.admission_window == 0
    restricted = False
    seqs = rows.seq.tolist()
    r = 0
    while r < n:
        if plan.before[r]:
            rules.tick(int(plan.before[r]), seq=seqs[r])
        if not decisive[r]:
            restricted |= _barrier(rules, rows, r)
            if plan.after[r]:
                rules.tick(int(plan.after[r]), seq=seqs[r])
            r += 1
            continue
        end = _run_end(cut_before, cut_after, r, n)
        if batch and end - r >= MIN_BATCH and not (restricted and _has_restricted(rules)):
            apply_range(rules, rows, plan, r, end)
        else:
            for row in range(r, end):
                _decision(rules, rows, plan, row)
        if plan.after[end - 1]:
            rules.tick(int(plan.after[end - 1]), seq=seqs[end - 1])
        r = end


def _run_end(cut_before: np.ndarray, cut_after: np.ndarray, r: int, n: int) -> int:
    i = int(np.searchsorted(cut_before, r + 1))
    end = int(cut_before[i]) if i < len(cut_before) else n
    j = int(np.searchsorted(cut_after, r))
    if j < len(cut_after):
        end = min(end, int(cut_after[j]) + 1)
    return end


def _has_restricted(rules: LedgerRules) -> bool:
    """An entry on probation or juvenile, or a pending ticket fixed unlike its attempt.

    The batch credits each settlement by its attempt's own lists; a ticket decided while an
    entry was on probation (demoted or withheld) must settle through the per-event rules.
    """
    st = rules.state
    alive = st.view("status") == ALIVE
    if np.any(alive & ((st.view("probation") > 0) | (st.view("juvenile") > 0))):
        return True
    return any(t.altered for t in st.pending.values())


def _decision(rules: LedgerRules, rows: Rows, plan: Plan, r: int) -> None:
    """One attempt or outcome through the per-event rules, its fate already planned."""
    st = rules.state
    role = int(plan.role[r])
    seq = int(rows.seq[r])
    if role == OPEN:
        rules.open_resolved(_key(rows, r), rows.dec.row(r), rows.sup.row(r), seq)
    elif role == IGNORED:
        st.counters.ignored_attempts += 1
    elif role == DROPPED:
        st.counters.dropped += 1
    elif role in (SETTLE, DIRECT):
        ticket = st.pending.pop(_key(rows, int(plan.ticket[r]))) if role == SETTLE else None
        delta = float(rows.delta[r]) if rows.has_delta[r] else None
        if int(plan.source[r]) != r:
            # The outcome names nobody: the ticket's lists, as fixed at its decision.
            rules.settle_resolved(ticket, delta, (), (), seq)
        else:
            rules.settle_resolved(ticket, delta, rows.dec.row(r), rows.sup.row(r), seq)


def _barrier(rules: LedgerRules, rows: Rows, r: int) -> bool:
    """A lifecycle, merge or node row; True if it may have put an entry on probation."""
    kind, seq = int(rows.kind[r]), int(rows.seq[r])
    if kind == LIFECYCLE:
        return _lifecycle(rules, rows, r, seq)
    if kind == MERGE and rows.node[r] >= 0 and rows.merged[r] >= 0:
        rules.merge(rows.ids[rows.node[r]], rows.ids[rows.merged[r]], seq=seq)
    elif kind == NODE and rows.node[r] >= 0:
        rules.born(int(rows.node[r]), seq)
    return False


def _lifecycle(rules: LedgerRules, rows: Rows, r: int, seq: int) -> bool:
    entry = int(rows.entry[r])
    if entry < 0:
        return False
    op = int(rows.op[r])
    name = rows.ids[entry]
    if op == 0:
        energy = float(rows.energy[r]) if rows.has_energy[r] else None
        probation = max(0, int(rows.probation[r]))
        rules.born(entry, seq, energy, bool(rows.pinned[r] == 1), probation)
        return probation > 0
    if op in (1, 2):
        rules.pin(name, seq=seq, pinned=op == 1)
    elif op == 3:
        rules.forget(name, seq=seq)
    return False


def _key(rows: Rows, r: int) -> str:
    return str(rows.keys[int(rows.key[r])].as_py())
