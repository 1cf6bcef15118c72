"""The ``evolog`` advice policy: evolver's idea, with its defects fixed.

For a query (signals ``Q``, candidate genes) and every gene ``g``, at time ``now``:

1. **Candidate keys.** Up to ``max_candidates`` keys from *all* history with Jaccard >=
   ``min_similarity`` (1/3, inclusive) between the query's and the key's matching sets
   (:mod:`._keysearch`: evolver's normalised signals, error texts with their digit runs
   masked, so ``timeout after 646ms`` and ``timeout after 1200ms`` are one signal).
2. **Edge evidence, decayed per event.** For each candidate key ``k`` with similarity
   ``sim_k``: ``s_k = Σ_success 2^(-age_i/h)``, ``f_k = Σ_failed 2^(-age_i/h)`` (h = 30 days;
   each outcome ages on its own). Pooled: ``S = Σ sim_k·s_k``, ``F = Σ sim_k·f_k``,
   ``n = S + F``. The attempts reported and the estimate come from this same evidence.
3. **Gene prior.** ``π = (S_g + 1) / (S_g + F_g + 2)`` over all the gene's outcomes on any key,
   decayed per event with h = 45 days (Laplace-smoothed toward 1/2).
4. **Estimate.** ``mean = (S + m·π) / (n + m)`` (m = ``prior_strength`` = 2: the prior counts
   as two observations), ``sd = sqrt(mean·(1 - mean) / (n + m + 1))`` and
   ``score = mean + exploration·w·sd`` — optimism in proportion to what is still unknown, so
   stale or thin evidence is re-tested instead of trusted or condemned. ``w = min(1, N / (k·G))``
   with ``N`` the local evidence ``n`` summed over the ``G`` genes asked about and ``k`` =
   ``explore_evidence_per_gene`` = 2 (0: ``w = 1``): a try pays off only through later
   visits to the same neighbourhood, so where there is little traffic for many genes the
   bonus shrinks toward the estimate (chosen by regret in bench/bench_advice_sim.py, where a
   constant bonus re-tested dozens of thin genes in a sparse world).
5. **Bans** (not with drift) need evidence of failure: ``F >= ban_min_failures`` and
   ``mean < ban_below``; or, with almost no local evidence (``n < 1``), a gene failing
   everywhere: ``F_g >= prior_ban_min_failures`` and ``π < prior_ban_below``. Age only
   shrinks evidence, so staleness moves a gene back toward its prior, never into a ban.
6. **Decision.** Genes are ranked by score (ties keep the caller's order); the pick is the
   best *non-banned* one. ``prefer`` means evidence: the pick is also the best by ``mean``
   and rests on more than ``prefer_min_evidence`` (1) effective local outcomes ``n`` — one
   outcome weighs at most 1 and starts decaying at once, so it is never a preference.
   Otherwise the pick is an optimistic bet: the status is ``explore``, nothing is preferred,
   and ``explore`` names the pick (``explore:optimistic:<gene>``; the evidence-best gene is
   named too). If the pick has no evidence at all (no edge on any candidate key and no
   outcome anywhere) ``explore`` lists every untried gene instead of picking one by list
   position (``explore:no_evidence``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import msgspec
from evolog.eventlog.schema import compute_signal_key, normalize_signals_for_matching, to_fixed

from ._errors import InvalidInputError
from ._keysearch import match_signals
from ._state import AdviceState
from .evolver._export import iso_ms

MAX_BANS_EXPLAINED = 6


class EvologParams(msgspec.Struct, frozen=True):
    """Tunable constants of the ``evolog`` policy (see the module docstring)."""

    min_similarity: float = 1 / 3
    max_candidates: int = 32
    prior_strength: float = 2.0
    exploration: float = 1.0
    explore_evidence_per_gene: float = 2.0
    prefer_min_evidence: float = 1.0
    ban_below: float = 0.2
    ban_min_failures: float = 3.0
    prior_ban_below: float = 0.15
    prior_ban_min_failures: float = 5.0

    def __post_init__(self) -> None:
        for name in self.__struct_fields__:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise InvalidInputError(
                    f"evolog parameter {name}: expected a non-negative number; got {value!r}"
                )
        if not 0 < self.min_similarity <= 1 or self.max_candidates < 1:
            raise InvalidInputError(
                "evolog parameters: expected 0 < min_similarity <= 1 and max_candidates >= 1; "
                f"got {self.min_similarity!r} and {self.max_candidates!r}"
            )


class KeyEvidence(msgspec.Struct, frozen=True):
    """One candidate key's outcomes for a gene."""

    key: str
    sim: float
    success: int
    fail: int
    other: int
    weighted_success: float
    weighted_fail: float
    newest_ts: int

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "sim": self.sim,
            "success": self.success,
            "fail": self.fail,
            "other": self.other,
            "weighted_success": self.weighted_success,
            "weighted_fail": self.weighted_fail,
            "newest": iso_ms(self.newest_ts),
        }


class GeneScore(msgspec.Struct, frozen=True):
    """A gene's score and the evidence behind it."""

    gene_id: str
    score: float
    mean: float
    sd: float
    success: float  # S: decayed, similarity-weighted successes
    fail: float  # F
    outcomes: int  # raw outcomes on the candidate keys (any status)
    prior: float
    prior_success: float
    prior_fail: float
    prior_outcomes: int
    banned: bool
    ban_reason: str | None
    evidence: tuple[KeyEvidence, ...]

    @property
    def attempts(self) -> float:
        """The effective number of observations behind ``mean`` (``S + F``)."""
        return self.success + self.fail

    @property
    def untried(self) -> bool:
        return self.outcomes == 0 and self.prior_outcomes == 0

    def to_json(self) -> dict[str, Any]:
        return {
            "geneId": self.gene_id,
            "score": self.score,
            "mean": self.mean,
            "sd": self.sd,
            "attempts": self.attempts,
            "success": self.success,
            "fail": self.fail,
            "outcomes": self.outcomes,
            "prior": self.prior,
            "prior_success": self.prior_success,
            "prior_fail": self.prior_fail,
            "prior_outcomes": self.prior_outcomes,
            "banned": self.banned,
            "ban_reason": self.ban_reason,
            "evidence": [e.to_json() for e in self.evidence],
        }


class EvologDecision(msgspec.Struct, frozen=True):
    """The policy's answer before it is shaped as JSON."""

    current_signal_key: str
    status: str  # prefer | explore | all_banned | no_genes
    preferred_gene_id: str | None
    banned_gene_ids: tuple[str, ...]
    explanation: tuple[str, ...]
    scored: tuple[GeneScore, ...]
    explore: tuple[str, ...]
    candidate_keys: tuple[tuple[str, float], ...]


def gene_ids_of(genes: object) -> tuple[list[str], list[str]]:
    """(gene ids in order, warnings): objects with a string ``id`` (``type`` absent or
    ``"Gene"``) or plain strings; anything else is reported, not silently dropped."""
    if not isinstance(genes, list | tuple):
        raise InvalidInputError(f"genes: expected a list of gene objects; got {genes!r:.80}")
    ids: list[str] = []
    warnings: list[str] = []
    for i, g in enumerate(genes):
        gid = g if isinstance(g, str) else g.get("id") if isinstance(g, dict) else None
        kind = g.get("type", "Gene") if isinstance(g, dict) else "Gene"
        if not isinstance(gid, str) or not gid or kind != "Gene":
            warnings.append(f"genes[{i}]: expected a Gene with a non-empty string id; ignored")
        elif gid in ids:
            warnings.append(f"genes[{i}]: duplicate gene id {gid!r}; ignored")
        else:
            ids.append(gid)
    return ids, warnings


def _key_evidence(
    state: AdviceState, gid: int, cands: Sequence[tuple[int, float]], now_us: int
) -> tuple[KeyEvidence, ...]:
    out = []
    for kid, sim in cands:
        stat = state.edges.get(kid, gid)
        if stat is None:
            continue
        s, f = stat.decayed(now_us, state.edge_half_life_us)
        key = state.catalog.keys[kid]
        out.append(KeyEvidence(key, sim, stat.success, stat.fail, stat.other, s, f, stat.newest_t))
    return tuple(out)


def _score_gene(
    state: AdviceState,
    gene: str,
    cands: Sequence[tuple[int, float]],
    now_us: int,
    drift: bool,
    p: EvologParams,
) -> GeneScore:
    """The gene's estimate; its ``score`` is set by :func:`_with_scores`."""
    gid = state.gene_ids.get(gene)
    evidence = () if gid is None else _key_evidence(state, gid, cands, now_us)
    big_s = sum(e.sim * e.weighted_success for e in evidence)
    big_f = sum(e.sim * e.weighted_fail for e in evidence)
    gstat = None if gid is None else state.gene_stats.get(0, gid)
    sg, fg = (0.0, 0.0) if gstat is None else gstat.decayed(now_us, state.gene_half_life_us)
    prior = (sg + 1.0) / (sg + fg + 2.0)
    n = big_s + big_f
    mean = (big_s + p.prior_strength * prior) / (n + p.prior_strength)
    sd = math.sqrt(mean * (1.0 - mean) / (n + p.prior_strength + 1.0))
    reason = None
    if not drift and big_f >= p.ban_min_failures and mean < p.ban_below:
        reason = "failures"
    elif not drift and n < 1.0 and fg >= p.prior_ban_min_failures and prior < p.prior_ban_below:
        reason = "poor_prior"
    return GeneScore(
        gene_id=gene,
        score=mean,
        mean=mean,
        sd=sd,
        success=big_s,
        fail=big_f,
        outcomes=sum(e.success + e.fail + e.other for e in evidence),
        prior=prior,
        prior_success=sg,
        prior_fail=fg,
        prior_outcomes=0 if gstat is None else gstat.outcomes,
        banned=reason is not None,
        ban_reason=reason,
        evidence=evidence,
    )


def exploration_weight(ranked: Sequence[GeneScore], p: EvologParams) -> float:
    """``w`` of the module docstring: the share of the exploration bonus that applies."""
    if p.explore_evidence_per_gene <= 0 or not ranked:
        return 1.0
    traffic = sum(s.attempts for s in ranked)
    return min(1.0, traffic / (p.explore_evidence_per_gene * len(ranked)))


def _with_scores(ranked: list[GeneScore], p: EvologParams) -> list[GeneScore]:
    bonus = p.exploration * exploration_weight(ranked, p)
    return [msgspec.structs.replace(s, score=s.mean + bonus * s.sd) for s in ranked]


def evolog_decide(
    state: AdviceState,
    signals: object,
    genes: Sequence[str],
    drift: bool,
    now_us: int,
    params: EvologParams | None = None,
) -> EvologDecision:
    """Score ``genes`` for ``signals`` on the folded state at time ``now_us``."""
    p = params or EvologParams()
    cur_key = compute_signal_key(signals)
    catalog = state.catalog
    exact = catalog.exact_parts
    query = frozenset(normalize_signals_for_matching(signals)) if exact else match_signals(signals)
    cands = catalog.similar(query, p.min_similarity, p.max_candidates)
    ranked = _with_scores([_score_gene(state, g, cands, now_us, drift, p) for g in genes], p)
    banned = tuple(s.gene_id for s in ranked if s.banned)
    scored = tuple(sorted(ranked, key=lambda s: -s.score))  # stable: ties keep gene order
    allowed = [s for s in scored if not s.banned]
    top = allowed[0] if allowed else None
    # max() keeps the first of equal means, so ties go to the higher score, then gene order.
    best = max(allowed, key=lambda s: s.mean) if allowed else None
    explore: tuple[str, ...] = ()
    if not scored:
        status = "no_genes"
    elif top is None or best is None:
        status = "all_banned"
    elif top.untried:
        status = "explore"
        explore = tuple(s.gene_id for s in ranked if s.untried and not s.banned)
    elif top is best and top.attempts > p.prefer_min_evidence:
        status = "prefer"
    else:
        # An optimistic pick (thin evidence, or a bonus over a better-estimated gene) is worth
        # trying, but calling it preferred would present a bet as knowledge.
        status = "explore"
        explore = (top.gene_id,)
    preferred = top.gene_id if status == "prefer" and top is not None else None
    lines: list[str] = []
    if preferred is not None and top is not None:
        lines.append(f"memory_prefer:{preferred}")
    if banned:
        lines.append(f"memory_ban:{','.join(banned[:MAX_BANS_EXPLAINED])}")
    if preferred is not None and top is not None and top.prior_outcomes:
        lines.append(f"gene_prior:{to_fixed(top.prior, 3)}")
    if status == "explore" and top is not None and not top.untried:
        lines.append(f"explore:optimistic:{top.gene_id}")
        if best is not None and best is not top:
            lines.append(f"evidence_best:{best.gene_id}")
    elif status in ("explore", "all_banned"):
        lines.append("explore:no_evidence" if status == "explore" else "all_banned")
    if drift:
        lines.append("random_drift:enabled")
    keys = tuple((state.catalog.keys[k], s) for k, s in cands)
    return EvologDecision(cur_key, status, preferred, banned, tuple(lines), scored, explore, keys)
