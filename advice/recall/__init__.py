"""Recall ranking and the injected block."""

from ._block import render
from ._rank import Candidate, rank, rank_genes

__all__ = ["Candidate", "rank", "rank_genes", "render"]
