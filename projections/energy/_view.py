"""What a ledger replay returns: numpy columns for speed, entry records on demand."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np
import numpy.typing as npt

from ._config import LedgerConfig
from .rules._state import ALIVE, CAUSES, UNBORN

if TYPE_CHECKING:
    from .rules._rules import LedgerRules


class HistoryNote(msgspec.Struct, frozen=True, array_like=False):
    """Something that happened to an entry: at a seq and tick, an amount, the balance after."""

    seq: int
    tick: int
    what: str
    amount: float
    energy: float


class EntryView(msgspec.Struct, frozen=True, kw_only=True):
    """One entry of the ledger. ``cause``: executed | starved | merged | forgotten | None."""

    id: str
    energy: float
    alive: bool
    cause: str | None
    born_tick: int
    died_tick: int | None
    born_seq: int
    died_seq: int | None
    pinned: bool
    probation: int
    uses: int
    last_used_tick: int | None
    escrow: int
    damaged: bool
    lineage: list[str]
    merged_into: str | None
    history: list[HistoryNote] | None = None


class LedgerView:
    """The ledger as of ``as_of_seq``: every entry ever born, the graveyard, the counters.

    Columns (``energy``, ``status``, ...) are numpy arrays indexed like :attr:`ids`; the
    record methods build :class:`EntryView` objects from them.
    """

    def __init__(self, rules: LedgerRules, as_of_seq: int) -> None:
        st = rules.state
        self.as_of_seq = as_of_seq
        self.tick = st.tick
        self.config: LedgerConfig = rules.config
        self.ids = list(st.ids)
        self.index = dict(st.index)
        self.columns = {name: st.view(name).copy() for name in st.cols}
        self.energy: npt.NDArray[np.float64] = self.columns["energy"]
        self.status: npt.NDArray[np.int8] = self.columns["status"]
        self.rank: npt.NDArray[np.int64] = self.columns["rank"]
        self.burials = list(st.graveyard)
        self.lineage = {st.ids[i]: list(v) for i, v in st.lineage.items()}
        self.merged_into = {st.ids[i]: v for i, v in st.merged_into.items()}
        self.history = {st.ids[i]: list(notes) for i, notes in st.history.items()}
        self.track_all = rules.track_all
        self.track_ids = rules.track_ids
        self.pending = len(st.pending)
        self.counters = st.counters

    def alive_mask(self) -> npt.NDArray[np.bool_]:
        mask: npt.NDArray[np.bool_] = self.status == ALIVE
        return mask

    def alive_ids(self) -> frozenset[str]:
        return frozenset(self.ids[i] for i in np.flatnonzero(self.status == ALIVE).tolist())

    def dead_ids(self) -> frozenset[str]:
        return frozenset(self.ids[i] for i in self.burials)

    def entry(self, entry_id: str) -> EntryView | None:
        """One entry's record (None if it was never born)."""
        i = self.index.get(entry_id)
        if i is None or self.status[i] == UNBORN:
            return None
        return self._record(i)

    def entries(self, alive: bool | None = None) -> list[EntryView]:
        """Entries in order of birth (``alive``: only the alive, or only the dead)."""
        born = np.flatnonzero(self.status != UNBORN)
        if alive is not None:
            born = born[(self.status[born] == ALIVE) == alive]
        born = born[np.argsort(self.rank[born], kind="stable")]
        return [self._record(i) for i in born.tolist()]

    def graveyard(self) -> list[EntryView]:
        """Dead entries in order of burial."""
        return [self._record(i) for i in self.burials]

    def summary(self) -> dict[str, Any]:
        """Counts: alive, dead by cause, tick, pending tickets, settled/dropped/expired."""
        causes = Counter(CAUSES[int(self.columns["cause"][i])] for i in self.burials)
        c = self.counters
        return {
            "as_of_seq": self.as_of_seq,
            "tick": self.tick,
            "alive": int(np.count_nonzero(self.status == ALIVE)),
            "dead": len(self.burials),
            "deaths": {k: causes.get(k, 0) for k in CAUSES[1:] if k},
            "pending": self.pending,
            "settled": c.settled,
            "dropped": c.dropped,
            "expired": c.expired,
            "ignored_attempts": c.ignored_attempts,
            "merges": c.merges,
        }

    def _tracked(self, name: str) -> bool:
        return self.track_all or name in self.track_ids

    def _record(self, i: int) -> EntryView:
        col = self.columns
        alive = bool(col["status"][i] == ALIVE)
        name = self.ids[i]
        last_used = int(col["last_used"][i])
        notes = self.history.get(name)
        return EntryView(
            id=name,
            energy=float(col["energy"][i]),
            alive=alive,
            cause=None if alive else CAUSES[int(col["cause"][i])],
            born_tick=int(col["born_tick"][i]),
            died_tick=None if alive else int(col["died_tick"][i]),
            born_seq=int(col["born_seq"][i]),
            died_seq=None if alive else int(col["died_seq"][i]),
            pinned=bool(col["pinned"][i]),
            probation=int(col["probation"][i]),
            uses=int(col["uses"][i]),
            last_used_tick=None if last_used < 0 else last_used,
            escrow=int(col["escrow"][i]),
            damaged=bool(col["damaged"][i]),
            lineage=self.lineage.get(name, []),
            merged_into=self.merged_into.get(name),
            history=[HistoryNote(*n) for n in notes or []] if self._tracked(name) else None,
        )


def view_of(rules: LedgerRules, as_of_seq: int) -> LedgerView:
    return LedgerView(rules, as_of_seq)
