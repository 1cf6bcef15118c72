"""ACE: helpful / harmful / neutral counters, reflection on feedback, curation.

Counters come from the log (the item fold's evidence: ``feedback`` ratings, and outcomes
of the attempts the item decided or supported — success helpful, failure harmful, partial
neutral — one verdict per item and attempt, which a feedback naming that attempt replaces;
see :mod:`evolog.projections.memory._fold`). :meth:`ACE.reflect` turns feedback that
carries only text (no rating) into a verdict, with a model or the offline word heuristic,
and records which feedback it read so no later run counts it again. :meth:`ACE.evolve`
reflects, then drops items whose harmful share exceeds ``harmful_share`` (0.5) and, when
``curate_threshold`` is set, items whose score (:func:`~._items.ace_score`) is below it.
``backbone`` items are never dropped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

import msgspec

from .._errors import SettingError
from ._items import EvolveContext, EvolveItem, Model
from ._pipeline import Strategy

__all__ = ["ACE", "VERDICTS", "classify"]

VERDICTS: Final = ("helpful", "harmful", "neutral")
_WORD = re.compile(r"[a-z']+")
_HARMFUL: Final = frozenset(
    [
        "wrong",
        "harmful",
        "broke",
        "broken",
        "breaks",
        "misleading",
        "outdated",
        "incorrect",
        "bad",
        "worse",
        "failed",
        "fails",
        "failure",
        "useless",
        "stale",
        "obsolete",
        "error",
        "confusing",
        "hurt",
    ]
)
_HELPFUL: Final = frozenset(
    [
        "helpful",
        "helped",
        "helps",
        "useful",
        "worked",
        "works",
        "correct",
        "right",
        "good",
        "great",
        "fixed",
        "solved",
        "saved",
        "accurate",
        "exactly",
        "perfect",
    ]
)
_NEGATION: Final = frozenset(["not", "no", "never", "didn't", "don't", "wasn't", "isn't"])
PROMPT: Final = (
    "A memory item was injected into an agent's context and the agent's user said this "
    "about it.\nItem: {item}\nFeedback: {feedback}\n"
    "Answer with exactly one word: helpful, harmful or neutral."
)


def classify(feedback: str) -> str:
    """The offline verdict on a feedback text: word lists, a negation flips the next word."""
    helpful = harmful = 0
    negate = False
    for word in _WORD.findall(feedback.lower()):
        if word in _NEGATION:
            negate = True
            continue
        if word in _HELPFUL:
            helpful, harmful = (helpful, harmful + 1) if negate else (helpful + 1, harmful)
        elif word in _HARMFUL:
            helpful, harmful = (helpful + 1, harmful) if negate else (helpful, harmful + 1)
        negate = False
    if helpful == harmful:
        return "neutral"
    return "helpful" if helpful > harmful else "harmful"


def share(name: str, value: object) -> float:
    """``value`` as a number in [0, 1], else a :class:`SettingError` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise SettingError(f"{name}: expected a number from 0 to 1; got {value!r}")
    return float(value)


def _label(reply: str) -> str:
    # As upstream: anything but one of the three labels counts as neutral.
    word = reply.strip().split()[0].strip(".,!\"'").lower() if reply.strip() else ""
    return word if word in VERDICTS else "neutral"


class ACE(Strategy):
    """Score, reflect and curate; see the module docstring."""

    name = "ace"

    def __init__(
        self,
        *,
        harmful_share: float = 0.5,
        curate_threshold: float | None = None,
        model: Model | None = None,
    ) -> None:
        self.harmful_share = share("harmful_share", harmful_share)
        self.curate_threshold = (
            None if curate_threshold is None else share("curate_threshold", curate_threshold)
        )
        self.model = model

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ACE) and (
            self.harmful_share,
            self.curate_threshold,
            self.model,
        ) == (other.harmful_share, other.curate_threshold, other.model)

    def uses_model(self, context: EvolveContext) -> bool:
        return (self.model or context.model) is not None

    def __hash__(self) -> int:
        return hash((self.name, self.harmful_share, self.curate_threshold))

    def verdict(self, item: EvolveItem, feedback: str, model: Model | None) -> str:
        if model is None:
            return classify(feedback)
        return _label(model(PROMPT.format(item=item.body, feedback=feedback)))

    def reflect(self, items: Sequence[EvolveItem], context: EvolveContext) -> list[EvolveItem]:
        """Items with the verdicts on their unreflected feedback added to their counters."""
        model = self.model or context.model
        out = []
        for item in items:
            done = {fid for fid, _ in item.reflected}
            todo = [(f, t) for f, t in context.feedback.get(item.id, ()) if f not in done]
            if not todo:
                out.append(item)
                continue
            new = [(fid, self.verdict(item, text, model)) for fid, text in todo]
            out.append(
                msgspec.structs.replace(
                    item,
                    helpful=item.helpful + sum(v == "helpful" for _, v in new),
                    harmful=item.harmful + sum(v == "harmful" for _, v in new),
                    neutral=item.neutral + sum(v == "neutral" for _, v in new),
                    reflected=(*item.reflected, *new),
                )
            )
        return out

    def curate(self, items: Sequence[EvolveItem], threshold: float = 0.3) -> list[str]:
        """Ids of the items scoring below ``threshold`` (the ones a curation retires; see
        :func:`evolog.dream.evolve.curate` for the run that appends their retirement)."""
        threshold = share("threshold", threshold)
        return [i.id for i in items if i.branch != "backbone" and i.score < threshold]

    def evolve(self, items: Sequence[EvolveItem], context: EvolveContext) -> list[EvolveItem]:
        reflected = self.reflect(items, context)
        drop = {
            i.id
            for i in reflected
            if i.branch != "backbone" and i.harmful_share > self.harmful_share
        }
        if self.curate_threshold is not None:
            drop.update(self.curate(reflected, self.curate_threshold))
        return [i for i in reflected if i.id not in drop]
