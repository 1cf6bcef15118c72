"""Gene items: what the attempts and outcomes naming a gene say about it, as an item.

Genes live apart from the other items (``FoldState.genes``): they are recalled by the
caller's signals, not by the query's words, and take no part in the words' document
frequencies, the system activity or compression. A gene item lists the signals it was tried
for (the first :data:`MAX_GENE_SIGNALS`), counts its outcomes, and says both in its text;
its ACE evidence is the fold's, by id, like any item's.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Final

from evolog.eventlog import Attempt, Outcome

from ._items import GENE, GENE_BRANCH, MemoryItem
from ._text import term_freqs

__all__ = ["MAX_GENE_SIGNALS", "fold_gene"]

MAX_GENE_SIGNALS: Final = 32
_HISTORY: Final = 8
"""Ids of the latest events kept as a gene item's provenance."""


def fold_gene(
    genes: MutableMapping[str, MemoryItem], e: Attempt | Outcome, verdict: int | None
) -> None:
    """Fold an attempt (``verdict`` None) or an outcome (0 succeeded, 1 failed, 2 partial,
    None for other statuses) naming ``e.gene`` into its item."""
    gene = e.gene or ""
    item = genes.get(gene)
    if item is None:
        item = MemoryItem(
            id=gene, kind=GENE, branch=GENE_BRANCH, created_seq=e.seq, outcomes=[0, 0, 0]
        )
    seen = e.signals or ([e.key] if e.key else [])
    fresh = [x for x in dict.fromkeys(seen) if x and x not in item.signals]
    if fresh and len(item.signals) < MAX_GENE_SIGNALS:
        item.signals = [*item.signals, *fresh][:MAX_GENE_SIGNALS]
        item.tf = term_freqs(" ".join(item.signals))
    if verdict is not None:
        item.outcomes = [c + (i == verdict) for i, c in enumerate(item.outcomes)]
    if e.gene_category and e.gene_category not in item.tags:
        item.tags = [*item.tags, e.gene_category]
    item.written_seq = e.seq
    item.events = [*item.events[-(_HISTORY - 1) :], e.id]
    ok, failed, partial = item.outcomes
    tried = ", ".join(item.signals) or "no recorded signals"
    item.text = (
        f"Gene {gene}: tried for {tried}; outcomes: {ok} succeeded, {failed} failed, "
        f"{partial} partial."
    )
    genes[gene] = item
