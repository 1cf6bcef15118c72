"""The ledger fed one event at a time: the clock cadences and the event-to-rule mapping.

This is the incremental twin of the batched replay (``incremental == rebuild`` is tested):
the survival loop and the ``dead_entries`` checkpoint advance it with the events appended
since they last looked. A retraction cannot be undone in place, so it marks the follower
``stale``: the caller rebuilds from the log.
"""

from __future__ import annotations

from collections.abc import Iterable

from evolog.eventlog import (
    AnyEvent,
    Attempt,
    DreamEnd,
    Lifecycle,
    Merge,
    Node,
    Outcome,
    Retraction,
    Tick,
)

from ._config import LEDGER_KINDS
from .rules._rules import LedgerRules


class LedgerFollower:
    """Rules plus the last seq applied."""

    def __init__(self, rules: LedgerRules) -> None:
        self.rules = rules
        self.seq = 0
        self.stale = False

    def apply_all(self, events: Iterable[AnyEvent]) -> None:
        for event in events:
            self.apply(event)

    def apply(self, event: AnyEvent) -> None:
        """Apply one event (in seq order; an event at or below :attr:`seq` is skipped)."""
        if event.seq and event.seq <= self.seq:
            return
        self.seq = event.seq or self.seq
        rules, cfg, seq, st = self.rules, self.rules.config, event.seq, self.rules.state
        if isinstance(event, Retraction):
            self.stale = True
            return
        if not isinstance(event, LEDGER_KINDS):
            return  # the replay reads only these kinds: their times alone drive the clock
        if cfg.tick_every_us:
            period = event.ts // cfg.tick_every_us
            if st.period is not None and period > st.period:
                rules.tick(period - st.period, seq=seq)
            st.period = period if st.period is None else max(st.period, period)
        if isinstance(event, Attempt):
            key = event.action_id or event.id
            rules.attempt(key, event.decided_by, event.supported_by, gene=event.gene, seq=seq)
        elif isinstance(event, Outcome):
            rules.outcome(
                event.action_id,
                event.delta,
                event.decided_by,
                event.supported_by,
                gene=event.gene,
                seq=seq,
            )
            st.outcomes += 1
            if cfg.outcomes_per_tick and st.outcomes % cfg.outcomes_per_tick == 0:
                rules.tick(1, seq=seq)
        elif isinstance(event, Tick):
            if cfg.explicit_ticks:
                rules.tick(max(0, event.ticks), seq=seq)
        elif isinstance(event, DreamEnd):
            rules.tick(cfg.ticks_per_dream, seq=seq)
        else:
            self._graph_event(event, seq)

    def _graph_event(self, event: AnyEvent, seq: int) -> None:
        rules = self.rules
        if isinstance(event, Lifecycle):
            self._lifecycle(event, seq)
        elif isinstance(event, Merge):
            rules.merge(event.node, event.merged, seq=seq)
        elif isinstance(event, Node) and event.node:
            rules.born(rules.state.ordinal(event.node), seq)

    def _lifecycle(self, event: Lifecycle, seq: int) -> None:
        rules = self.rules
        if event.op == "birth":
            rules.birth(
                event.entry,
                seq=seq,
                energy=event.energy,
                pinned=event.pinned,
                probation=event.probation,
            )
        elif event.op in ("pin", "unpin"):
            rules.pin(event.entry, seq=seq, pinned=event.op == "pin")
        elif event.op == "forget":
            rules.forget(event.entry, seq=seq)
