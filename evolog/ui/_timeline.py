"""Timeline: sessions → prompts → the injected block and its items → steps → outcome → credit.

Read with one DuckDB connection over the log as of the chosen point: the newest attempts
that pass the filters, then only the steps, recalls and outcomes of those attempts (the page
never holds the whole log).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ._page import button, memory_text, text, when
from ._params import Filters

if TYPE_CHECKING:
    import duckdb


#: The typed views the pages read, by the event kind each holds.
KINDS = {
    "attempts": "attempt", "steps": "step", "recalls": "recall", "outcomes": "outcome",
    "notes": "note", "nodes": "node", "merges": "merge", "dream_begins": "dream_begin",
    "retractions": "retraction", "lifecycles": "lifecycle",
}  # fmt: skip
#: ``FROM view`` with an optional one-letter alias (the pages' SQL keywords are upper case).
_TYPED = re.compile(r"\bFROM (" + "|".join(KINDS) + r")(?: ([a-z]))?\b")


def _typed(sql: str) -> str:
    """``FROM attempts`` as a filter of ``events``: binding a catalog view costs about 10 ms
    per connection, so the pages open theirs with ``events`` alone."""
    return _TYPED.sub(
        lambda m: f"FROM (SELECT * FROM events WHERE kind = '{KINDS[m[1]]}') AS {m[2] or m[1]}",
        sql,
    )


def _rows(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> list[dict[str, Any]]:
    rel = con.execute(_typed(sql), params)
    names = [d[0] for d in rel.description]
    return [dict(zip(names, row, strict=True)) for row in rel.fetchall()]


#: The first window of seqs searched for the newest attempts (then eight times wider, until
#: the page is full or the log is covered).
WINDOW = 20_000


def attempts(con: duckdb.DuckDBPyConnection, f: Filters, upto: int) -> list[dict[str, Any]]:
    """The newest attempts at or before seq ``upto`` that pass the filters. A scan bounded
    by seq skips the segments before it, and the newest attempts are near the head."""
    where, params = ["seq > ?"], []
    for name in ("agent", "session"):
        value = getattr(f, name)
        if value:
            where.append(f"{name} = ?")
            params.append(value)
    if f.since is not None:
        where.append("epoch_us(ts) >= ?")
        params.append(f.since)
    if f.until is not None:
        where.append("epoch_us(ts) <= ?")
        params.append(f.until)
    sql = (
        "SELECT seq, epoch_us(ts) AS ts, action_id, task, agent, session, supported_by, gene "
        f"FROM attempts WHERE {' AND '.join(where)} ORDER BY seq DESC LIMIT ?"
    )
    window = WINDOW
    while True:
        low = max(0, upto - window)
        rows = _rows(con, sql, [low, *params, f.limit])
        if len(rows) >= f.limit or low == 0:
            return rows
        window *= 8


def _by_action(con: duckdb.DuckDBPyConnection, ids: list[str], since: int) -> Any:
    """{kind: {action_id: [rows]}} of the attempts' steps, recalls and outcomes, in one scan
    (each scan of the log costs more than everything else on the page)."""
    out: dict[str, dict[str, list[dict[str, Any]]]] = {
        "step": {}, "recall": {}, "outcome": {}, "fetched": {},
    }  # fmt: skip
    if not ids:
        return out
    # An attempt's events follow it: the seq bound lets the scan skip older segments. Scores
    # are stored as JSON (any float, NaN included): read back as numbers.
    sql = (
        "SELECT kind, action_id, seq, epoch_us(ts) AS ts, index, action, tool, ok, error, "
        "duration_ms, items, CAST(scores AS DOUBLE[]) AS scores, chars, budget, status, score, "
        "delta, note, supported_by, decided_by, via FROM events WHERE kind IN ('step', "
        "'recall', 'outcome', 'fetched') AND seq >= ? AND list_contains(?, action_id) "
        "ORDER BY seq"
    )
    for row in _rows(con, sql, [since, ids]):
        out[row["kind"]].setdefault(row["action_id"], []).append(row)
    return out


def _item_texts(con: duckdb.DuckDBPyConnection, ids: set[str]) -> dict[str, str]:
    if not ids:
        return {}
    wanted = sorted(ids)
    rows = _rows(
        con,
        "SELECT kind, coalesce(nullif(item, ''), nullif(node, ''), id) AS item, "
        "coalesce(text, goal) AS text FROM events WHERE (kind = 'note' AND "
        "list_contains(?, coalesce(nullif(item, ''), id))) OR (kind = 'node' AND "
        "list_contains(?, node)) ORDER BY seq",
        [wanted, wanted],
    )
    out: dict[str, str] = {}
    for r in rows:
        if r["kind"] == "note":  # a note's latest version; a node's first statement
            out[r["item"]] = r["text"] or ""
        else:
            out.setdefault(r["item"], r["text"] or "")
    return out


def timeline(con: duckdb.DuckDBPyConnection, f: Filters, seq: int, credit: Any) -> str:
    """The view as of ``seq``. ``credit(ids)`` gives {entry: [(seq, what, amount, energy)]}."""
    rows = attempts(con, f, seq)
    ids = [r["action_id"] for r in rows]
    since = min((r["seq"] for r in rows), default=0)
    found = _by_action(con, ids, since)
    recalls, outcomes = found["recall"], found["outcome"]
    recalled = {i for rs in recalls.values() for r in rs for i in r["items"] or ()}
    texts = _item_texts(con, recalled)
    credited = {
        i
        for os in outcomes.values()
        for o in os
        for i in [*(o["supported_by"] or ()), *(o["decided_by"] or ())]
    }
    moves = credit(sorted(credited)) if credited else {}
    out = [
        f'<section class="timeline"><h2>Timeline</h2><p class="meta">{len(rows)} prompt(s), '
        f"newest first (at most {f.limit})</p>"
    ]
    first, session = True, ""
    for r in rows:
        if first or r["session"] != session:
            if not first:
                out.append("</div>")
            first, session = False, r["session"]
            out.append(
                f'<div class="session"><h3>session {text(session or "(none)")} · agent '
                f"{text(r['agent'] or '(none)')}</h3>"
            )
        out.append(_attempt(r, found, texts, moves))
    if rows:
        out.append("</div>")
    out.append("</section>")
    return "".join(out)


def _attempt(r: dict[str, Any], found: Any, texts: dict[str, str], moves: Any) -> str:
    aid = r["action_id"]
    steps, recalls, outcomes = found["step"], found["recall"], found["outcome"]
    out = [
        f'<article class="attempt" data-action="{text(aid)}"><h4>'
        f'<span class="seq">#{r["seq"]}</span> {when(r["ts"])} · '
        f'<q class="task">{text(r["task"] or "")}</q></h4>'
        f'<p class="meta">attempt {text(aid)}</p>'
    ]
    for rec in recalls.get(aid, []):
        out.append(
            f'<div class="block"><h5>injected block: {rec["chars"]} of {rec["budget"]} '
            "chars</h5><ol>"
        )
        for item, score in zip(rec["items"] or [], rec["scores"] or [], strict=False):
            out.append(
                f'<li class="item" data-item="{text(item)}"><code>{text(item)}</code> '
                f'<span class="score">score {score:.3f}</span> '
                f"{memory_text(texts.get(item, ''), 200)}</li>"
            )
        out.append("</ol></div>")
    for got in found["fetched"].get(aid, []):
        out.append(
            f'<p class="fetched">fetched by id: <code>{text(", ".join(got["items"] or []))}'
            f"</code> ({got['chars']} chars, via {text(got['via'] or '?')})</p>"
        )
    st = steps.get(aid, [])
    if st:
        out.append('<ol class="steps">')
        for s in st:
            state = "ok" if s["ok"] else ("failed" if s["ok"] is False else "unknown")
            took = f" · {s['duration_ms']:.0f} ms" if s["duration_ms"] is not None else ""
            err = f' <span class="err">{text(s["error"], 300)}</span>' if s["error"] else ""
            out.append(
                f'<li class="step {state}"><span class="badge">{state}</span> '
                f"{text(s['action'], 300)}{took}{err}</li>"
            )
        out.append("</ol>")
    for o in outcomes.get(aid, []):
        score = "" if o["score"] is None else f" score {o['score']:.2f}"
        delta = "" if o["delta"] is None else f" · delta {o['delta']:+.2f}"
        out.append(
            f'<div class="outcome {text(o["status"])}"><b>{text(o["status"])}</b>{score}'
            f'{delta} <span class="note">{text(o["note"] or "", 300)}</span>'
        )
        entries = list(dict.fromkeys([*(o["supported_by"] or ()), *(o["decided_by"] or ())]))
        if entries:
            out.append('<ul class="credit">')
            for e in entries:
                moved = [m for m in moves.get(e, []) if m[0] == o["seq"]]
                shown = ", ".join(f"{w} {a:+.3f} → {en:.3f}" for _, w, a, en in moved)
                out.append(f"<li>credit to <code>{text(e)}</code>: {text(shown or 'none')}</li>")
            out.append("</ul>")
        out.append("</div>")
    out.append("</article>")
    return "".join(out)


def steering(con: duckdb.DuckDBPyConnection, limit: int = 30) -> str:
    """The page's own actions (and anyone's lifecycle events and retractions), undoable."""
    # Their seqs first (a scan of two narrow columns), then their fields from there on: the
    # wide columns are read only where these few events are.
    seqs = [
        r["seq"]
        for r in _rows(
            con,
            "SELECT seq FROM events WHERE kind IN ('lifecycle', 'retraction', 'note') AND "
            "(kind <> 'note' OR agent = 'evolog-ui') ORDER BY seq DESC LIMIT ?",
            [limit],
        )
    ]
    rows = (
        _rows(
            con,
            "SELECT seq, id, kind, agent, entry, op, item, text, target_cycle, targets "
            "FROM events WHERE seq >= ? AND list_contains(?, seq) ORDER BY seq DESC",
            [min(seqs), seqs],
        )
        if seqs
        else []
    )
    out = ['<section class="steering"><h2>Steering</h2><ul>']
    for r in rows:
        if r["kind"] == "lifecycle":
            what = f"{r['op']} {r['entry']}"
        elif r["kind"] == "note":
            what = f"edit {r['item']}: {r['text'] or ''}"
        else:
            what = f"undo {r['target_cycle'] or ', '.join(r['targets'] or [])}"
        undo = button("undo", "retract", target=r["id"]) if r["kind"] != "retraction" else ""
        out.append(
            f'<li class="steer" data-id="{text(r["id"])}"><span class="seq">#{r["seq"]}'
            f"</span> {text(what, 200)} <i>by {text(r['agent'] or '?')}</i> {undo}</li>"
        )
    out.append("</ul></section>")
    return "".join(out)


__all__ = ["attempts", "steering", "timeline"]
