"""Memory: strategies, notes and genes with their evidence, lineage and ledger state, the
dream cycles (undoable), and what recall would give for a typed query, with its scores."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ._page import button, memory_text, text
from ._svg import line_plot
from ._timeline import _rows

if TYPE_CHECKING:
    import duckdb

    from evolog.eventlog import EventLog
    from evolog.projections import LedgerView
    from evolog.projections.memory import ItemFold, MemoryItem

#: Items listed (most used first) and the ones whose evidence is plotted.
SHOWN, PLOTTED = 60, 6


def fold_as_of(log: EventLog, as_of: int) -> ItemFold:
    """The item fold of the log's first ``as_of`` events (a rebuild: past states have no
    checkpoint). A past state never changes (the log only grows, and a later retraction is
    past ``as_of``), so the last few are kept."""
    key = (log.paths.root, as_of)
    with _PAST_LOCK:
        fold = _PAST.get(key)
    if fold is None:
        fold = _fold(log, as_of)
        with _PAST_LOCK:
            _PAST[key] = fold
            while len(_PAST) > _PAST_KEPT:
                _PAST.pop(next(iter(_PAST)))
    return fold


_PAST: dict[tuple[str, int], ItemFold] = {}
_PAST_LOCK = threading.Lock()
_PAST_KEPT = 4


def _fold(log: EventLog, as_of: int) -> ItemFold:
    from evolog.projections import load_memgraph
    from evolog.projections.memory import FOLD_KINDS, ItemFold

    graph = load_memgraph(log, as_of=as_of)
    retractions = log.replay(as_of, kinds=["retraction"])
    return ItemFold.rebuild(
        log.replay(as_of, kinds=FOLD_KINDS),
        retractions,  # type: ignore[arg-type]
        lambda _: graph,
    )


def _evidence(con: duckdb.DuckDBPyConnection, ids: list[str]) -> dict[str, list[tuple[int, str]]]:
    """Per item, (seq, status) of every outcome crediting it."""
    if not ids:
        return {}
    rows = _rows(
        con,
        "SELECT seq, status, list_concat(coalesce(supported_by, []), coalesce(decided_by, [])) "
        "AS who FROM outcomes WHERE len(list_intersect(list_concat(coalesce(supported_by, []), "
        "coalesce(decided_by, [])), ?)) > 0 ORDER BY seq",
        [ids],
    )
    out: dict[str, list[tuple[int, str]]] = {}
    wanted = set(ids)
    for r in rows:
        for who in set(r["who"]) & wanted:
            out.setdefault(who, []).append((r["seq"], r["status"]))
    return out


def _plot(evidence: dict[str, list[tuple[int, str]]], ids: list[str]) -> str:
    series = []
    for i in ids[:PLOTTED]:
        wins = fails = 0
        pts: list[tuple[float, float]] = []
        for seq, status in evidence.get(i, []):
            wins += status == "success"
            fails += status in ("failed", "failure")
            pts.append((seq, (wins / (wins + fails)) if wins + fails else 0.0))
        if pts:
            series.append((i, pts))
    return line_plot(
        series,
        title="success rate of the most used items over the log",
        x_label="seq",
        y_label="success",
    )


def _lineage(con: duckdb.DuckDBPyConnection) -> tuple[dict[str, str], dict[str, list[str]]]:
    cycles = {r["node"]: r["cycle"] for r in _rows(con, "SELECT node, cycle FROM nodes", [])}
    merged: dict[str, list[str]] = {}
    for r in _rows(con, "SELECT node, merged FROM merges ORDER BY seq", []):
        merged.setdefault(r["node"], []).append(r["merged"])
    return cycles, merged


def _item(
    item: MemoryItem,
    fold: ItemFold,
    ledger: LedgerView,
    evidence: Any,
    cycles: dict[str, str],
    merged: dict[str, list[str]],
) -> str:
    e = ledger.entry(item.id)
    if e is None:
        state = "no ledger entry"
    elif e.alive:
        state = f"alive, energy {e.energy:.3f}" + (", pinned" if e.pinned else "")
    else:
        state = f"dead ({e.cause})"
    wins, fails, _ = fold.evidence(item)
    seen = evidence.get(item.id, [])
    last = f", last credited at #{seen[-1][0]}" if seen else ""
    lineage = []
    if item.kind == "strategy" and item.id in cycles:
        lineage.append(f"dreamed in cycle {text(cycles[item.id])}")
    if merged.get(item.id):
        lineage.append("merged " + text(", ".join(merged[item.id]), 300))
    if item.sources:
        lineage.append(f"{text(item.reason or 'merge')} of " + text(", ".join(item.sources), 300))
    if item.archived_by:
        lineage.append(f"archived into {text(item.archived_by)}")
    if item.version > 1:
        lineage.append(f"version {item.version} (written at #{item.written_seq})")
    actions = ""
    if e is not None and e.alive:
        actions += (
            button("unpin", "unpin", entry=item.id)
            if e.pinned
            else (button("pin", "pin", entry=item.id) + button("forget", "forget", entry=item.id))
        )
    if item.kind == "note":
        actions += button("edit", "edit", item=item.id, branch=item.branch)
    return (
        f'<tr class="mem {text(item.kind)}" data-item="{text(item.id)}"><td><code>'
        f"{text(item.id)}</code><br><small>{text(item.kind)} · {text(item.branch)}</small></td>"
        f'<td class="text">{memory_text(item.text, 400)}</td>'
        f"<td>{wins} ok / {fails} failed, {item.accesses} recall(s){last}</td>"
        f'<td class="state">{text(state)}</td><td>{"; ".join(lineage)}</td>'
        f"<td>{actions}</td></tr>"
    )


def memory(
    con: duckdb.DuckDBPyConnection, fold: ItemFold, ledger: LedgerView, recalled: str
) -> str:
    items: Iterable[MemoryItem] = fold.state.items.values()
    ranked = sorted(items, key=lambda i: (-i.accesses, -i.written_seq))[:SHOWN]
    ids = [i.id for i in ranked]
    evidence = _evidence(con, ids)
    cycles, merged = _lineage(con)
    out = [
        '<section class="memory"><h2>Memory</h2>',
        recalled,
        _plot(evidence, ids),
        f'<p class="meta">{len(fold.state.items)} item(s); the {len(ranked)} most recalled '
        "shown</p><table><thead><tr><th>item</th><th>text</th><th>evidence</th>"
        "<th>ledger</th><th>lineage</th><th></th></tr></thead><tbody>",
    ]
    out += [_item(i, fold, ledger, evidence, cycles, merged) for i in ranked]
    out.append("</tbody></table>")
    out.append(_cycles(con))
    out.append("</section>")
    return "".join(out)


def _cycles(con: duckdb.DuckDBPyConnection) -> str:
    rows = _rows(
        con,
        "SELECT b.seq, b.cycle, b.dreamer, len(b.traces) AS traces, "
        "(SELECT count(*) FROM nodes n WHERE n.cycle = b.cycle) AS nodes, "
        "EXISTS (SELECT 1 FROM retractions r WHERE r.target_cycle = b.cycle) AS undone "
        "FROM dream_begins b ORDER BY b.seq DESC LIMIT 30",
        [],
    )
    out = ['<h3>Dream cycles</h3><ul class="cycles">']
    for r in rows:
        act = "undone" if r["undone"] else button("undo", "undo", cycle=r["cycle"])
        out.append(
            f'<li class="cycle" data-cycle="{text(r["cycle"])}">#{r["seq"]} '
            f"<code>{text(r['cycle'])}</code> by {text(r['dreamer'])}: {r['traces']} "
            f"trace(s), {r['nodes']} node(s) {act}</li>"
        )
    out.append("</ul>")
    return "".join(out)


def recalled(result: Any | None, query: str) -> str:
    """What recall gives for ``query`` (not recorded), each item with its scores."""
    if not query:
        return (
            '<p class="meta">Type a recall query above to see what recall would give, and why.</p>'
        )
    out = [f'<div class="recall"><h3>recall for <q>{text(query)}</q></h3>']
    if result is None or not result.items:
        out.append("<p>nothing would be recalled</p></div>")
        return "".join(out)
    out.append(
        f'<p class="meta">{result.considered} candidate(s), {result.chars} of '
        f"{result.budget} chars</p><ol>"
    )
    for i in result.items:
        out.append(
            f'<li class="recalled" data-item="{text(i.id)}"><code>{text(i.id)}</code> '
            f"({text(i.kind)}) score {i.score:.3f} = similarity {i.similarity:.3f}, decay "
            f"{i.decay:.3f}, quality {i.quality:.3f}; {i.helpful}/{i.harmful}/{i.neutral} "
            f"helpful/harmful/neutral; {text(i.why)}<br>{memory_text(i.text, 300)}</li>"
        )
    out.append("</ol></div>")
    return "".join(out)


__all__ = ["fold_as_of", "memory", "recalled"]
