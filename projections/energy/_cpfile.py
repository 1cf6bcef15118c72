"""The ledger checkpoint file's records, readable without the rules (and without numpy).

:mod:`._checkpoint` turns the rules' state into a :class:`Checkpoint` and back; a caller that
only asks which entries are dead, on a checkpoint already at the head of the log, reads the
file with these alone (:meth:`~._cache.LedgerCache.dead_at_head`).
"""

from __future__ import annotations

import msgspec

#: Why an entry died, by the number its ``cause`` column holds.
CAUSES = (None, "executed", "starved", "merged", "forgotten")

FORMAT = 3  # 3: the "earned" column; tickets fixed at the decision


class Mark(msgspec.Struct, frozen=True):
    """The id of the event at a seq, and the segment file that holds it ("" = the WAL)."""

    seq: int
    id: str
    file: str


class Checkpoint(msgspec.Struct, kw_only=True):
    """The serialised rules state plus what identifies the log and config it belongs to."""

    format: int
    config: str
    applied: int
    first: Mark
    last: Mark
    tick: int
    period: int | None
    outcomes: int
    born: int
    ids: list[str]
    columns: dict[str, bytes]
    graveyard: list[int]
    pending: list[tuple[str, int, list[int], list[int], list[int]]]
    settled_hashes: bytes
    keys_file: str
    lineage: list[tuple[int, list[str]]]
    merged_into: list[tuple[int, str]]
    counters: list[int]
