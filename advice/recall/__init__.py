"""Recall ranking and the injected block."""

from ._block import render
from ._rank import Candidate, rank

__all__ = ["Candidate", "rank", "render"]
