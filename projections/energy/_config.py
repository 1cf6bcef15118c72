"""The survival ledger's constants and clock: every number of the rules is configurable here.

Defaults are darwin-memo 0.7.1's event-driven ``Ledger`` (docs/reference/ledger.md
§2, §6). The clock is explicit ``tick`` events by default; a cadence adds ticks per dream
cycle (``dream_end``), per N outcomes, or per period of event time (a UTC day by default).
"""

from __future__ import annotations

import math

import msgspec
from evolog.eventlog import Attempt, DreamEnd, Lifecycle, Merge, Node, Outcome, Tick

from .._errors import InvalidParameterError

DAY_US = 86_400_000_000

#: The event kinds the ledger reads (their times alone drive an event-time clock); here,
#: not beside the follower, so that a cold reader can name them without the rules (numpy).
LEDGER_KINDS = (Attempt, Outcome, Tick, Lifecycle, Merge, Node, DreamEnd)


class LedgerConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The ledger's rules and clock.

    Energy: entries are born with ``spawn_energy``, pay ``upkeep`` per tick, are capped at
    ``max_energy`` on every credit and die at a burial point once ``energy <= alive_epsilon``.
    Credit per measured outcome: ``credit_gain * tanh(delta / resource_scale)`` to the
    decider, ``supporting_share`` of it to each supporter. A credit below
    ``-damage_epsilon`` marks the entry damaged (its death is then "executed").
    Tickets (attempts not yet settled) expire, settling at 0, once older than
    ``expire_after`` ticks. ``consolidate_every`` ticks, alive entries closer than
    ``merge_threshold`` (by an injected similarity) merge. ``admission_window`` gives new
    entries that many reduced-credit settlements (0 = off).

    Clock: ``explicit_ticks`` counts ``tick`` events; ``ticks_per_dream`` ticks after each
    ``dream_end``; ``outcomes_per_tick`` ticks after every N-th outcome; ``tick_every_us``
    ticks once per boundary of that period crossed by event time (``DAY_US`` = per day).
    0 disables a cadence.

    ``gene_decides``: an attempt or outcome that names no entries but names a gene is decided
    by that gene (evolver-style logs carry the gene, not provenance lists).
    """

    spawn_energy: float = 1.0
    upkeep: float = 0.05
    max_energy: float = 5.0
    credit_gain: float = 0.6
    supporting_share: float = 0.25
    resource_scale: float = 1.0
    alive_epsilon: float = 1e-9
    damage_epsilon: float = 1e-9
    expire_after: int = 50
    consolidate_every: int = 5
    merge_threshold: float = 0.55
    admission_window: int = 0
    history_limit: int = 100
    explicit_ticks: bool = True
    ticks_per_dream: int = 0
    outcomes_per_tick: int = 0
    tick_every_us: int = 0
    gene_decides: bool = True

    def __post_init__(self) -> None:
        positive: tuple[str, ...] = ("spawn_energy", "max_energy", "resource_scale")
        non_negative: tuple[str, ...] = ("upkeep", "credit_gain", "supporting_share")
        non_negative += ("alive_epsilon", "damage_epsilon", "merge_threshold")
        for name in positive + non_negative:
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                _bad(name, "a number", value)
            if not math.isfinite(value) or value < 0 or (name in positive and value == 0):
                _bad(name, "a finite number " + ("> 0" if name in positive else ">= 0"), value)
        counts: tuple[str, ...] = ("expire_after", "consolidate_every", "admission_window")
        counts += ("history_limit",)
        counts += ("ticks_per_dream", "outcomes_per_tick", "tick_every_us")
        for name in counts:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                _bad(name, "an integer >= 0", value)
        for name in ("explicit_ticks", "gene_decides"):
            if not isinstance(getattr(self, name), bool):
                _bad(name, "true or false", getattr(self, name))

    def fingerprint(self) -> str:
        """A short stable digest of every field (cache keys)."""
        import hashlib

        return hashlib.sha256(msgspec.msgpack.encode(self)).hexdigest()[:16]


def _bad(name: str, expected: str, got: object) -> None:
    raise InvalidParameterError(f"ledger config {name}: expected {expected}; got {got!r}")


def config_from(obj: LedgerConfig | dict[str, object] | None) -> LedgerConfig:
    """A config from ``None`` (the defaults), a config, or a mapping of fields."""
    if obj is None:
        return LedgerConfig()
    if isinstance(obj, LedgerConfig):
        return obj
    if not isinstance(obj, dict):
        raise InvalidParameterError(
            f"ledger config: expected a LedgerConfig or a mapping; got {type(obj).__name__}"
        )
    try:
        return msgspec.convert(obj, LedgerConfig)
    except msgspec.ValidationError as exc:
        text = str(exc)
        prefix = "" if text.startswith("ledger config") else "ledger config: "
        raise InvalidParameterError(prefix + text) from None


def parse_cadence(text: str) -> dict[str, object]:
    """Config fields for a cadence: ``explicit``, ``dream``, ``outcomes:N``, ``day``, ``us:N``.

    Each cadence adds to explicit ``tick`` events, which always count unless the config says
    ``explicit_ticks=False``.
    """
    name, _, arg = text.strip().partition(":")
    fields: dict[str, object] = {}
    try:
        n = int(arg) if arg else 1
    except ValueError:
        n = -1
    if n < 1 or (arg and name in ("explicit", "day")):
        raise InvalidParameterError(
            f"cadence: expected explicit, dream[:N], outcomes:N, day or us:N; got {text!r}"
        )
    if name == "dream":
        fields["ticks_per_dream"] = n
    elif name == "outcomes" and arg:
        fields["outcomes_per_tick"] = n
    elif name == "day":
        fields["tick_every_us"] = DAY_US
    elif name == "us" and arg:
        fields["tick_every_us"] = n
    elif name != "explicit":
        raise InvalidParameterError(
            f"cadence: expected explicit, dream[:N], outcomes:N, day or us:N; got {text!r}"
        )
    return fields
