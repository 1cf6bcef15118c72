"""Memory evolution: ACE, ReasoningBank and ReMe as ``>>`` / ``|`` pipelines over the log.

A strategy maps the staging view of the memory items (:class:`EvolveItem`, frozen) and a
read-only :class:`EvolveContext` (traces, unreflected feedback, an embedder, a model) to
new items; pipelines compose them (:mod:`._pipeline`). A run (:func:`apply`) appends the
difference as ``note`` / ``prune`` / ``feedback`` events with source ``dreamed`` in one
batch, so the log alone replays it, and :func:`undo` retracts it. It lives under ``dream``
because, like a dream, it reads the item projection and traces and writes events, and
needs nothing from ``advice``. Errors are :class:`evolog.dream.EvolveError` and below.
"""

import functools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

from evolog._lazy import lazy_exports

from .._errors import SettingError
from ._ace import ACE, classify
from ._expr import parse_pipeline
from ._items import EvolveContext, EvolveItem, Model, ace_score, parse, render
from ._pipeline import Pipeline, Strategy, aevolve, evolve, merge
from ._reasoning_bank import ReasoningBank
from ._reme import ReMe
from ._run import EvolveReport, apply, curate, plan, stage, undo

if TYPE_CHECKING:
    from ._claude import ClaudeModel


__all__ = [
    "ACE",
    "STRATEGIES",
    "ClaudeModel",
    "EvolveContext",
    "EvolveItem",
    "EvolveReport",
    "Model",
    "Pipeline",
    "ReMe",
    "ReasoningBank",
    "Strategy",
    "ace_score",
    "aevolve",
    "apply",
    "classify",
    "curate",
    "evolve",
    "merge",
    "parse",
    "parse_pipeline",
    "pipeline",
    "plan",
    "render",
    "stage",
    "undo",
]

STRATEGIES: Final[dict[str, Callable[[], Strategy]]] = {
    "ace": ACE,
    "reasoning_bank": ReasoningBank,
    "reme": ReMe,
}
"""The strategies a pipeline expression may name, with their default settings."""


def pipeline(expression: str, options: Mapping[str, Mapping[str, Any]] | None = None) -> Strategy:
    """The strategy an expression such as ``"ace >> reasoning_bank >> reme"`` describes.

    ``options`` sets every occurrence of a named strategy, e.g.
    ``{"ace": {"curate_threshold": 0.3, "harmful_share": 0.6}}``.
    """
    registry = dict(STRATEGIES)
    for name, settings in (options or {}).items():
        if name not in STRATEGIES:
            raise SettingError(
                f"options: expected a strategy name ({', '.join(sorted(STRATEGIES))}); got {name!r}"
            )
        factory = functools.partial(STRATEGIES[name], **settings)
        try:
            factory()  # a wrong setting fails here, before anything is parsed or read
        except TypeError as exc:
            raise SettingError(f"options[{name!r}]: {exc}") from None
        registry[name] = factory
    return parse_pipeline(expression, registry)


__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "._claude": "ClaudeModel",
    },
    globals(),
)
