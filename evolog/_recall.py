"""``recall``: the items to inject for a query, as a block within a budget and as data.

:func:`recall` refreshes the store's item index (:class:`projections.memory.ItemIndex`),
ranks with :func:`advice.recall.rank`, keeps the items that apply (at most ``top_n``),
renders the block (:func:`advice.recall.render`, never past ``budget_chars``) and, when
``record`` is set and something was injected, appends one ``recall`` event naming the
injected items, their scores and the attempt they serve. Access counts and decay come from
those events only, so a recall that is not injected (``record=False``) changes nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Sequence
from typing import Any

import msgspec

from evolog.advice import check_length
from evolog.eventlog import EventLog, Recall, Snapshot
from evolog.projections import InvalidParameterError
from evolog.projections.memory import (
    BACKBONE,
    GENE,
    GENE_BRANCH,
    STRATEGY,
    ItemIndex,
    MemoryConfig,
    load_config,
)

__all__ = [
    "RecallResult",
    "RecalledItem",
    "advice_lines",
    "digest",
    "recall",
    "routed_strategy",
    "session_items",
    "shown_json",
    "shown_route",
]


class RecalledItem(msgspec.Struct, frozen=True, kw_only=True):
    """One injected item: what it says and why it was chosen."""

    id: str
    kind: str
    branch: str
    score: float
    similarity: float
    decay: float
    quality: float
    helpful: int
    harmful: int
    neutral: int
    text: str
    tags: list[str] = []
    steps: list[str] = []
    constraints: list[str] = []
    why: str = ""


class RecallResult(msgspec.Struct, frozen=True, kw_only=True):
    """The block to inject (``text``, "" for nothing) and the structured list behind it.

    ``considered`` counts the active items sharing a word with the query (the candidates
    before branch, survival and applicability filters; only the best are scored)."""

    query: str
    text: str
    items: list[RecalledItem]
    considered: int
    null_similarity: float
    chars: int
    budget: int
    recorded: int | None = None
    advice: dict[str, Any] | None = None
    encoder: str = ""


def digest(query: str) -> str:
    """The query's digest in ``recall`` events (16 hex digits of BLAKE2b)."""
    return hashlib.blake2b(query.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def _count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidParameterError(f"{name}: expected an integer >= 0; got {value!r}")
    return value


def recall(
    log: EventLog,
    index: ItemIndex,
    query: str,
    *,
    budget_chars: int | None = None,
    top_n: int | None = None,
    threshold: float | None = None,
    branches: Collection[str] | None = None,
    include_dead: bool = False,
    survival: bool = True,
    action_id: str = "",
    record: bool = True,
    advice_lines: Sequence[str] = (),
    signals: Sequence[str] = (),
    config: MemoryConfig | None = None,
    envelope: dict[str, Any] | None = None,
    url: str = "",
) -> RecallResult:
    """Rank, cut to ``top_n`` and the budget, and (if ``record``) append a ``recall`` event.

    With ``signals``, gene items tried for those signals compete with the others on score
    (see :func:`advice.recall.rank_genes`). ``url``: the worker or server serving the
    caller, which the block names as a place to fetch details from."""
    from evolog.advice.recall import distinct, rank, rank_genes, render

    if not isinstance(query, str):
        raise InvalidParameterError(f"query: expected text; got {type(query).__name__}")
    check_length(query, "query", InvalidParameterError)
    cfg = config or load_config(log.path)
    budget = _count("budget_chars", cfg.budget_chars if budget_chars is None else budget_chars)
    limit = _count("top_n", cfg.top_n if top_n is None else top_n)
    if threshold is not None:
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
            raise InvalidParameterError(f"threshold: expected a number; got {threshold!r}")
        if not 0 <= threshold < float("inf"):
            raise InvalidParameterError(f"threshold: expected a number >= 0; got {threshold!r}")
        cfg = msgspec.structs.replace(cfg, retrieval_threshold=float(threshold))
    if isinstance(branches, str):
        raise InvalidParameterError(f"branches: expected a list of branches; got {branches!r}")

    def ranked() -> tuple[list[Any], list[Any], float, int]:
        with log.snapshot() as snap:
            fold = index.refresh(snap, log)
            dead = (
                index.dead_entries(log, snap)
                if survival and (fold.state.items or fold.state.genes)
                else frozenset()
            )
            index.save_if_due(snap)
        candidates, null, considered = rank(
            fold, query, cfg, dead=dead, include_dead=include_dead, branches=branches, limit=limit
        )
        chosen = [c for c in candidates if c.applies]
        if any(i.kind == STRATEGY for i in fold.state.items.values()):
            # Strategies are the router's to choose, not the words': what recall injects as
            # the strategy is what `evolog route` answers for the same text.
            chosen = [c for c in chosen if c.kind != STRATEGY]
            routed = routed_strategy(log, query, include_dead=include_dead, dead=dead)
            encoder[:] = [routed[1]]
            pick = fold.state.items.get(routed[0] or "")
            if (
                pick is not None
                and pick.kind == STRATEGY
                and pick.active
                and (branches is None or pick.branch in branches)
                and (include_dead or pick.id not in dead)
            ):
                chosen.insert(0, _routed_candidate(fold, pick, routed[2]))
        chosen = chosen[:limit]
        if signals and (branches is None or GENE_BRANCH in branches):
            genes = rank_genes(fold, signals, cfg, dead=dead, include_dead=include_dead)
            chosen = [*chosen, *(g for g in genes if g.applies)]
            chosen.sort(key=lambda c: (-c.score, c.id))
            chosen = chosen[:limit]
        st = fold.state
        items = [st.genes[c.id] if c.kind == GENE else st.items[c.id] for c in chosen]
        chosen, items = distinct(chosen, items)
        return chosen, items, null, considered

    encoder: list[str] = []
    # Every read of the fold happens in ranked(): a damaged checkpoint found there is
    # dropped and the ranking redone from the log, before anything is appended.
    chosen, items, null, considered = index.guarded(ranked)
    counts = [c.evidence for c in chosen]
    text, kept = render(items, budget, advice_lines, counts=counts, url=url)
    chosen = chosen[:kept]
    out = [
        RecalledItem(
            id=c.id,
            kind=c.kind,
            branch=c.branch,
            score=c.score,
            similarity=c.similarity,
            decay=c.decay,
            quality=c.quality,
            helpful=c.evidence[0],
            harmful=c.evidence[1],
            neutral=c.evidence[2],
            text=i.text,
            tags=list(i.tags),
            steps=list(i.steps),
            constraints=list(i.constraints),
            why=c.why,
        )
        for c, i in zip(chosen, items, strict=False)
    ]
    seq = None
    if record and out:
        event = Recall(
            digest=digest(query),
            items=[r.id for r in out],
            scores=[r.score for r in out],
            action_id=action_id,
            chars=len(text),
            budget=budget,
            encoder=encoder[0] if encoder else "",
            **(envelope or {}),
        )
        seq = log.append(event)
    return RecallResult(
        query=query,
        text=text,
        items=out,
        considered=considered,
        null_similarity=null,
        chars=len(text),
        budget=budget,
        recorded=seq,
        encoder=encoder[0] if encoder else "",
    )


def routed_strategy(
    log: EventLog,
    query: str,
    *,
    include_dead: bool = False,
    dead: Collection[str] | None = None,
) -> tuple[str | None, str, Any]:
    """The strategy node `evolog route` sends ``query`` to (None for zero-shot), the name of
    the embedder that decided, and the router's entry point: the one retrieval and
    applicability path that route, recall, the hook, the server and MCP share. ``dead``:
    the survival ledger's dead entries, when the caller has them."""
    from evolog.advice import Router, RouterPath

    buried = None if dead is None else dict.fromkeys(dead, "dead")
    router = Router.from_log(log, include_dead=include_dead, dead=buried)
    if not query.strip():
        return None, router.index.embedder.name, None
    decision = router.route(query)
    entry = decision.entry if decision.path is RouterPath.MEMORY_TRAVERSAL else None
    return (entry.node if entry else None), router.index.embedder.name, entry


def _routed_candidate(fold: Any, item: Any, entry: Any) -> Any:
    """The routed strategy as a recall candidate: its score is the router's composite."""
    from evolog.advice.recall import Candidate

    h, x, n = fold.evidence(item)
    quality = 0.5 + (0.5 if h + x + n == 0 else h / (h + x + n))
    why = (
        f"routed: similarity {entry.similarity:.3f}, composite {entry.composite:.3f}"
        f" (helpful {h}, harmful {x}, neutral {n})"
    )
    return Candidate(
        item.id, item.kind, item.branch, entry.composite, entry.similarity, 1.0,
        round(quality, 6), (h, x, n), True, why,
    )  # fmt: skip


def shown_json(result: dict[str, Any]) -> dict[str, Any]:
    """A recall answer (:func:`recall`'s result as JSON) for a model to read, as the MCP
    ``recall`` tool returns it: each item's text, steps, constraints, branch and tags are
    display-safe as in the block (:mod:`projections.memory._untrusted`), since a model reads
    the whole answer, not only its ``text``. The HTTP route keeps them as stored."""
    from evolog.projections.memory import safe_text

    def shown(item: dict[str, Any]) -> dict[str, Any]:
        out = dict(item)
        for key in ("text", "branch"):
            if isinstance(out.get(key), str):
                out[key] = safe_text(out[key], 4000)
        for key in ("tags", "steps", "constraints"):
            if isinstance(out.get(key), list | tuple):
                out[key] = [safe_text(str(v), 4000) for v in out[key]]
        return out

    return {**result, "items": [shown(i) for i in result.get("items") or []]}


def shown_route(result: dict[str, Any]) -> dict[str, Any]:
    """A route answer (``route_json``) for a model to read, as the MCP ``route`` tool returns
    it: every text in it (goals, summaries, steps, constraints, reasons) is display-safe as in
    the injected block, since graph nodes dreamed before texts were made safe at dream time
    still hold tool output as it came. Numbers, booleans and the path are unchanged."""
    from evolog.projections.memory import safe_text

    def shown(value: Any) -> Any:
        if isinstance(value, str):
            return safe_text(value, 4000)
        if isinstance(value, list | tuple):  # msgspec.to_builtins keeps tuples
            return [shown(v) for v in value]
        if isinstance(value, dict):
            return {k: shown(v) for k, v in value.items()}
        return value

    return {k: (v if k == "path" else shown(v)) for k, v in result.items()}


def session_items(
    index: ItemIndex, snap: Snapshot, log: EventLog, branches: Sequence[str]
) -> list[str]:
    """Ids to inject at a session's start: the backbone, then the given branches' notes,
    each most recently written first (no query: nothing to rank by but recency)."""
    wanted = [BACKBONE, *(b for b in branches if b != BACKBONE)]

    def pick() -> list[str]:
        fold = index.refresh(snap, log)
        out: list[str] = []
        for branch in wanted:
            picked = [
                i
                for i in fold.state.items.values()
                if i.active and i.branch == branch and i.kind != STRATEGY
            ]
            picked.sort(key=lambda i: (-i.written_seq, i.id))
            out.extend(i.id for i in picked)
        return out

    return index.guarded(pick)


def advice_lines(advice: Any) -> tuple[list[str], dict[str, Any]]:
    """The block's gene-advice lines for an :class:`evolog.advice.Advice`, and its JSON."""
    lines: list[str] = []
    if advice.preferred_gene_id:
        lines.append(
            f"Advice for signals {advice.current_signal_key}: prefer gene "
            f"{advice.preferred_gene_id}."
        )
    if advice.banned_gene_ids:
        banned = ", ".join(str(g) for g in advice.banned_gene_ids)
        lines.append(f"Avoid genes (they keep failing here): {banned}.")
    return lines, advice.to_json()


def strategy_ids(log: EventLog, index: ItemIndex) -> list[str]:
    """Active strategy items: the genes advice chooses among when none are given."""
    with log.snapshot() as snap:
        fold = index.refresh(snap, log)
    return sorted(i.id for i in fold.state.items.values() if i.kind == STRATEGY and i.active)
