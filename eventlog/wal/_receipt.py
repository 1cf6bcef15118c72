"""What an append is asked for and what it answers: the durability policy and the receipt.

Its own module so that the group commit and the writer, which both speak of receipts, do not
import each other.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

__all__ = ["Durability", "Receipt"]

Durability = Literal["always", "batch", "none"]


class Receipt(NamedTuple):
    """What an append did: the event's seq and id, and whether it was already there."""

    seq: int
    id: str
    duplicate: bool
