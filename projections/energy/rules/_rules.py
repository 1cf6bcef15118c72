"""The survival ledger's rules: a pure, event-driven state machine with no I/O.

The semantics are darwin-memo 0.7.1's event-driven ``Ledger`` (docs/reference/
ledger.md §3-6), mapped onto evolog's events:

* an entry is born at its first appearance (or by an explicit birth) with spawn energy;
* an attempt naming entries is a decision (darwin ``decide``): probationary deciders are
  demoted to supporters then, and an answer every named entry of which is on probation is
  withheld (no escrow, no credit, no graduation); otherwise it opens a ticket, fixed at
  that moment, holding its entries in escrow until it settles;
* an outcome settles its action's ticket (or, with no ticket, is a decision and its outcome
  at once) with the measured delta: ``c = gain * tanh(delta / scale)`` to the decider, ``c *
  share`` to each supporter, or ``c / n`` to each of n supporters when no decider is named;
  every credit is capped per application and there is no floor; then every entry the
  decision named is checked for death (settle-time burial) unless another pending ticket
  holds it in escrow;
* each action settles once: a second outcome, or one arriving after the ticket expired, is
  dropped;
* a tick charges upkeep to every alive entry, expires old tickets and buries the broke
  (escrowed entries pay upkeep but are not buried); every ``consolidate_every`` ticks,
  entries closer than the threshold under an injected similarity merge;
* a death is "executed" if measured damage killed the entry: buried at a settle right after
  a negative credit, denied admission, or with a negative net credit; otherwise (upkeep
  drained it) "starved". darwin labels any entry that ever took a loss "executed"; an
  entry with net gains that upkeep drains is starving by evolog's documented rule.
  Merges and explicit forgets record "merged" and "forgotten"; ``forget`` refuses a pinned
  or escrowed entry. Pinned entries pay upkeep, are floored at 0 and never die or merge.

Decisions may name several deciders (darwin has at most one): they share the decider credit
equally. An outcome naming its own entries restates the decision: it is decided then.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Collection, Iterable, Sequence

from .._config import LedgerConfig, config_from
from ._credit import credit, decide
from ._host import Similarity
from ._merge import consolidate
from ._state import ALIVE, CAUSES, DEAD, EXECUTED, FORGOTTEN, STARVED, UNBORN, State, Ticket
from ._upkeep import expire, upkeep


class LedgerRules:
    """The ledger as a state machine: feed it events in log order, read :attr:`state`.

    ``track``: record a history of notes for every entry (``True``) or for these ids.
    ``similarity``: ``(id_a, id_b) -> float`` for periodic consolidation (None: no merges
    except explicit ``merge`` events).
    """

    def __init__(
        self,
        config: LedgerConfig | dict[str, object] | None = None,
        *,
        similarity: Similarity | None = None,
        track: bool | Collection[str] = False,
        state: State | None = None,
    ) -> None:
        self.config = config_from(config)
        self.similarity = similarity
        self.state = state if state is not None else State()
        self.track_all = track is True
        if isinstance(track, str):
            track = [track]  # one id, not its characters
        self.track_ids = frozenset() if isinstance(track, bool) else frozenset(track)
        self._label: int | None = None

    # -- the clock -----------------------------------------------------------------------
    @property
    def now(self) -> int:
        """The tick label of what happens now: the tick count, or the running tick's index."""
        return self.state.tick if self._label is None else self._label

    # -- entries -------------------------------------------------------------------------
    def ords(self, ids: Iterable[str]) -> tuple[int, ...]:
        """Ordinals of non-empty ids (allocating unborn slots)."""
        return tuple(self.state.ordinal(x) for x in ids if x)

    def tracked(self, i: int) -> bool:
        return self.track_all or (bool(self.track_ids) and self.state.ids[i] in self.track_ids)

    def note(self, i: int, seq: int, what: str, amount: float = 0.0) -> None:
        """Append a history note for a tracked entry (the last ``history_limit`` are kept)."""
        if not self.tracked(i) or self.config.history_limit == 0:
            return
        notes = self.state.history.get(i)
        if notes is None:
            notes = self.state.history[i] = deque(maxlen=self.config.history_limit)
        energy = float(self.state.cols["energy"][i])
        notes.append((seq, self.now, what, float(amount), energy))

    def born(
        self,
        i: int,
        seq: int,
        energy: float | None = None,
        pinned: bool = False,
        probation: int = 0,
    ) -> bool:
        """Birth an unborn entry (False if it was ever born: nothing is resurrected)."""
        st, c, cfg = self.state, self.state.cols, self.config
        if c["status"][i] != UNBORN:
            return False
        c["status"][i] = ALIVE
        c["energy"][i] = cfg.spawn_energy if energy is None else min(cfg.max_energy, energy)
        c["pinned"][i] = pinned
        c["probation"][i] = max(0, probation)
        c["juvenile"][i] = cfg.admission_window
        c["born_tick"][i] = self.now
        c["born_seq"][i] = seq
        c["rank"][i] = st.born
        st.born += 1
        self.note(i, seq, "born")
        return True

    def bury(self, i: int, cause: int, seq: int) -> None:
        """Move an alive entry to the graveyard (balance ``min(E, 0)``)."""
        c = self.state.cols
        c["status"][i] = DEAD
        c["energy"][i] = min(float(c["energy"][i]), 0.0)
        c["died_tick"][i] = self.now
        c["died_seq"][i] = seq
        c["cause"][i] = cause
        self.state.graveyard.append(i)
        self.note(i, seq, f"died:{CAUSES[cause]}")

    def death_cause(self, i: int, hit: bool = False) -> int:
        """Executed if this settlement's loss, a denied admission or net losses killed it."""
        c = self.state.cols
        if hit or c["denied"][i] or c["earned"][i] < -self.config.damage_epsilon:
            return EXECUTED
        return STARVED

    # -- lifecycle events ----------------------------------------------------------------
    def birth(
        self,
        entry: str,
        *,
        seq: int = 0,
        energy: float | None = None,
        pinned: bool | None = None,
        probation: int | None = None,
    ) -> bool:
        """An explicit birth; ignored (False) for an id that was ever born."""
        if not entry:
            return False
        return self.born(self.state.ordinal(entry), seq, energy, bool(pinned), probation or 0)

    def pin(self, entry: str, *, seq: int = 0, pinned: bool = True) -> bool:
        """Pin (or unpin) an entry, birthing it at its first appearance."""
        if not entry:
            return False
        i = self.state.ordinal(entry)
        self.born(i, seq)
        if self.state.cols["status"][i] != ALIVE:
            return False
        self.state.cols["pinned"][i] = pinned
        self.note(i, seq, "pinned" if pinned else "unpinned")
        return True

    def forget(self, entry: str, *, seq: int = 0) -> bool:
        """Bury an entry with cause "forgotten"; refused (False) while pinned or escrowed."""
        if not entry:
            return False
        i = self.state.ordinal(entry)
        self.born(i, seq)
        if self.forget_refusal(i) is not None:
            return False
        self.bury(i, FORGOTTEN, seq)
        return True

    def forget_refusal(self, i: int) -> str | None:
        """Why ``forget`` would refuse this entry (None: it would bury it)."""
        c = self.state.cols
        if c["status"][i] != ALIVE:
            return "it is not alive"
        if c["pinned"][i]:
            return "it is pinned (a pinned entry never dies; unpin it first)"
        if c["escrow"][i]:
            return f"it is held in escrow by {int(c['escrow'][i])} pending decision(s)"
        return None

    def merge(self, node: str, merged: str, *, seq: int = 0) -> bool:
        """Fold ``merged`` into ``node`` (see :func:`projections.energy._merge.merge_pair`)."""
        from ._merge import merge_pair

        return merge_pair(self, node, merged, seq)

    # -- decisions -----------------------------------------------------------------------
    def attempt(
        self,
        key: str,
        deciders: Sequence[str] = (),
        supporters: Sequence[str] = (),
        *,
        gene: str | None = None,
        seq: int = 0,
    ) -> bool:
        """An attempt: opens a ticket holding its entries in escrow (False: no ticket)."""
        dec, sup = self.ords(deciders), self.ords(supporters)
        if not dec and not sup and gene and self.config.gene_decides:
            dec = self.ords([gene])
        return self.open_ticket(key, dec, sup, seq)

    def open_ticket(self, key: str, dec: Sequence[int], sup: Sequence[int], seq: int) -> bool:
        """Open a ticket unless its action is pending or settled already (then: ignored)."""
        st = self.state
        if key in st.pending or key in st.settled:
            st.counters.ignored_attempts += 1
            return False
        return self.open_resolved(key, dec, sup, seq)

    def open_resolved(self, key: str, dec: Sequence[int], sup: Sequence[int], seq: int) -> bool:
        """Open a ticket for an action known to be new (births first appearances)."""
        st = self.state
        for i in (*dec, *sup):
            self.born(i, seq)
        held = tuple(dict.fromkeys((*dec, *sup)))
        if not held:
            return False
        decided = decide(self, dec, sup)
        if decided is None:
            # Withheld: the action is still recorded, so that its outcome settles nothing.
            st.pending[key] = Ticket(st.tick, (), (), (), altered=True)
            return False
        d, s = decided
        held = tuple(dict.fromkeys((*d, *s)))  # the decision's provenance, swept in order
        st.pending[key] = Ticket(st.tick, d, s, held, altered=len(d) != len(dec))
        st.cols["escrow"][list(held)] += 1
        return True

    def outcome(
        self,
        key: str,
        delta: float | None,
        deciders: Sequence[str] = (),
        supporters: Sequence[str] = (),
        *,
        gene: str | None = None,
        seq: int = 0,
    ) -> bool:
        """An outcome: settles its action with the measured delta (False: dropped)."""
        dec, sup = self.ords(deciders), self.ords(supporters)
        if not dec and not sup and key not in self.state.pending and gene:
            dec = self.ords([gene]) if self.config.gene_decides else ()
        return self.settle(key, delta, dec, sup, seq)

    def settle(
        self, key: str, delta: float | None, dec: Sequence[int], sup: Sequence[int], seq: int
    ) -> bool:
        """Settle an action by key: its pending ticket, or a decision without one."""
        st = self.state
        if key and key in st.settled:
            st.counters.dropped += 1
            return False
        ticket = st.pending.pop(key, None) if key else None
        if key:
            st.settled.add(key)
        self.settle_resolved(ticket, delta, dec, sup, seq)
        return True

    def settle_resolved(
        self,
        ticket: Ticket | None,
        delta: float | None,
        dec: Sequence[int],
        sup: Sequence[int],
        seq: int,
    ) -> None:
        """Settle a decision whose ticket (if any) was already taken off the pending list.

        The outcome's own entries are credited, decided now; if it names none, the ticket's
        are, as fixed at its decision (nobody's if the answer was withheld).
        """
        st = self.state
        held: tuple[int, ...] = ()
        decided: tuple[Sequence[int], Sequence[int]] | None
        if ticket is not None:
            held = ticket.held
            st.cols["escrow"][list(held)] -= 1
        for i in (*dec, *sup):
            self.born(i, seq)
        if ticket is not None and not dec and not sup:
            decided = ticket.deciders, ticket.supporters
        else:
            decided = decide(self, dec, sup)
        hit: set[int] = set()
        if decided is not None:
            dec, sup = decided
            if delta is not None:
                hit = credit(self, dec, sup, delta, seq)
        else:
            dec, sup = (), ()
        self.sweep(dict.fromkeys((*dec, *sup, *held)), seq, hit)
        st.counters.settled += 1

    def sweep(self, ords: Iterable[int], seq: int, hit: Collection[int] = ()) -> None:
        """Settle-time burial over a decision's entries (escrow by another ticket protects).

        ``hit``: the entries this settlement charged a loss (their death is "executed").
        """
        c, eps = self.state.cols, self.config.alive_epsilon
        for i in ords:
            if c["status"][i] != ALIVE:
                continue
            if c["pinned"][i]:
                if c["energy"][i] < 0.0:
                    c["energy"][i] = 0.0
            elif c["energy"][i] <= eps and (c["escrow"][i] == 0 or c["denied"][i]):
                self.bury(i, self.death_cause(i, i in hit), seq)

    # -- ticks ---------------------------------------------------------------------------
    def horizon(self) -> int:
        """Ticks after which, with no new events, the state no longer changes."""
        cfg = self.config
        drain = 0 if cfg.upkeep == 0 else math.ceil(cfg.max_energy / cfg.upkeep) + 2
        return cfg.expire_after + 2 + drain

    def tick(self, n: int = 1, *, seq: int = 0) -> None:
        """``n`` ticks: expire old tickets, charge upkeep, bury, maybe consolidate."""
        st, cfg = self.state, self.config
        n = max(0, n)
        horizon = self.horizon()
        if self.similarity is None and n > horizon:
            # Past the horizon every ticket has expired, every unpinned entry is buried and
            # every pinned one sits at 0: further ticks change nothing but the count.
            self.tick(horizon, seq=seq)
            st.tick += n - horizon
            return
        for _ in range(n):
            self._label = st.tick
            st.tick += 1
            try:
                expire(self, seq)
                upkeep(self, seq)
                every = cfg.consolidate_every
                if self.similarity is not None and every and st.tick % every == 0:
                    consolidate(self, self.similarity, seq)
            finally:
                self._label = None
