"""Recall ranking and the injected block."""

from ._block import FETCH_TOOL, FOOTER, HEADER, entry_text, render, short_id
from ._rank import Candidate, distinct, rank, rank_genes

__all__ = [
    "FETCH_TOOL",
    "FOOTER",
    "HEADER",
    "Candidate",
    "distinct",
    "entry_text",
    "rank",
    "rank_genes",
    "render",
    "short_id",
]
