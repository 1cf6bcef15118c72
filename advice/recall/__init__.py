"""Recall ranking and the injected block."""

from ._block import render
from ._rank import Candidate, distinct, rank, rank_genes

__all__ = ["Candidate", "distinct", "rank", "rank_genes", "render"]
