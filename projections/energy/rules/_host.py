"""What the rule helpers (credit, merge, upkeep) use of :class:`LedgerRules`.

A protocol, so that the rules import their helpers and the helpers never import the rules.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .._config import LedgerConfig
    from ._state import State

__all__ = ["Rules", "Similarity"]

#: ``(id_a, id_b) -> float``: how alike two entries are, for consolidation.
Similarity = Callable[[str, str], float]


class Rules(Protocol):
    config: LedgerConfig
    state: State
    track_all: bool
    track_ids: frozenset[str]

    @property
    def now(self) -> int: ...
    def note(self, i: int, seq: int, what: str, amount: float = 0.0) -> None: ...
    def born(
        self,
        i: int,
        seq: int,
        energy: float | None = None,
        pinned: bool = False,
        probation: int = 0,
    ) -> bool: ...
    def bury(self, i: int, cause: int, seq: int) -> None: ...
    def sweep(self, ords: Iterable[int], seq: int, hit: Collection[int] = ()) -> None: ...
