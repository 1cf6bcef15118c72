"""What can be recalled: one record per memory item, folded from events.

A memory item is a note or a lesson (``note`` events: written by ``remember``, updated by a
superseding note naming the same ``item``, merged by branch compression or root archiving,
never for a lesson), a strategy node of the memory graph (``node`` and its
``child_step``/``constraint`` events, from dreams and from the hook's failed tools), or a
gene named by attempts and outcomes (``gene``), with the signals it was tried for and its
evidence as text. Items are never edited: every change
is a new event, and an item's record is what the events say as of the fold's position.
"""

from __future__ import annotations

from typing import Final

import msgspec

__all__ = [
    "BACKBONE",
    "DEFAULT_BRANCH",
    "GENE",
    "GENE_BRANCH",
    "LESSON",
    "LESSON_BRANCH",
    "NOTE",
    "STRATEGY",
    "STRATEGY_BRANCH",
    "MemoryItem",
]

BACKBONE: Final = "backbone"
"""The permanent branch: never decays, never compressed or archived."""
DEFAULT_BRANCH: Final = "notes"
"""The branch of a note written without one (notes from before branches existed)."""
STRATEGY_BRANCH: Final = "strategies"
"""The branch strategy nodes are listed under (compression never touches them)."""
GENE_BRANCH: Final = "genes"
"""The branch gene items are listed under (never compressed, recalled by signals)."""
LESSON_BRANCH: Final = "lessons"
"""The branch of a lesson written without one."""
NOTE: Final = "note"
LESSON: Final = "lesson"
STRATEGY: Final = "strategy"
GENE: Final = "gene"


class MemoryItem(msgspec.Struct, kw_only=True):
    """One recallable item and the evidence about it.

    ``snapshot`` is the system activity (see :class:`~.ItemFold`) at its last write or
    injection; ``accesses`` counts the recall events that injected it (once each).
    ``archived_by`` is the compressing or archiving item that holds it now ("" while it is
    active). ``group`` lists the ids whose evidence counts for it: the nodes merged into a
    strategy, the sources of a merged note. A gene item lists the ``signals`` it was tried
    for and its ``outcomes`` (succeeded, failed, partial), which its text states. A strategy
    item's ``tries`` are its node group's (successes, failures): the traces it was dreamed
    from and the outcomes naming it, each once. A lesson (a note written as one) counts its
    ``tries`` from the outcomes naming it, one verdict per attempt as ACE counts them;
    ``author`` and ``session`` are who wrote it and in which session.
    """

    id: str
    kind: str = NOTE
    branch: str = DEFAULT_BRANCH
    text: str = ""
    tags: list[str] = []
    created_seq: int = 0
    written_seq: int = 0
    version: int = 1
    events: list[str] = []
    sources: list[str] = []
    reason: str = ""
    archived_by: str = ""
    snapshot: int = 0
    accesses: int = 0
    steps: list[str] = []
    constraints: list[str] = []
    confidence: float | None = None
    live: bool = True
    group: list[str] = []
    tf: dict[str, float] = {}
    signals: list[str] = []
    outcomes: list[int] = []
    tries: list[int] = []
    author: str = ""
    session: str = ""

    @property
    def active(self) -> bool:
        """Recallable: a live strategy, or a note not archived into another item."""
        return self.live and not self.archived_by
