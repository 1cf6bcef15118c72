"""ReasoningBank: structured entries (title, description, content) learnt from traces.

Every finished trace (successful *and* failed, as the upstream ReasoningBank learns from
failures too) that no run learnt from yet becomes an entry in the ``reasoning_bank``
branch: a success keeps the steps that worked, a failure what went wrong and the advice to
avoid it. Entries are deduplicated at cosine >= ``threshold`` (0.85) between embeddings of
title, description and content with the given embedder, or by exact text of the entry
(case and spacing aside) when embeddings are off (``embedder=None``); the older entry
stays and absorbs the newer one (its evidence is the older's). Whatever the cosine, two
entries whose contents give opposite instructions or list different steps stay apart
(:mod:`._guard`): at 0.85 a success and a failure of one task, or two step sequences of
it, could otherwise merge. That is the seed's rule (``rule="seed"``); by default
(``rule="align"``) it applies to the offline extraction's templated entries only, and
written entries (a model's, or any other text) are compared by word alignment of their
contents (:mod:`._align`), which catches rewordings the cosine misses (bench/RESULTS.md).
:meth:`ReasoningBank.recall` ranks entries for a query.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import numpy.typing as npt

from ._align import NEAREST, Aligner, check_rule, templated, threshold_for
from ._guard import may_merge
from ._items import EvolveContext, EvolveItem
from ._learn import absorb, actions, derived_id, failure, goal, learnable
from ._pipeline import Strategy

if TYPE_CHECKING:
    from evolog.projections import Embedder

    from .._traces import Trace

__all__ = ["BRANCH", "TAG", "ReasoningBank", "entry_from"]

Vectors = npt.NDArray[Any]
BLOCK: Final = 256
BRANCH: Final = "reasoning_bank"
TAG: Final = "reasoning_bank"


def entry_from(trace: Trace) -> EvolveItem:
    """The entry a trace teaches (see the module docstring)."""
    g = goal(trace)
    if trace.succeeded:
        steps = actions(trace)
        description = f"A way that worked to {g[0].lower()}{g[1:]}" if g else "A way that worked"
        content = "Steps: " + "; ".join(steps) if steps else f"Succeeded at: {g}"
        verdict = "success"
    else:
        description = f"A pitfall when trying to {g[0].lower()}{g[1:]}"
        content = f"Failed: {failure(trace)}. Avoid repeating it; try another approach."
        verdict = "failure"
    return EvolveItem(
        id=derived_id("rb", trace.id),
        branch=BRANCH,
        text=content,
        tags=(TAG, verdict),
        title=g,
        description=description,
        origin=TAG,
        seq=trace.seq,
    )


class ReasoningBank(Strategy):
    """Learn entries from traces, deduplicate them, recall them; see the module docstring."""

    name = "reasoning_bank"

    def __init__(self, *, threshold: float = 0.85, embed: bool = True, rule: str = "align") -> None:
        self.threshold = threshold
        self.embed = embed
        self.rule = check_rule(rule)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ReasoningBank) and (self.threshold, self.embed, self.rule) == (
            other.threshold,
            other.embed,
            other.rule,
        )

    def __hash__(self) -> int:
        return hash((self.name, self.threshold, self.embed, self.rule))

    def evolve(self, items: Sequence[EvolveItem], context: EvolveContext) -> list[EvolveItem]:
        have = {i.id for i in items} | context.known
        new = [entry_from(t) for t in context.traces if learnable(t)]
        pool = [*items, *(e for e in new if e.id not in have)]
        embedder = context.embedder if self.embed else None
        return dedup(pool, self.threshold, embedder, self.rule)

    def recall(
        self,
        items: Sequence[EvolveItem],
        query: str,
        *,
        top_k: int = 5,
        embedder: Embedder | None = None,
    ) -> list[EvolveItem]:
        """The ``top_k`` entries most similar to ``query`` (substring match without an
        embedder, as the seed specifies)."""
        entries = [i for i in items if TAG in i.tags]
        if embedder is None:
            q = query.lower().strip()
            return [e for e in entries if q and q in e.body.lower()][:top_k]
        if not entries:
            return []
        vectors = embedder.embed([query, *(e.body for e in entries)])
        scores = vectors[1:] @ vectors[0]
        order = sorted(range(len(entries)), key=lambda k: (-float(scores[k]), k))
        return [entries[k] for k in order[:top_k] if float(scores[k]) > 0.0]


def dedup(
    pool: Sequence[EvolveItem],
    threshold: float,
    embedder: Embedder | None,
    rule: str = "align",
    *,
    nearest: int = NEAREST,
) -> list[EvolveItem]:
    """Drop entries that repeat an older one; the older absorbs each (its ``sources``).

    With ``rule="align"`` and an embedder that has a fitted threshold, written entries
    (not the offline templates) are compared by word alignment (:mod:`._align`) with each
    other only, the best-matching kept entry absorbing, each scored against its ``nearest``
    kept ones at most (:meth:`._align.Aligner.nearest`); the rest as the seed says.
    """
    entries = sorted((k for k, i in enumerate(pool) if TAG in i.tags), key=lambda k: pool[k].seq)
    if len(entries) < 2:
        return list(pool)
    keep_of: dict[int, int] = {}
    aligned = threshold_for(rule, embedder)
    if aligned is not None and embedder is not None:
        written = [k for k in entries if not templated(pool[k].text)]
        entries = [k for k in entries if templated(pool[k].text)]
        keep_of |= _aligned(pool, written, embedder, aligned, nearest)
    if len(entries) < 2:
        return absorb(pool, {k: keeper for k, keeper in keep_of.items() if keeper != k})
    if embedder is None:
        # The whole entry, not the content alone: two tasks solved by the same steps are
        # two lessons (content alone merged them: precision 0.53 on the bench's pairs).
        first: dict[str, int] = {}
        for k in entries:
            keep_of[k] = first.setdefault(" ".join(pool[k].body.lower().split()), k)
    else:
        vectors = embedder.embed([pool[k].body for k in entries])

        def allowed(old: int, new: int) -> bool:
            return may_merge(pool[entries[old]].text, pool[entries[new]].text)

        for k, pos in zip(entries, nearest_kept(vectors, threshold, allowed=allowed), strict=True):
            keep_of[k] = entries[pos]
    return absorb(pool, {k: keeper for k, keeper in keep_of.items() if keeper != k})


def _aligned(
    pool: Sequence[EvolveItem],
    written: list[int],
    embedder: Embedder,
    threshold: float,
    nearest: int,
) -> dict[int, int]:
    """Written entry -> the kept one it repeats (the best match at or above ``threshold``
    among its nearest kept entries, :meth:`._align.Aligner.nearest`)."""
    keep_of: dict[int, int] = {}
    if not written:
        return keep_of
    aligner = Aligner([pool[k].text for k in written], embedder, nearest)
    kept = np.zeros(len(written), dtype=bool)  # by position in ``written``
    for pos, k in enumerate(written):
        found = aligner.matches(pos, kept, threshold)
        if found:
            keep_of[k] = written[found[0]]
        else:
            kept[pos] = True
    return keep_of


def nearest_kept(
    vectors: Vectors,
    threshold: float,
    block: int = BLOCK,
    *,
    allowed: Callable[[int, int], bool] | None = None,
) -> list[int]:
    """For each row in order: the most similar earlier row that was kept, if their cosine
    reaches ``threshold`` (the earliest on a tie), else the row itself (it is kept). With
    ``allowed(kept, row)``, the most similar kept row it allows.

    The same answer as comparing each row with every kept row before it, one by one, but
    in blocks: the kept rows before a block are compared with all of it in one matrix
    product and only the block's own rows one by one, so 1e4 entries take a fraction of
    a second instead of minutes (a matrix-vector product per row re-read every kept row).
    """
    keeper = list(range(len(vectors)))
    kept: list[int] = []
    for start in range(0, len(vectors), block):
        rows = vectors[start : start + block]
        prior = np.asarray(kept, dtype=np.intp)
        before = vectors[prior] @ rows.T if len(prior) else None
        inside = rows @ rows.T
        local: list[int] = []  # rows of this block kept so far
        for j in range(len(rows)):
            if allowed is not None:
                found = _allowed_best(before, prior, inside, local, start, j, threshold, allowed)
                if found >= 0:
                    keeper[start + j] = found
                else:
                    local.append(j)
                continue
            best, sim = -1, -np.inf
            if before is not None:
                b = int(before[:, j].argmax())
                best, sim = int(prior[b]), float(before[b, j])
            if local:
                sims = inside[local, j]
                b = int(sims.argmax())
                if float(sims[b]) > sim:  # strictly: an earlier kept row wins a tie
                    best, sim = start + local[b], float(sims[b])
            if best >= 0 and sim >= threshold:
                keeper[start + j] = best
            else:
                local.append(j)
        kept.extend(start + j for j in local)
    return keeper


def _allowed_best(
    before: Vectors | None,
    prior: Vectors,
    inside: Vectors,
    local: list[int],
    start: int,
    j: int,
    threshold: float,
    allowed: Callable[[int, int], bool],
) -> int:
    """The kept row most similar to row ``start + j`` at or above ``threshold`` that
    ``allowed`` lets it merge into (the earliest on a tie), else -1."""
    found: list[tuple[float, int]] = []
    if before is not None:
        for b in np.flatnonzero(before[:, j] >= threshold):
            found.append((-float(before[b, j]), int(prior[b])))
    for q in local:
        if float(inside[q, j]) >= threshold:
            found.append((-float(inside[q, j]), start + q))
    for _, row in sorted(found):
        if allowed(row, start + j):
            return row
    return -1
