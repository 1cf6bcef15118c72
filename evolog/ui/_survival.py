"""Survival (energy over the log per entry, deaths and their causes, the graveyard) and edges
(per signal key by gene: success rate and decayed weight as a heat map)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._page import button, text
from ._svg import heat_map, line_plot

if TYPE_CHECKING:
    import pyarrow as pa

    from evolog.projections import LedgerView

#: Entries whose energy is plotted (the highest balances), and heat-map rows and columns.
PLOTTED, KEYS, GENES = 8, 30, 16


def survival(view: LedgerView, history: LedgerView) -> str:
    """``view`` has every entry; ``history`` the notes of the plotted ones."""
    entries = view.entries()
    alive = sorted((e for e in entries if e.alive), key=lambda e: -e.energy)
    series = []
    for e in alive[:PLOTTED]:
        h = history.entry(e.id)
        notes = h.history or [] if h is not None else []
        series.append((e.id, [(float(n.seq), n.energy) for n in notes]))
    s = view.summary()
    deaths = ", ".join(f"{k} {v}" for k, v in sorted(s["deaths"].items()))
    out = [
        '<section class="survival"><h2>Survival</h2>',
        f'<p class="meta">as of seq {s["as_of_seq"]}, tick {s["tick"]}: {s["alive"]} alive, '
        f"{s['dead']} dead ({text(deaths or 'none')}), {s['pending']} pending</p>",
        line_plot(series, title="energy of the strongest entries", x_label="seq", y_label="energy"),
        "<h3>Alive</h3><table><thead><tr><th>entry</th><th>energy</th><th>uses</th>"
        "<th>last used</th><th>pinned</th><th></th></tr></thead><tbody>",
    ]
    for e in alive[:200]:
        acts = (
            button("unpin", "unpin", entry=e.id)
            if e.pinned
            else (button("pin", "pin", entry=e.id) + button("forget", "forget", entry=e.id))
        )
        out.append(
            f'<tr class="alive" data-entry="{text(e.id)}"><td><code>{text(e.id)}</code>'
            f"</td><td>{e.energy:.3f}</td><td>{e.uses}</td><td>"
            f"{'' if e.last_used_tick is None else e.last_used_tick}</td>"
            f"<td>{'yes' if e.pinned else ''}</td><td>{acts}</td></tr>"
        )
    out.append(
        "</tbody></table><h3>Graveyard</h3><table><thead><tr><th>entry</th>"
        "<th>cause</th><th>died</th><th>merged into</th><th>lineage</th></tr></thead>"
        "<tbody>"
    )
    for e in sorted(view.graveyard(), key=lambda e: -(e.died_seq or 0))[:200]:
        out.append(
            f'<tr class="dead" data-entry="{text(e.id)}"><td><code>{text(e.id)}</code>'
            f'</td><td class="cause">{text(e.cause)}</td><td>tick {e.died_tick}, '
            f"#{e.died_seq}</td><td>{text(e.merged_into or '')}</td>"
            f"<td>{text(', '.join(e.lineage), 300)}</td></tr>"
        )
    out.append("</tbody></table></section>")
    return "".join(out)


def edges(table: pa.Table) -> str:
    rows: list[dict[str, Any]] = table.select(
        ["signal_key", "gene", "attempts", "p", "weight", "success", "fail"]
    ).to_pylist()
    by_key: dict[str, int] = {}
    by_gene: dict[str, int] = {}
    for r in rows:
        by_key[r["signal_key"]] = by_key.get(r["signal_key"], 0) + r["attempts"]
        by_gene[r["gene"]] = by_gene.get(r["gene"], 0) + r["attempts"]
    keys = sorted(by_key, key=lambda k: (-by_key[k], k))[:KEYS]
    genes = sorted(by_gene, key=lambda g: (-by_gene[g], g))[:GENES]
    cells = {(r["signal_key"], r["gene"]): (r["p"] or 0.0, r["weight"] or 0.0) for r in rows}
    out = [
        '<section class="edges"><h2>Edges</h2>',
        f'<p class="meta">{len(rows)} edge(s) over {len(by_key)} signal key(s) and '
        f"{len(by_gene)} gene(s); the most tried shown</p>",
        heat_map(keys, genes, cells, title="success rate (colour, p) per signal key by gene"),
        "<table><thead><tr><th>signal key</th><th>gene</th><th>success</th><th>fail</th>"
        "<th>p</th><th>decayed weight</th></tr></thead><tbody>",
    ]
    for r in sorted(rows, key=lambda r: -r["attempts"])[:200]:
        out.append(
            f'<tr class="edge"><td>{text(r["signal_key"])}</td><td>{text(r["gene"])}'
            f"</td><td>{r['success']}</td><td>{r['fail']}</td><td>{r['p'] or 0:.3f}</td>"
            f"<td>{r['weight'] or 0:.3f}</td></tr>"
        )
    out.append("</tbody></table></section>")
    return "".join(out)


__all__ = ["edges", "survival"]
