"""The memory-item fold: events in log order in, :class:`MemoryItem` records out.

Rules, decided here (the module docstring of :mod:`.` says why):

* ``note``: writes item ``item`` (the event's own id when empty). A note naming an existing
  note item supersedes it: text replaced, tags unioned, version up, the event added to its
  history. ``sources`` are archived into the written item (branch compression and root
  archiving); the item's ``group`` collects them so their evidence keeps counting. A note
  with ``lesson`` set writes a lesson item instead (branch ``lessons`` by default): a
  lesson supersedes only a lesson, a note only a note, and a lesson's ``tries`` are its
  ACE verdicts (helpful, harmful), so it shows "worked N of M" as a strategy does.
* ``node`` (a dream's strategy): a write of that strategy; its content (goal, summary,
  ordered steps, constraints, liveness after merges and prunes) is the memory graph's
  (:class:`~projections.MemGraph`), read again when a ``node``, ``child_step``,
  ``constraint``, ``merge`` or ``prune`` event arrives. A ``constraint`` naming a note
  item is kept on the note.
* ``prune`` naming a note item retires it (an evolution run's curation); a later note
  naming the item writes it again. A prune naming anything else is the memory graph's.
* ``attempt``/``outcome`` naming a ``gene``: the gene's item (``state.genes``, apart from
  the others) gains the event's signals and, for an outcome, its verdict; its text says
  both. An outcome naming no entry in ``decided_by``/``supported_by`` is evidence for its
  gene (as the survival ledger credits it).
* ``recall``: each injected item known to the fold is accessed once (Living Memory's code
  counted every access twice).
* ``fetched``: the items an attempt fetched; its outcome credits them as used and the named
  items it did not fetch as neutral (:mod:`._use` says why).
* System activity ``S`` counts writes (notes and nodes) and accesses; an item's snapshot is
  ``S`` at its last write or access, so its inactivity ratio is ``(S - snapshot) / S``.
* ACE counters per id: ``feedback`` events (rating > 0 helpful, < 0 harmful, 0 neutral) and
  outcomes that name the id in ``decided_by``/``supported_by`` (success helpful, failed
  harmful, partial neutral; other statuses are no verdict). One verdict per (item, attempt):
  a later outcome of the same ``action_id`` replaces the earlier one's, and a rated
  ``feedback`` naming the item *and* the attempt (``action_id``) replaces the outcome's
  verdict, before or after the outcome arrives (the last such feedback wins). The
  granularity is the pair because an outcome judges the attempt, not each item injected into
  it: a person saying "this note misled me on that attempt" corrects exactly one inferred
  verdict. Feedback without an ``action_id`` (and outcomes without one) is evidence of its
  own and replaces nothing.
* A retraction makes the fold stale: the caller rebuilds from the log with the retracted
  ids and cycles known up front (:meth:`ItemFold.rebuild`), which is how an undone
  compression gives its sources back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence
from typing import Any, Final

import msgspec
from evolog.eventlog import (
    AnyEvent,
    Attempt,
    Constraint,
    Feedback,
    Fetched,
    Node,
    Note,
    Outcome,
    Prune,
    Recall,
    Retraction,
    kind_of,
)

from ._genes import fold_gene
from ._items import (
    BACKBONE,
    DEFAULT_BRANCH,
    LESSON,
    LESSON_BRANCH,
    NOTE,
    STRATEGY,
    STRATEGY_BRANCH,
    MemoryItem,
)
from ._steps import names_own_step
from ._text import norm, term_freqs
from ._use import credits, note_fetch

__all__ = ["FOLD_KINDS", "GRAPH_KINDS", "MAPS", "FoldState", "ItemFold", "peek"]

GRAPH_KINDS: Final = frozenset({"node", "child_step", "constraint", "merge", "prune"})
"""Kinds after which strategy items are read again from the memory graph."""
FOLD_KINDS: Final = (
    "attempt",
    "note",
    "feedback",
    "fetched",
    "outcome",
    "recall",
    "retraction",
    *sorted(GRAPH_KINDS),
)
MAPS: Final = (
    "items",
    "evidence",
    "verdicts",
    "touched",
    "accesses",
    "postings",
    "scoring",
    "genes",
    "fetched",
)
"""The fold state's maps, each one table of the checkpoint file."""
_VERDICT: Final = {"success": 0, "failed": 1, "partial": 2}
_WRITTEN: Final = frozenset({NOTE, LESSON})
"""The kinds ``remember`` writes (a constraint or a prune naming one is kept on it)."""


class FoldState(msgspec.Struct, kw_only=True):
    """Everything the fold keeps; equal logs give equal states (the checkpoint's body).

    The maps are dicts in a fold built here and :class:`~._lazy.LazyMap` views of the
    checkpoint's tables in one loaded from it (:data:`MAPS` names them). ``postings`` maps a
    word to the active items having it, each with its weight ``tf / |tf|`` (what the word
    adds to the item's cosine with a query, per unit of query weight: what ranking bounds).
    ``scoring`` holds, for the active items whose score needs more than their own evidence
    and snapshot (a backbone item, an item pooling a group's evidence), ``[branch, *group]``:
    with it, ranking scores an item without decoding its record.
    """

    applied: int = 0
    activity: int = 0
    items: MutableMapping[str, MemoryItem] = {}
    evidence: MutableMapping[str, list[int]] = {}
    verdicts: MutableMapping[str, list[int]] = {}
    touched: MutableMapping[str, int] = {}
    accesses: MutableMapping[str, int] = {}
    postings: MutableMapping[str, dict[str, float]] = {}
    scoring: MutableMapping[str, list[str]] = {}
    genes: MutableMapping[str, MemoryItem] = {}
    fetched: MutableMapping[str, list[str]] = {}  # action_id -> items fetched for it
    retracted_ids: list[str] = []
    retracted_cycles: list[str] = []
    active: int = 0
    graph_dirty: bool = False
    stale: bool = False


GraphLoader = Callable[[int], Any]
"""``as_of -> MemGraph`` (or None when there is no graph to read)."""


class ItemFold:
    """The fold over one log; see the module docstring for its rules."""

    def __init__(self, state: FoldState | None = None) -> None:
        self.state = state if state is not None else FoldState()
        self._ids = frozenset(self.state.retracted_ids)
        self._cycles = frozenset(self.state.retracted_cycles)

    @classmethod
    def rebuild(
        cls, events: Iterable[AnyEvent], retractions: Iterable[Retraction], graph: GraphLoader
    ) -> ItemFold:
        """A fold of ``events`` with every retraction in ``retractions`` applied up front."""
        ids: set[str] = set()
        cycles: set[str] = set()
        for r in retractions:
            ids.update(r.targets)
            if r.target_cycle is not None:
                cycles.add(r.target_cycle)
        fold = cls(FoldState(retracted_ids=sorted(ids), retracted_cycles=sorted(cycles)))
        fold.apply_all(events, rebuilding=True)
        fold.settle(graph)
        return fold

    # -- folding ------------------------------------------------------------------------
    def apply_all(self, events: Iterable[AnyEvent], *, rebuilding: bool = False) -> None:
        for event in events:
            self.apply(event, rebuilding=rebuilding)

    def apply(self, event: AnyEvent, *, rebuilding: bool = False) -> None:
        st = self.state
        st.applied = max(st.applied, event.seq)
        if isinstance(event, Retraction):
            # Undoing something already folded cannot be done in place; a rebuild reads
            # every retraction first (and is not stale: it already knows this one).
            st.stale = st.stale or not rebuilding
            return
        if event.id in self._ids or getattr(event, "cycle", "") in self._cycles:
            return
        if isinstance(event, Note):
            self._note(event)
        elif isinstance(event, Recall):
            self._recall(event)
        elif isinstance(event, Fetched):
            note_fetch(st.fetched, event)
        elif isinstance(event, Feedback):
            if event.rating is not None:
                rated = 0 if event.rating > 0 else 1 if event.rating < 0 else 2
                self._judge(event.target, event.action_id, rated, by_feedback=True)
        elif isinstance(event, Attempt):
            if event.gene:
                fold_gene(self.state.genes, event, None)
        elif isinstance(event, Outcome):
            verdict = _VERDICT.get(event.status)
            if verdict is not None:
                for ref, given in credits(st.fetched, event, verdict):
                    self._judge(ref, event.action_id, given, by_feedback=False)
            if event.gene:
                fold_gene(self.state.genes, event, verdict)
        elif isinstance(event, Constraint) and event.node is not None:
            item = st.items.get(event.node)
            if item is not None and item.kind in _WRITTEN:
                if event.description and event.description not in item.constraints:
                    item.constraints = [*item.constraints, event.description]
            else:
                st.graph_dirty = True
        elif isinstance(event, Prune) and self._retire(event.node):
            pass
        elif kind_of(event) in GRAPH_KINDS:
            if isinstance(event, Node):
                self._touch(event.node)
            st.graph_dirty = True

    def _retire(self, item_id: str) -> bool:
        """Retire a note item (a ``prune`` naming it); False when it is not a note."""
        item = self.state.items.get(item_id)
        if item is None or item.kind not in _WRITTEN:
            return False
        self._unpost(item)
        item.live = False
        return True

    def _touch(self, item_id: str) -> None:
        st = self.state
        st.activity += 1
        st.touched[item_id] = st.activity

    def _judge(self, ref: str, action_id: str, verdict: int, *, by_feedback: bool) -> None:
        """Count a verdict on ``ref``; for an attempt, it replaces the pair's earlier one."""
        if not ref:
            return
        counts = self.state.evidence.setdefault(ref, [0, 0, 0])
        if action_id:
            key = f"{ref}\x1f{action_id}"
            held = self.state.verdicts.get(key)  # [verdict, 1 if a feedback set it]
            if held is not None:
                if held[1] and not by_feedback:
                    return  # the person's word stands over the inferred one
                counts[held[0]] -= 1
            self.state.verdicts[key] = [verdict, int(by_feedback)]
        counts[verdict] += 1
        found = peek(self.state.items, ref)
        if found is not None and found.kind == LESSON:
            # Read for keeps only for a lesson: a strategy's tries are the graph's.
            self.state.items[ref].tries = counts[:2]

    def _note(self, e: Note) -> None:
        st = self.state
        item_id = e.item or e.id
        kind = LESSON if e.lesson else NOTE
        old = st.items.get(item_id)
        if old is not None and old.kind != kind:
            return  # a note cannot supersede a strategy node, nor a lesson a note
        self._unpost(old)
        default = LESSON_BRANCH if e.lesson else DEFAULT_BRANCH
        branch = e.branch or (old.branch if old is not None else default)
        group = list(old.group) if old is not None else []
        for src in e.sources:
            held = st.items.get(src)
            if held is None or src == item_id:
                continue
            if held.active:
                self._unpost(held)
                held.archived_by = item_id
            group.extend(x for x in (src, *held.group) if x not in group)
        counts = st.evidence.get(item_id) if e.lesson else None
        item = MemoryItem(
            id=item_id,
            kind=kind,
            branch=branch,
            text=e.text,
            tags=list(dict.fromkeys([*(old.tags if old else ()), *e.tags])),
            created_seq=old.created_seq if old is not None else e.seq,
            written_seq=e.seq,
            version=old.version + 1 if old is not None else 1,
            events=[*(old.events if old else ()), e.id],
            sources=list(dict.fromkeys([*(old.sources if old else ()), *e.sources])),
            reason=e.reason or (old.reason if old is not None else ""),
            archived_by=old.archived_by if old is not None else "",
            constraints=list(old.constraints) if old is not None else [],
            group=group,
            tf=term_freqs(e.text),
            tries=list(counts[:2]) if counts is not None else [],
            author=e.author or (old.author if old is not None else ""),
            session=e.session or (old.session if old is not None else ""),
        )
        st.items[item_id] = item
        self._touch(item_id)
        self._post(item)

    def _recall(self, e: Recall) -> None:
        st = self.state
        # A strategy node is known from its ``node`` event on (``touched``), not only once
        # the graph is read: a rebuild reads the graph after every event.
        known = [i for i in dict.fromkeys(e.items) if i in st.items or i in st.touched]
        for item_id in known:
            st.activity += 1
            st.touched[item_id] = st.activity
            st.accesses[item_id] = st.accesses.get(item_id, 0) + 1

    # -- postings (active items only: what recall and dedup may find) -------------------
    def _post(self, item: MemoryItem) -> None:
        if item.active:
            self.state.active += 1
            length = norm(item.tf)
            postings = self.state.postings
            for token, tf in item.tf.items():
                ids = postings.get(token)
                if ids is None:
                    postings[token] = {item.id: tf / length}
                else:
                    ids[item.id] = tf / length
            if item.group or item.branch == BACKBONE:
                self.state.scoring[item.id] = [item.branch, *item.group]

    def _unpost(self, item: MemoryItem | None) -> None:
        if item is None or not item.active:
            return
        postings = self.state.postings
        self.state.active -= 1
        self.state.scoring.pop(item.id, None)
        for token in item.tf:
            ids = postings.get(token)
            if ids is not None:
                ids.pop(item.id, None)
                if not ids:
                    del postings[token]

    # -- strategies ---------------------------------------------------------------------
    def settle(self, graph: GraphLoader, delta: Sequence[AnyEvent] | None = None) -> None:
        """Read strategy items again from the memory graph if graph events arrived.

        With ``delta``, the events folded since the graph was last read, only the nodes
        they can have changed are read again (the graph checkpoint's own rule: the nodes
        named, the nodes served by a constrained trace, and every node they were merged
        into); without it, every node.
        """
        st = self.state
        if not st.graph_dirty:
            return
        loaded = graph(st.applied)
        if delta is not None and loaded is not None:
            from evolog.projections.graph._delta import dirty_nodes

            for node_id in sorted(dirty_nodes(loaded, delta)):
                old = st.items.get(node_id)
                if old is not None and old.kind != STRATEGY:
                    continue  # a note item took this id
                if old is not None:
                    self._unpost(old)
                    del st.items[node_id]
                node = loaded.node(node_id)
                if node is not None:
                    self._strategy(loaded, node)
            st.graph_dirty = False
            return
        for item in [i for i in st.items.values() if i.kind == STRATEGY]:
            self._unpost(item)
            del st.items[item.id]
        if loaded is not None:
            for node in loaded.nodes(live_only=False):
                if node.id not in st.items:  # else a note item already took this id
                    self._strategy(loaded, node)
        st.graph_dirty = False

    def _strategy(self, loaded: Any, node: Any) -> None:
        steps = [s.action or s.reasoning for s in loaded.steps(node.id)]
        steps_done = [s for s in steps if s]
        goals = [g for g in node.trigger_goals if g != node.goal]
        item = MemoryItem(
            id=node.id,
            kind=STRATEGY,
            branch=STRATEGY_BRANCH,
            text=". ".join(x for x in (node.goal, node.summary) if x),
            created_seq=node.seq,
            written_seq=node.seq,
            version=node.version,
            steps=steps_done,
            # A constraint that names one of the strategy's own steps came from a failed
            # attempt doing the same thing: it cannot tell failure from success, and read
            # back as "Do not" it would contradict the steps shown with it.
            constraints=[
                c.description
                for c in loaded.constraints(node.id)
                if not names_own_step(c.description, steps_done)
            ],
            tries=list(loaded.outcomes(node.id)),
            confidence=node.confidence,
            live=node.live,
            group=[g for g in loaded.group(node.id) if g != node.id],
            tf=term_freqs(" ".join([node.goal, *goals, node.summary])),
        )
        self.state.items[node.id] = item
        self._post(item)

    # -- reading ------------------------------------------------------------------------
    def evidence(self, item: MemoryItem) -> tuple[int, int, int]:
        """ACE counters (helpful, harmful, neutral) of the item and its group."""
        return self.evidence_of(item.id, item.group)

    def scoring(self, item_id: str) -> tuple[bool, tuple[str, ...]]:
        """An active item's backbone flag and the other ids whose evidence it pools, read
        without decoding its record (``scoring``; items in neither case are not listed)."""
        found = peek(self.state.scoring, item_id)
        if found is None:
            return False, ()
        return found[0] == BACKBONE, tuple(found[1:])

    def evidence_of(self, item_id: str, group: Sequence[str]) -> tuple[int, int, int]:
        """ACE counters (helpful, harmful, neutral) of ``item_id`` and ``group``."""
        h = x = n = 0
        for ref in (item_id, *group):
            counts = peek(self.state.evidence, ref)
            if counts is not None:
                h, x, n = h + counts[0], x + counts[1], n + counts[2]
        return h, x, n

    def snapshot(self, item_id: str) -> int:
        found = peek(self.state.touched, item_id)
        return 0 if found is None else int(found)


def peek(mapping: Mapping[str, Any], key: str) -> Any:
    """``mapping.get(key)``, without keeping what a checkpoint table decodes (see
    ``LazyMap.peek``): for readers that do not change the value."""
    read = getattr(mapping, "peek", None)
    return read(key) if read is not None else mapping.get(key)
