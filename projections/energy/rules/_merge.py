"""Periodic consolidation: near-duplicate entries merge into one heir (darwin §5).

Candidates are alive, unpinned, not on probation or juvenile and not held in escrow, taken
in order of energy (highest first, ties by insertion order). Each not-yet-consumed anchor
gathers every other unconsumed candidate at least ``merge_threshold`` similar to it (a
star around the anchor, not a transitive closure). A cluster of two or more becomes a fresh
heir: energy pooled and capped, uses summed, lineage = the member ids (anchor first); the
members are buried as "merged". Heirs are not reconsidered in the same pass.

A dream's merge (``merge`` event: ``merged`` folded into ``node``) keeps the survivor's id:
energy pooled (capped), uses summed, the merged id and its lineage appended to the
survivor's lineage, the merged entry buried as "merged".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ._state import ALIVE, MERGED

if TYPE_CHECKING:
    from ._host import Rules as LedgerRules
    from ._host import Similarity


def consolidate(rules: LedgerRules, similarity: Similarity, seq: int) -> int:
    """One consolidation pass; returns the number of heirs made."""
    st, cfg = rules.state, rules.config
    ok = st.view("status") == ALIVE
    ok &= ~st.view("pinned") & (st.view("probation") <= 0) & (st.view("juvenile") <= 0)
    ok &= st.view("escrow") == 0
    cand = np.flatnonzero(ok)
    energy = st.view("energy")
    order = cand[np.lexsort((st.view("rank")[cand], -energy[cand]))].tolist()
    consumed: set[int] = set()
    heirs = 0
    for a in order:
        if a in consumed:
            continue
        consumed.add(a)
        cluster = [a]
        for b in order:
            if b not in consumed and similarity(st.ids[a], st.ids[b]) >= cfg.merge_threshold:
                cluster.append(b)
                consumed.add(b)
        if len(cluster) > 1:
            _make_heir(rules, cluster, seq)
            heirs += 1
    return heirs


def _heir_id(rules: LedgerRules, anchor: int) -> str:
    base = f"{rules.state.ids[anchor]}~merged@{rules.state.tick}"
    name, k = base, 1
    while name in rules.state.index:
        k += 1
        name = f"{base}.{k}"
    return name


def _make_heir(rules: LedgerRules, cluster: list[int], seq: int) -> None:
    st = rules.state
    c = st.cols
    total = 0.0
    uses = 0
    for m in cluster:
        total += float(c["energy"][m])
        uses += int(c["uses"][m])
    name = _heir_id(rules, cluster[0])
    members = [st.ids[m] for m in cluster]
    for m in cluster:
        st.merged_into[m] = name
        rules.bury(m, MERGED, seq)
    heir = st.ordinal(name)
    c = st.cols  # the ordinal may have grown the columns
    rules.born(heir, seq, energy=total)
    c["juvenile"][heir] = 0
    c["uses"][heir] = uses
    st.lineage[heir] = members
    st.counters.merges += len(cluster) - 1
    rules.note(heir, seq, "heir_of:" + ",".join(members))


def merge_pair(rules: LedgerRules, node: str, merged: str, seq: int) -> bool:
    """Fold ``merged`` into ``node``: energy pooled (capped), uses summed, lineage kept.

    A ``merged`` never seen before brings no energy. Ignored when either side is dead,
    when ``merged`` is pinned, or when both are the same entry.
    """
    if not node or not merged or node == merged:
        return False
    st = rules.state
    n, m = st.ordinal(node), st.ordinal(merged)
    c = st.cols
    rules.born(n, seq)
    if rules.born(m, seq):
        c["energy"][m] = 0.0
    if c["status"][n] != ALIVE or c["status"][m] != ALIVE or c["pinned"][m]:
        rules.note(n, seq, f"merge_ignored:{merged}")
        return False
    c["energy"][n] = min(rules.config.max_energy, float(c["energy"][n] + c["energy"][m]))
    c["uses"][n] += c["uses"][m]
    st.lineage.setdefault(n, []).extend([merged, *st.lineage.get(m, [])])
    st.merged_into[m] = node
    st.counters.merges += 1
    rules.note(n, seq, f"absorbed:{merged}")
    rules.bury(m, MERGED, seq)
    return True
