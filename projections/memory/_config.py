"""Memory settings: Living Memory's table (seed 004), read from ``<store>/memory.json``.

The file is optional and holds the seed's dotted keys as nested objects, e.g.
``{"injection": {"budget_chars": 2000}, "decay": {"lambda": 0.3}}``; what it leaves out keeps
its default. An unknown key or a value of the wrong type is a one-line error naming it.
Defaults differ from the seed's in one place, said where it is: the retrieval threshold.
"""

from __future__ import annotations

import math
import os
from typing import Any, Final

import msgspec

from .._errors import InvalidParameterError

__all__ = ["CONFIG_FILE", "MemoryConfig", "load_config"]

CONFIG_FILE: Final = "memory.json"


class MemoryConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Every number of remember, recall and compression.

    ``retrieval_threshold`` is 0.15, not the seed's 0.70 (which makes an item with an
    inactivity ratio above ~0.71 impossible to inject even at cosine 1) nor its code's 0.35:
    TF-IDF cosines of a short prompt and a relevant note are typically 0.2-0.6, and
    applicability (``min_similarity``, ``min_margin`` over the nearest generic task) is what
    keeps unrelated prompts out. ``session_budget_chars``/``prompt_budget_chars`` are the
    hook's budgets at session start and per prompt. ``reflect_lessons`` (off by default)
    lets the hook write a lesson at ``Stop`` when a successful attempt overcame a failure
    (:mod:`evolog.hook._reflect`).
    """

    ols_multiplier: float = 1.618
    min_nodes_to_compress: int = 3
    decay_lambda: float = 0.5
    backbone_decays: bool = False
    dedup_threshold: float = 0.85
    retrieval_threshold: float = 0.15
    min_similarity: float = 0.2
    min_margin: float = 0.05
    top_n: int = 10
    budget_chars: int = 4000
    cold_branch_access_ratio: float = 0.1
    session_budget_chars: int = 2000
    prompt_budget_chars: int = 4000
    reflect_lessons: bool = False

    def __post_init__(self) -> None:
        for name in (
            "ols_multiplier",
            "decay_lambda",
            "dedup_threshold",
            "retrieval_threshold",
            "min_similarity",
            "min_margin",
            "cold_branch_access_ratio",
        ):
            value = getattr(self, name)
            if not math.isfinite(value) or (value < 0 and name != "min_margin"):
                raise InvalidParameterError(
                    f"memory config {name}: expected a finite number >= 0; got {value!r}"
                )
        for name in (
            "min_nodes_to_compress",
            "top_n",
            "budget_chars",
            "session_budget_chars",
            "prompt_budget_chars",
        ):
            if getattr(self, name) < 0:
                raise InvalidParameterError(
                    f"memory config {name}: expected an integer >= 0; got {getattr(self, name)!r}"
                )


_SECTIONS: Final = {
    ("compression", "ols_multiplier"): "ols_multiplier",
    ("compression", "min_nodes_to_compress"): "min_nodes_to_compress",
    ("decay", "lambda"): "decay_lambda",
    ("decay", "backbone_decays"): "backbone_decays",
    ("similarity", "dedup_threshold"): "dedup_threshold",
    ("similarity", "retrieval_threshold"): "retrieval_threshold",
    ("applicability", "min_similarity"): "min_similarity",
    ("applicability", "min_margin"): "min_margin",
    ("injection", "top_n"): "top_n",
    ("injection", "budget_chars"): "budget_chars",
    ("archival", "cold_branch_access_ratio"): "cold_branch_access_ratio",
    ("hook", "session_budget_chars"): "session_budget_chars",
    ("hook", "prompt_budget_chars"): "prompt_budget_chars",
    ("hook", "reflect_lessons"): "reflect_lessons",
}


def config_from(data: Any, where: str = CONFIG_FILE) -> MemoryConfig:
    """A config from the nested object of ``memory.json`` (see the module docstring)."""
    if not isinstance(data, dict):
        raise InvalidParameterError(f"{where}: expected a JSON object; got {type(data).__name__}")
    flat: dict[str, Any] = {}
    for section, values in data.items():
        if not isinstance(values, dict):
            raise InvalidParameterError(f"{where}: {section}: expected an object; got {values!r}")
        for key, value in values.items():
            name = _SECTIONS.get((section, key))
            if name is None:
                known = ", ".join(f"{s}.{k}" for s, k in _SECTIONS)
                raise InvalidParameterError(
                    f"{where}: unknown key {section}.{key}; expected one of {known}"
                )
            flat[name] = value
    try:
        return msgspec.convert(flat, MemoryConfig)
    except msgspec.ValidationError as exc:
        raise InvalidParameterError(f"{where}: {exc}") from None


def load_config(root: str) -> MemoryConfig:
    """The store's config (defaults when it has no ``memory.json``)."""
    path = os.path.join(root, CONFIG_FILE)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return MemoryConfig()
    try:
        data = msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        raise InvalidParameterError(f"{path}: expected JSON; {exc}") from None
    return config_from(data, path)
