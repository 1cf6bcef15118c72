"""Recall ranking and the injected block."""

from ._block import FOOTER, HEADER, render
from ._rank import Candidate, distinct, rank, rank_genes

__all__ = [
    "FOOTER",
    "HEADER",
    "Candidate",
    "distinct",
    "rank",
    "rank_genes",
    "render",
]
