"""The replay plan: the clock and each decision's fate, computed before any energy moves.

Everything here depends only on the events, never on balances, so it is computed once per
replay with numpy (the tick count before every row) and one tight pass over action keys:

* an attempt opens a ticket if it names entries and its action is neither pending nor
  settled (else it is ignored);
* an outcome settles its action's pending ticket, unless the ticket expired first (then the
  outcome is dropped); an outcome of an action with no ticket is a decision and its outcome
  at once; any later outcome of a settled action is dropped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ._config import LedgerConfig
from ._np import unique, unique_first
from ._read import ATTEMPT, DREAM_END, OUTCOME, TICK, Rows

I64 = npt.NDArray[np.int64]
NONE, OPEN, IGNORED, NOOP, SETTLE, DIRECT, DROPPED = range(7)


@dataclass
class Plan:
    """Per row: ticks before and after it, the tick count at it, its role, its ticket."""

    before: I64
    after: I64
    count: I64
    role: npt.NDArray[np.int8]
    ticket: I64
    source: I64
    credit: npt.NDArray[np.float64]
    settled_keys: I64


def make_plan(rows: Rows, config: LedgerConfig) -> Plan:
    """The clock and roles of every row."""
    before, after = _clock(rows, config)
    # The count only decides expiry (a difference > expire_after): capping each row's ticks
    # there keeps every such decision and keeps the sum far from int64 overflow.
    cap = config.expire_after + 1
    capped_before, capped_after = np.minimum(before, cap), np.minimum(after, cap)
    count = np.cumsum(capped_before + capped_after) - capped_after
    role, ticket, settled_keys = _roles(rows, count, config.expire_after)
    source = np.arange(rows.n, dtype=np.int64)
    use_ticket = (role == SETTLE) & rows.own_empty
    source[use_ticket] = ticket[use_ticket]
    credit = np.zeros(rows.n, np.float64)
    settles = np.flatnonzero(((role == SETTLE) | (role == DIRECT)) & rows.has_delta)
    if settles.size:
        # math.tanh, not np.tanh: the per-event rules use it, and numpy's SIMD tanh may
        # differ from libm in the last bit.
        ratio = (rows.delta[settles] / config.resource_scale).tolist()
        tanh = np.fromiter(map(math.tanh, ratio), np.float64, len(ratio))
        credit[settles] = config.credit_gain * tanh
    return Plan(before, after, count, role, ticket, source, credit, settled_keys)


def _clock(rows: Rows, config: LedgerConfig) -> tuple[I64, I64]:
    n, kind = rows.n, rows.kind
    before = np.zeros(n, np.int64)
    after = np.zeros(n, np.int64)
    if config.explicit_ticks:
        is_tick = kind == TICK
        after[is_tick] = np.maximum(rows.ticks[is_tick], 0)
    if config.ticks_per_dream:
        after[kind == DREAM_END] += config.ticks_per_dream
    if config.outcomes_per_tick:
        outcome = kind == OUTCOME
        seen = np.cumsum(outcome)
        after[outcome & (seen % config.outcomes_per_tick == 0)] += 1
    if config.tick_every_us and n:
        period = np.maximum.accumulate(rows.ts // config.tick_every_us)
        before[1:] = period[1:] - period[:-1]
    return before, after


def _roles(rows: Rows, count: I64, expire_after: int) -> tuple[npt.NDArray[np.int8], I64, I64]:
    """Each decision's fate, by action key (see the module docstring), all at once.

    Per key, in row order, the first attempt naming entries or the first outcome decides:
    an outcome settles directly; an attempt opens a ticket that the next outcome settles
    (or finds expired). Attempts before it are no-ops, everything else after it is ignored
    or dropped.
    """
    n = rows.n
    role = np.zeros(n, np.int8)
    ticket = np.full(n, -1, np.int64)
    is_att, is_out = rows.kind == ATTEMPT, rows.kind == OUTCOME
    named = (rows.dec.lengths() + rows.sup.lengths()) > 0
    role[is_out & (rows.key < 0)] = DIRECT
    role[is_att & (rows.key < 0)] = NOOP
    keyed = np.flatnonzero((is_att | is_out) & (rows.key >= 0))
    if not keyed.size:
        return role, ticket, np.zeros(0, np.int64)
    r = keyed[np.argsort(rows.key[keyed], kind="stable")]  # by key, then by row
    key = rows.key[r]
    att, out = is_att[r], is_out[r]
    start = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    group = np.cumsum(np.r_[False, key[1:] != key[:-1]])
    pos = np.arange(len(r))
    first = _first_per_group(group, out | (att & named[r]), pos, len(start))
    f = first[group]
    has_f = f >= 0
    after = has_f & (pos > f)
    opened = has_f & att[np.maximum(f, 0)]
    fate = np.where(att, np.where(after, IGNORED, NOOP), DROPPED).astype(np.int8)
    fate[pos == f] = np.where(att[pos == f], OPEN, DIRECT)
    o1 = _first_per_group(group, out & after & opened, pos, len(start))
    settled_by = o1[o1 >= 0]
    opener = first[group[settled_by]]
    expired = count[r[settled_by]] - count[r[opener]] > expire_after
    fate[settled_by] = np.where(expired, DROPPED, SETTLE)
    ticket[r[settled_by[~expired]]] = r[opener[~expired]]
    role[r] = fate
    closed = first[(first >= 0)]
    settled_keys = key[unique(np.concatenate([closed[out[closed]], settled_by]))]
    return role, ticket, settled_keys


def _first_per_group(group: I64, mask: npt.NDArray[np.bool_], pos: I64, groups: int) -> I64:
    """The first position with ``mask`` in each group (-1: none)."""
    first = np.full(groups, -1, np.int64)
    hit = np.flatnonzero(mask)
    if hit.size:
        g, i = unique_first(group[hit])
        first[g] = pos[hit[i]]
    return first
