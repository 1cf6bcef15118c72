"""The ledger's state: one column per entry attribute, indexed by entry ordinal.

Struct-of-arrays so that upkeep, burial checks and the batched credit path are numpy
operations over the whole population; the per-event rules read and write single cells.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from .._cpfile import CAUSES as CAUSES  # defined with the file that stores the column

UNBORN, ALIVE, DEAD = 0, 1, 2
EXECUTED, STARVED, MERGED, FORGOTTEN = 1, 2, 3, 4

#: (name, dtype, initial value) of every per-entry column.
COLUMNS: tuple[tuple[str, str, Any], ...] = (
    ("energy", "f8", 0.0),
    ("status", "i1", UNBORN),
    ("pinned", "?", False),
    ("probation", "i8", 0),
    ("juvenile", "i8", 0),
    ("escrow", "i8", 0),
    ("uses", "i8", 0),
    ("last_used", "i8", -1),
    ("born_tick", "i8", -1),
    ("died_tick", "i8", -1),
    ("born_seq", "i8", 0),
    ("died_seq", "i8", 0),
    ("cause", "i1", 0),
    ("damaged", "?", False),
    ("earned", "f8", 0.0),
    ("denied", "?", False),
    ("rank", "i8", -1),
)

Note = tuple[int, int, str, float, float]
"""A history note: (seq, tick, what, amount, energy after)."""


class Keys(Protocol):
    """The settled action keys (a ``set[str]``, or a checkpoint's lazily loaded key set)."""

    def __contains__(self, key: object, /) -> bool: ...

    def __iter__(self) -> Iterator[str]: ...

    def add(self, key: str, /) -> None: ...

    def update(self, keys: Iterable[str], /) -> None: ...


@dataclass(slots=True)
class Ticket:
    """A pending decision: who decided and supported it, and the entries it holds in escrow.

    The lists are fixed at the decision: probationary deciders already demoted, and empty
    (holding nothing) when the answer was withheld. ``altered``: they differ from what the
    attempt named (the batched replay, which reads the attempt's own lists, must not settle
    such a ticket).
    """

    born_tick: int
    deciders: tuple[int, ...]
    supporters: tuple[int, ...]
    held: tuple[int, ...]
    altered: bool = field(default=False, compare=False)


@dataclass
class Counters:
    """What the replay did with decisions (for reports and tests)."""

    settled: int = 0
    dropped: int = 0
    expired: int = 0
    ignored_attempts: int = 0
    merges: int = 0


@dataclass
class State:
    """Every entry's columns plus the id table, graveyard, tickets and clock.

    The clock: ``tick`` (ticks so far), ``period`` (the latest period of event time seen,
    for a per-period cadence) and ``outcomes`` (outcomes seen, for a per-N cadence).
    """

    n: int = 0
    cols: dict[str, npt.NDArray[Any]] = field(default_factory=dict)
    ids: list[str] = field(default_factory=list)
    index: dict[str, int] = field(default_factory=dict)
    tick: int = 0
    period: int | None = None
    outcomes: int = 0
    born: int = 0
    graveyard: list[int] = field(default_factory=list)
    pending: dict[str, Ticket] = field(default_factory=dict)
    settled: Keys = field(default_factory=lambda: set[str]())
    lineage: dict[int, list[str]] = field(default_factory=dict)
    merged_into: dict[int, str] = field(default_factory=dict)
    history: dict[int, deque[Note]] = field(default_factory=dict)
    counters: Counters = field(default_factory=Counters)

    def __post_init__(self) -> None:
        if not self.cols:
            self.cols = {name: np.full(64, init, dtype) for name, dtype, init in COLUMNS}

    def ordinal(self, entry_id: str) -> int:
        """The ordinal of an id, allocating an unborn slot for a new one."""
        i = self.index.get(entry_id)
        if i is None:
            i = self.n
            self.reserve(i + 1)
            self.index[entry_id] = i
            self.ids.append(entry_id)
            self.n = i + 1
        return i

    def add_ids(self, ids: list[str]) -> None:
        """Allocate unborn slots for ids not seen yet, in order (the replay's dictionary)."""
        new = [x for x in ids if x not in self.index]
        self.reserve(self.n + len(new))
        for x in new:
            self.index[x] = self.n
            self.ids.append(x)
            self.n += 1

    def reserve(self, size: int) -> None:
        cap = len(self.cols["energy"])
        if size <= cap:
            return
        new_cap = max(size, 2 * cap)
        for name, dtype, init in COLUMNS:
            grown = np.full(new_cap, init, dtype)
            grown[:cap] = self.cols[name]
            self.cols[name] = grown

    def view(self, name: str) -> npt.NDArray[Any]:
        """The live part (first ``n`` cells) of one column."""
        return self.cols[name][: self.n]
