"""The attempts and outcomes of a sealed segment that pass through the window, folded in
one tight loop.

Before a segment's last :data:`evolog.advice._state.WINDOW` evolver-kind rows, an attempt or
an outcome changes the open and closed attempts and the edge statistics, but whatever it
puts in the window is pushed out of it within the segment. Building a :class:`Row` for each
of them, and an :class:`AttemptInfo` for every attempt and a signal list for every closed
one, was most of a first fold, though the state keeps only the few still open at the end
of the segment and the last ``RECENT_CLOSED`` closed ones. Here the rows stay as a handful
of column lists; the fields the state keeps of an attempt are taken from the segment only
for the attempts it still holds when the batch ends.

The loop performs the same steps as :meth:`AdviceState.apply` in the same order (the same
float additions in log order, the same dict and ordered-dict operations), so a state folded
through batches equals one folded row by row, bit for bit (tests/advice/test_advice_batch.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evolog.eventlog import TS_MAX

from ._state import RECENT_CLOSED, AttemptInfo, Closed
from .evolver._export import NONE_KEY

if TYPE_CHECKING:
    from ._state import AdviceState

#: Columns read as Python lists for every row of a batch; the others only on demand.
LIST_COLUMNS = ("seq", "kind", "ts", "key", "gene", "status", "action_id")


class Batch:
    """Attempt and outcome rows of one segment, in seq order, all pushed out of the window
    within it: ``cols`` as lists (see :data:`LIST_COLUMNS`), ``table`` for the rest."""

    __slots__ = ("cols", "n", "table")

    def __init__(self, table: Any) -> None:
        import pyarrow as pa

        self.table = table
        self.n = table.num_rows
        self.cols: dict[str, list[Any]] = {}
        for c in LIST_COLUMNS:
            if c not in table.column_names:
                self.cols[c] = [None] * self.n
            elif c == "ts":
                self.cols[c] = table[c].cast(pa.int64()).to_pylist()
            else:
                self.cols[c] = table[c].to_pylist()

    def column(self, name: str, rows: list[int]) -> list[Any]:
        """Values of column ``name`` at ``rows`` (None where the segment lacks it)."""
        if name not in self.table.column_names:
            return [None] * len(rows)
        if not rows:
            return []
        return list(self.table[name].take(rows).to_pylist())

    def signals(self, row: int) -> list[str] | None:
        values = self.column("signals", [row])
        return values[0] if values else None


def fold_batch(state: AdviceState, batch: Batch) -> None:
    """Fold ``batch`` into ``state`` as :meth:`AdviceState.apply` would, row by row."""
    state._materialize()
    c = batch.cols
    seqs, kinds, tss, keys = c["seq"], c["kind"], c["ts"], c["key"]
    genes, statuses, aids = c["gene"], c["status"], c["action_id"]
    open_: dict[str, Any] = state.open  # values: AttemptInfo, or a batch row (an int)
    closed: Any = state._closed  # Closed; from this batch with PENDING signals until the end
    forgotten, catalog = state.forgotten, state.catalog
    edge_for, gene_for = state.edges.for_update, state.gene_stats.for_update
    edge_h, gene_h = state.edge_half_life_us, state.gene_half_life_us
    gene_ids = state.gene_ids
    closed_from: dict[str, int] = {}  # action id -> batch row of the attempt it closed
    key_ids = catalog.id_map()
    head, applied = state.head, 0
    try:
        for i in range(batch.n):
            seq = seqs[i]
            if seq <= head:
                continue
            head = seq
            applied += 1
            if kinds[i] == "attempt":
                aid = aids[i]
                if aid:
                    closed.pop(aid, None)
                    open_[aid] = i
                continue
            # An outcome: AdviceState._outcome, with batch rows standing for attempts.
            aid = aids[i] or ""
            key, gene = keys[i] or "", genes[i]
            signals: list[str] | None = None
            fetched = False  # own signals are read from the segment only when needed
            info = open_.pop(aid, None) if aid else None
            attempt: Closed | None = None
            if info is not None:
                if type(info) is int:
                    attempt = Closed(seq, keys[info] or "", genes[info], PENDING)
                    closed_from[aid] = info
                else:
                    attempt = Closed(seq, info.key, info.gene, info.signals)
            elif aid:
                attempt = closed.get(aid)
            if attempt is not None:
                if not key:
                    key, fetched = attempt.key, True
                    signals = batch.signals(i) or _attempt_signals(batch, attempt, aid, closed_from)
                gene = gene or attempt.gene
                closed[aid] = attempt
                closed.move_to_end(aid)
                while len(closed) > RECENT_CLOSED:
                    forgotten.add(closed.popitem(last=False)[0])
            elif aid and not (key and gene) and aid in forgotten and state.find_attempt:
                found = state.find_attempt(aid, seq)
                if found is not None:
                    if not key:
                        key, fetched = found.key, True
                        signals = batch.signals(i) or found.signals or []
                    gene = gene or found.gene
            if gene:
                k = key or NONE_KEY
                kid = key_ids.get(k)
                if kid is None:
                    kid = catalog.add(k, signals if fetched else batch.signals(i))
                gid = gene_ids.get(gene)
                if gid is None:
                    gid = state.gene_id(gene)
                status = statuses[i] or ""
                ts = tss[i]
                if not 0 <= ts <= TS_MAX:
                    ts = 0 if ts < 0 else TS_MAX
                # Stat.add, inlined (a call per statistic was a fifth of the loop): the
                # same operations on the same operands, in the same order.
                for st, h in ((edge_for(kid, gid), edge_h), (gene_for(0, gid), gene_h)):
                    newest = st.newest_t
                    if st.success + st.fail + st.other == 0:
                        st.first_t = st.newest_t = newest = ts
                    elif ts > newest:
                        factor = 2.0 ** (-(ts - newest) / h)
                        st.s_acc *= factor
                        st.f_acc *= factor
                        st.newest_t = newest = ts
                    if ts < st.first_t:
                        st.first_t = ts
                    if status == "success":
                        st.success += 1
                        st.s_acc += 2.0 ** (-(newest - ts) / h) if ts < newest else 1.0
                    elif status == "failed":
                        st.fail += 1
                        st.f_acc += 2.0 ** (-(newest - ts) / h) if ts < newest else 1.0
                    else:
                        st.other += 1
                    if seq > st.last_seq:
                        st.last_seq = seq
    finally:
        _resolve(batch, open_, closed, closed_from)
    state.applied += applied
    state.window_version += applied
    state.head = max(state.head, head)


#: The signals of a closed attempt from this batch, until the batch ends (compared by identity).
PENDING: list[str] = []


def _attempt_signals(
    batch: Batch, attempt: Closed, aid: str, closed_from: dict[str, int]
) -> list[str]:
    if attempt.signals is not PENDING:
        return attempt.signals
    return list(batch.signals(closed_from[aid]) or [])


def _resolve(batch: Batch, open_: dict[str, Any], closed: Any, closed_from: dict[str, int]) -> None:
    """Replace the batch rows standing for attempts with what the state keeps of them
    (assigning to an existing key keeps its place in both dicts)."""
    pending = [(aid, i) for aid, i in open_.items() if type(i) is int]
    if pending:
        rows = [i for _, i in pending]
        got = {n: batch.column(n, rows) for n in ("id", "gene_category", "agent", "session")}
        sigs = batch.column("signals", rows)
        c = batch.cols
        for j, (aid, i) in enumerate(pending):
            open_[aid] = AttemptInfo(
                aid,
                c["seq"][i],
                c["ts"][i],
                got["id"][j],
                c["key"][i] or "",
                c["gene"][i],
                got["gene_category"][j],
                got["agent"][j] or "",
                got["session"][j],
                list(sigs[j] or []),
            )
    waiting = [(aid, i) for aid, i in closed_from.items() if aid in closed]
    waiting = [(aid, i) for aid, i in waiting if closed[aid].signals is PENDING]
    if waiting:
        sigs = batch.column("signals", [i for _, i in waiting])
        for (aid, _), s in zip(waiting, sigs, strict=True):
            closed[aid] = closed[aid]._replace(signals=list(s or []))


__all__ = ["Batch", "fold_batch"]
