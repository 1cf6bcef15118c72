"""The staging view evolution strategies read and return: immutable items and a context.

An :class:`EvolveItem` is one active memory item as the log says it is now (text, tags,
ACE counters), plus the structured fields the algorithms add (ReasoningBank's title and
description, ReMe's ``when_to_use`` and pattern). Items are frozen: a strategy returns new
items instead of editing its input, which is what makes ``a | b`` independent of the order
the branches run in. Structured fields travel in a note's text as leading header lines
(:func:`render` / :func:`parse`), so the recalled block shows them and a replay of the
events gives the same items back without any new event field.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

import msgspec

if TYPE_CHECKING:
    from evolog.projections import Embedder

    from .._traces import Trace

__all__ = ["HEADERS", "EvolveContext", "EvolveItem", "ace_score", "parse", "render"]

HEADERS: Final = (
    ("title", "Title: "),
    ("description", "Description: "),
    ("when_to_use", "When to use: "),
    ("pattern", "Pattern: "),
)
"""Structured fields and the header line each is written as, in this order."""


class EvolveItem(msgspec.Struct, frozen=True, kw_only=True):
    """One memory item in a run's staging view.

    ``sources`` lists items this one absorbs in the run (their history and evidence move
    to it); ``origin`` names the strategy that wrote it ("" for what the log held);
    ``seq`` orders items by age (their last write; a trace's outcome for new ones);
    ``reflected`` the (feedback id, verdict) pairs a reflection added to the counters.
    """

    id: str
    kind: str = "note"
    branch: str = "notes"
    text: str = ""
    tags: tuple[str, ...] = ()
    title: str = ""
    description: str = ""
    when_to_use: str = ""
    pattern: str = ""
    helpful: int = 0
    harmful: int = 0
    neutral: int = 0
    sources: tuple[str, ...] = ()
    reflected: tuple[tuple[str, str], ...] = ()
    origin: str = ""
    seq: int = 0

    @property
    def score(self) -> float:
        """The ACE score (:func:`ace_score`) of the item's counters."""
        return ace_score(self.helpful, self.harmful, self.neutral)

    @property
    def harmful_share(self) -> float:
        total = self.helpful + self.harmful + self.neutral
        return self.harmful / total if total else 0.0

    @property
    def body(self) -> str:
        """Everything a similarity test should see: the structured fields and the text."""
        return " ".join(x for x in (self.title, self.description, self.when_to_use, self.text) if x)


def ace_score(helpful: int, harmful: int, neutral: int) -> float:
    """helpful / (helpful + harmful + neutral), 0.5 without evidence (seed 001's formula).

    The upstream code uses ((helpful - harmful) / total + 1) / 2, which counts neutral
    verdicts as half helpful; here a neutral verdict dilutes the score, so an item that is
    merely tolerated drifts towards curation instead of holding at 0.5.
    """
    total = helpful + harmful + neutral
    return helpful / total if total else 0.5


def _one_line(text: str) -> str:
    return " ".join(text.split())


def render(item: EvolveItem) -> str:
    """The note text for an item: its structured fields as header lines, then its text."""
    lines = [prefix + _one_line(getattr(item, f)) for f, prefix in HEADERS if getattr(item, f)]
    return "\n".join([*lines, item.text]) if lines else item.text


def parse(text: str) -> dict[str, str]:
    """The fields :func:`render` wrote (``text`` holds what follows the headers)."""
    out: dict[str, str] = {}
    rest = text
    for field, prefix in HEADERS:
        if rest.startswith(prefix):
            line, _, rest = rest.partition("\n")
            out[field] = line[len(prefix) :]
    out["text"] = rest
    return out


Model = Callable[[str], str]
"""A model call: prompt in, reply out (the anthropic SDK or a test double behind it)."""


@dataclasses.dataclass(frozen=True)
class EvolveContext:
    """What strategies may read besides the items; never written by them.

    ``traces`` are the log's complete attempts (oldest first); ``feedback`` the unrated
    feedback texts per item that no run has reflected yet (feedback id, text);
    ``known`` every item id the log ever held (so a trace already learnt from, even if
    its entry was later merged away, is not learnt again); ``embedder`` is None when
    embeddings are off; ``model`` is None for the offline heuristics.
    """

    traces: tuple[Trace, ...] = ()
    feedback: Mapping[str, tuple[tuple[str, str], ...]] = dataclasses.field(default_factory=dict)
    known: frozenset[str] = frozenset()
    embedder: Embedder | None = None
    model: Model | None = None
    options: Mapping[str, Any] = dataclasses.field(default_factory=dict)
