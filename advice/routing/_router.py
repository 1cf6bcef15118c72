"""Strategy routing: task text -> ZERO_SHOT, MEMORY_TRAVERSAL or CONTEXT_JUMP.

Candidates are the ``top_k`` live strategy nodes nearest to the task (cosine similarity of
embeddings, best over each node's goal texts). Each gets evolving-memory's composite::

    composite = 0.5 * similarity + 0.3 * confidence + 0.2 * success_rate

where ``success_rate`` is Laplace-smoothed, ``(s + 1) / (s + f + 2)``, over outcomes whose
provenance (``decided_by``/``supported_by``) names the node or a node merged into it.

evolving-memory routes to the best candidate whenever its composite reaches 0.4; since
confidence and success rate alone can contribute 0.5, it sent 73-100 % of unrelated tasks
to memory. Here a candidate must *also* apply to the task (:mod:`advice.routing._applicability`):
its similarity reaches a floor *and* beats the task's similarity to every generic task of
a fixed background sample by a margin (for wordllama: from the goal-with-summary text, plus
a weighted lexical margin, :mod:`advice.routing._lexical`). A floor alone let through
software tasks that only share vocabulary with a node (a third of them on held-out domains).
Floors and margins are fitted per embedder by cross-validation over held-out domains
(bench/); every weight and threshold is configurable.

With ``current`` (the node being traversed), the router checks drift: while the task stays
within ``anomaly_threshold`` of the current node it keeps the traversal; below it, it
returns CONTEXT_JUMP with the best other entry point, or ZERO_SHOT when none qualifies.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import msgspec
from evolog.eventlog import EventLog
from evolog.projections import (
    ConstraintView,
    Embedder,
    VectorIndex,
    get_embedder,
    graph_views,
    node_texts,
)
from evolog.projections.graph import GraphReader, Rows, embed_rows, sync_to_views

from .._errors import AdviceError
from .._limits import check_length
from ._applicability import Applicability, judge, null_for, rule_for
from ._lexical import lexical_evidence

__all__ = [
    "DEFAULT_FLOORS",
    "EntryPoint",
    "InvalidTaskError",
    "Plan",
    "PlanStep",
    "RouteDecision",
    "Router",
    "RouterConfig",
    "RouterError",
    "RouterPath",
]

DEFAULT_FLOORS: Final[Mapping[str, tuple[float, float]]] = {
    "hashing-1024": (0.19, 0.12),
    "wordllama-l2-256": (0.20, 0.25),
    # The drift threshold is not fitted for minilm: wordllama's, scaled to its floor.
    "minilm-l6-int8-1.0.0": (0.31, 0.3),
}
"""(min_similarity, anomaly_threshold) per embedder name; the similarity floor is the
applicability rule's (:data:`evolog.advice.routing._applicability.DEFAULT_RULES`)."""
_FALLBACK_FLOORS: Final = (0.5, 0.3)


class RouterError(AdviceError):
    """Base of the router's errors."""


class InvalidTaskError(RouterError, ValueError):
    """The task text or a node id given to the router is unusable."""


class RouterPath(enum.StrEnum):
    """The router's three answers."""

    ZERO_SHOT = "zero_shot"
    MEMORY_TRAVERSAL = "memory_traversal"
    CONTEXT_JUMP = "context_jump"


@dataclass(frozen=True, slots=True)
class RouterConfig:
    """Weights and thresholds; ``None`` floors take the embedder's calibrated defaults.

    ``min_margin`` is how far the best node must beat the task's nearest generic task (see
    :mod:`evolog.advice.routing._applicability`); a very negative value turns that check off.
    """

    similarity_weight: float = 0.5
    confidence_weight: float = 0.3
    success_weight: float = 0.2
    threshold: float = 0.4
    top_k: int = 5
    min_similarity: float | None = None
    anomaly_threshold: float | None = None
    min_margin: float | None = None

    def __post_init__(self) -> None:
        if self.top_k < 1:
            raise InvalidTaskError(f"top_k: expected a positive integer; got {self.top_k}")


class EntryPoint(msgspec.Struct, frozen=True):
    """A candidate node with everything its composite score was made of."""

    node: str
    goal: str
    summary: str
    similarity: float
    confidence: float
    success_rate: float
    successes: int
    failures: int
    composite: float


class PlanStep(msgspec.Struct, frozen=True):
    """One step of a strategy to follow."""

    id: str
    index: int
    reasoning: str
    action: str
    result: str


class Plan(msgspec.Struct, frozen=True):
    """A strategy to follow: its steps in order and the constraints learned around it."""

    node: str
    goal: str
    summary: str
    confidence: float
    steps: tuple[PlanStep, ...]
    constraints: tuple[ConstraintView, ...]


class RouteDecision(msgspec.Struct, frozen=True):
    """The router's answer; ``entry`` is set for MEMORY_TRAVERSAL and CONTEXT_JUMP."""

    path: RouterPath
    reasoning: str
    confidence: float
    entry: EntryPoint | None = None
    candidates: tuple[EntryPoint, ...] = ()
    previous: str | None = None


class Router:
    """Routes tasks over one memory graph and its vector index."""

    def __init__(
        self,
        graph: GraphReader,
        index: VectorIndex,
        config: RouterConfig | None = None,
        dead: Mapping[str, str] | None = None,
    ) -> None:
        self.graph = graph
        self.index = index
        self.config = config or RouterConfig()
        # Selection pressure: nodes the survival ledger buried are never entry points.
        self.dead = dict(dead or {})
        self._last_hits: list[str] = []
        floors = DEFAULT_FLOORS.get(index.embedder.name, _FALLBACK_FLOORS)
        rule = rule_for(index.embedder.name)
        self.min_similarity = _pick(self.config.min_similarity, floors[0])
        self.anomaly_threshold = _pick(self.config.anomaly_threshold, floors[1])
        self.rule = dataclasses.replace(
            rule,
            min_similarity=self.min_similarity,
            min_margin=_pick(self.config.min_margin, rule.min_margin),
        )
        # Per candidate of the current route: (null, summary similarity, lexical margin).
        self._nulls: dict[str, tuple[tuple[float, str], float | None, float]] = {}
        self._node_vectors: dict[str, Rows] = {}

    @classmethod
    def from_log(
        cls,
        log: EventLog,
        *,
        embedder: Embedder | None = None,
        config: RouterConfig | None = None,
        include_dead: bool = False,
        dead: Mapping[str, str] | None = None,
    ) -> Router:
        """The log's memory graph from its checkpoint (brought to the head of the log) and
        its cached vector index brought up to date with it.

        Nodes the survival ledger has buried are skipped unless ``include_dead``; ``dead``
        gives them when the caller knows them already (recall's item index does, without
        the ledger's numpy fold).
        """
        from evolog.projections import deaths

        if include_dead:
            dead = {}
        elif dead is None:
            dead = deaths(log)
        graph = graph_views(log)
        index = VectorIndex.open(embedder or get_embedder(), log.paths.cache)
        # Saved also when only the rows file is missing (a cache of an earlier version), so
        # that later cold routes search without numpy.
        if sync_to_views(index, graph) or index.wants_rows():
            # The index is a cache: routing works from memory even if it cannot be saved.
            with contextlib.suppress(Exception):
                index.save()
        return cls(graph, index, config, dead)

    # -- routing --------------------------------------------------------------------------
    def route(self, task: str, *, current: str | None = None) -> RouteDecision:
        """Decide how to handle ``task``; see the module docstring."""
        decision = self._route(task, current)
        skipped = [n for n in self._last_hits if n in self.dead]
        if not skipped:
            return decision
        notes = " ".join(f"ledger_skip:{n}:{self.dead[n]}" for n in skipped)
        return msgspec.structs.replace(decision, reasoning=f"{decision.reasoning}; {notes}")

    def _route(self, task: str, current: str | None) -> RouteDecision:
        vector = self._embed(task)
        candidates = self._candidates(vector)
        self._nulls = self._nearest_generic(task, vector, candidates)
        if current is not None:
            return self._check_drift(vector, candidates, current)
        eligible = [c for c in candidates if self._qualifies(c)]
        if eligible:
            best = eligible[0]
            verdict = self._judge(best)
            why = f"{best.node} applies: {verdict.why}; composite {best.composite:.3f}"
            return RouteDecision(
                RouterPath.MEMORY_TRAVERSAL, why, best.composite, best, tuple(candidates)
            )
        return self._zero_shot(candidates, "no memory node qualifies")

    def _embed(self, task: str) -> memoryview:
        if not isinstance(task, str) or not task.strip():
            raise InvalidTaskError(f"task: expected non-blank text; got {task!r:.80}")
        check_length(task, "task", InvalidTaskError)
        return embed_rows(self.index.embedder, [task]).row(0)

    def _candidates(self, vector: memoryview) -> list[EntryPoint]:
        hits = self.index.search(vector, self.config.top_k)
        self._last_hits = [node for node, _ in hits]
        scored = [self.score(node, sim) for node, sim in hits if self._live(node)]
        # Ties (often: two approaches to one task at equal confidence) go to the node with
        # more evidence behind it.
        return sorted(scored, key=lambda e: (-e.composite, -self._evidence(e.node), e.node))

    def _evidence(self, node_id: str) -> int:
        node = self.graph.node(node_id)
        return len(node.traces) if node is not None else 0

    def _live(self, node_id: str) -> bool:
        node = self.graph.node(node_id)
        return node is not None and node.live and node_id not in self.dead

    def _nearest_generic(
        self, task: str, vector: memoryview, candidates: list[EntryPoint]
    ) -> dict[str, tuple[tuple[float, str], float | None, float]]:
        # Only candidates past the floor need the evidence; their text vectors are cached.
        rule, nulls = self.rule, {}
        lexical = lexical_evidence() if rule.lexical_weight else None
        generic = lexical.generic_coverage(task) if lexical is not None else 0.0
        for c in candidates:
            if c.similarity < rule.min_similarity:
                continue
            rows = self._vectors_of(c.node)
            node = self.graph.node(c.node)
            summary = None
            if rule.summary_margin and node is not None and node.summary.strip() and len(rows):
                # node_texts puts the goal-with-summary text last.
                summary = rows.dots(vector)[-1]
            words = 0.0
            if lexical is not None and node is not None:
                words = lexical.coverage(task, node_texts(node)) - generic
            null = null_for(self.index.embedder, vector, rows, rule, self.index.directory)
            nulls[c.node] = (null, summary, words)
        return nulls

    def _vectors_of(self, node_id: str) -> Rows:
        vectors = self._node_vectors.get(node_id)
        if vectors is None:
            node = self.graph.node(node_id)
            texts = node_texts(node) if node is not None else ()
            vectors = embed_rows(self.index.embedder, list(texts))
            self._node_vectors[node_id] = vectors
        return vectors

    def _judge(self, entry: EntryPoint) -> Applicability:
        null, summary, words = self._nulls.get(entry.node, ((0.0, ""), None, 0.0))
        return judge(entry.similarity, null, self.rule, summary=summary, lexical=words)

    def _qualifies(self, entry: EntryPoint) -> bool:
        return self._judge(entry).applies and entry.composite >= self.config.threshold

    def score(self, node_id: str, similarity: float) -> EntryPoint:
        """The composite score of ``node_id`` at ``similarity``."""
        node = self.graph.node(node_id)
        if node is None:
            raise InvalidTaskError(f"node: expected a node of the memory graph; got {node_id!r}")
        s, f = self.graph.outcomes(node_id)
        rate = (s + 1) / (s + f + 2)
        cfg = self.config
        composite = (
            cfg.similarity_weight * similarity
            + cfg.confidence_weight * node.confidence
            + cfg.success_weight * rate
        )
        return EntryPoint(
            node_id, node.goal, node.summary, round(similarity, 6), node.confidence,
            round(rate, 6), s, f, round(composite, 6),
        )  # fmt: skip

    def _zero_shot(self, candidates: list[EntryPoint], why: str) -> RouteDecision:
        best = max(candidates, key=lambda e: e.similarity, default=None)
        if best is not None:
            verdict = self._judge(best)
            why += f" (nearest: {best.node}: {verdict.why}; composite {best.composite:.3f})"
        top = candidates[0].composite if candidates else 0.0
        return RouteDecision(RouterPath.ZERO_SHOT, why, top, None, tuple(candidates))

    def _check_drift(
        self, vector: memoryview, candidates: list[EntryPoint], current: str
    ) -> RouteDecision:
        node_id = self.graph.resolve(current)
        node = self.graph.node(node_id) if node_id is not None else None
        if node_id is None or node is None:
            raise InvalidTaskError(f"current: expected a node of the memory graph; got {current!r}")
        texts = node_texts(node)
        similarity = max(embed_rows(self.index.embedder, texts).dots(vector), default=0.0)
        here = self.score(node_id, similarity)
        if similarity >= self.anomaly_threshold:
            why = f"still on {node_id}: similarity {similarity:.3f} >= {self.anomaly_threshold:.2f}"
            return RouteDecision(
                RouterPath.MEMORY_TRAVERSAL, why, here.composite, here, tuple(candidates),
                previous=node_id,
            )  # fmt: skip
        others = [c for c in candidates if c.node != node_id and self._qualifies(c)]
        if not others:
            drift = f"drifted from {node_id} (similarity {similarity:.3f}) and"
            return msgspec.structs.replace(
                self._zero_shot(candidates, f"{drift} no memory node qualifies"),
                previous=node_id,
            )
        best = others[0]
        why = (
            f"drifted from {node_id} (similarity {similarity:.3f} <"
            f" {self.anomaly_threshold:.2f}); jump to {best.node} at {best.similarity:.3f}"
        )
        return RouteDecision(
            RouterPath.CONTEXT_JUMP, why, best.composite, best, tuple(candidates), node_id
        )

    # -- plans ----------------------------------------------------------------------------
    def plan(self, node_id: str) -> Plan:
        """The steps of ``node_id`` (or the node it was merged into) with its constraints."""
        resolved = self.graph.resolve(node_id)
        node = self.graph.node(resolved) if resolved is not None else None
        if resolved is None or node is None:
            raise InvalidTaskError(f"node: expected a node of the memory graph; got {node_id!r}")
        steps = tuple(
            PlanStep(s.id, s.index, s.reasoning, s.action, s.result)
            for s in self.graph.steps(resolved)
        )
        return Plan(
            resolved, node.goal, node.summary, node.confidence, steps,
            self.graph.constraints(resolved),
        )  # fmt: skip


def _pick(value: float | None, default: float) -> float:
    return default if value is None else value
