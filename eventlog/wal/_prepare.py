"""Making events ready for the WAL: envelope defaults, validation, encoding.

Every event that reaches the WAL has been encoded *and decoded again* with the typed
decoder, so nothing in the log can fail to decode later (a Python caller can put any object
in a Struct field). A batch is checked as one msgpack array: one decoder call instead of
one per event, which is most of what makes group commit fast. Only when the batch fails is
it checked event by event, to name the event and the field at fault.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

import msgspec

from .._errors import EventTooLargeError, InvalidEventError
from ..schema._codec import MAX_EVENT_BYTES, MAX_ID_CHARS, _decoder, _encoder, decode_array
from ..schema._errmsg import validation_error
from ..schema._events import SCHEMA_VERSION, Attempt, Event
from ..schema._ids import new_id, new_ids
from ..schema._rules import RULED, TS_MAX, check_rules, ts_problem
from ..schema._union import EVENT_TYPES, KINDS, AnyEvent
from ..schema._values import check_free_fields, free_fields, unencodable_error
from ._frames import array_header

#: An event ready for the WAL: (the event as checked, its body, whether its id was minted
#: here and so cannot be in the log yet). A plain tuple: a NamedTuple costs 0.2 us to make,
#: a noticeable share of a group-commit append.
Prepared: TypeAlias = tuple[AnyEvent, bytes, bool]


def prepare_many(
    events: Sequence[Event], ts_default: int, where: str = "", validated: bool = False
) -> list[Prepared]:
    """Fill envelope defaults, encode and validate a batch; raise naming a bad event.

    All or nothing: one bad event fails the whole batch, before anything is written.
    """
    if len(events) == 1:
        return [prepare_one(events[0], ts_default, where, validated)]
    for i, event in enumerate(events):
        if not isinstance(event, EVENT_TYPES):
            raise _not_an_event(event, _where(where, i))
    missing = sum(1 for e in events if not e.id)
    ids = iter(new_ids(missing, ts_default // 1000)) if missing else iter(())
    filled = [_filled(e, "" if e.id else next(ids), ts_default) for e in events]
    encode = _encoder.encode
    try:
        bodies = [encode(e) for e in filled]
    except (TypeError, ValueError, OverflowError, RecursionError):
        bodies = [_encode(e, _where(where, i)) for i, e in enumerate(filled)]
    for i, body in enumerate(bodies):
        if len(body) > MAX_EVENT_BYTES:
            _encode(filled[i], _where(where, i))  # raises EventTooLargeError
    checked = filled if validated else _validated(filled, bodies, where)
    for i, e in enumerate(checked):
        if not _envelope_ok(e):
            _check_envelope(e, _where(where, i))
        if type(e) in RULED:
            check_rules(e, _where(where, i))
    return [
        (e, b, not o.id)  # type: ignore[misc]
        for e, b, o in zip(checked, bodies, events, strict=True)
    ]


def prepare_one(
    event: Event, ts_default: int, where: str = "", validated: bool = False
) -> Prepared:
    """The same for one event, without the batch machinery (a hook's or agent's append).

    The error paths alone name the event's place: formatting it costs more than the
    checks on the common path.
    """
    if not isinstance(event, EVENT_TYPES):
        raise _not_an_event(event, _where(where, 0))
    fresh = not event.id
    event = _filled(event, new_id(ts_default // 1000) if fresh else "", ts_default)
    try:
        body = _encoder.encode(event)
    except (TypeError, ValueError, OverflowError, RecursionError):
        body = b""  # _encode below raises, naming the field
    if not body or len(body) > MAX_EVENT_BYTES:
        body = _encode(event, _where(where, 0))
    checked: Event = event
    if not validated:
        try:
            checked = _decoder().decode(body)
        except msgspec.ValidationError:
            checked = _decode_one(event, body, _where(where, 0))
        # _has_free_values and _envelope_ok, inlined: this is every append's path.
        free = _FREE_CHECKS.get(type(checked))
        if free is not None and free[0](checked) != free[1]:
            check_free_fields(checked, _where(where, 0))
    if (
        len(checked.id) > MAX_ID_CHARS
        or not 0 <= checked.ts <= TS_MAX
        or not 1 <= checked.v <= SCHEMA_VERSION
    ):
        _check_envelope(checked, _where(where, 0))
    if type(checked) in RULED:
        check_rules(checked, _where(where, 0))
    return checked, body, fresh  # type: ignore[return-value]


def _not_an_event(value: object, where: str) -> InvalidEventError:
    return InvalidEventError(
        f"expected an event (one of {', '.join(sorted(KINDS))}); got {type(value).__name__}",
        where=where,
    )


def _where(where: str, i: int) -> str:
    return f"{where}{i + 1}" if where else f"event {i + 1}"


def fill_like(event: Event, ts: int) -> Event:
    """``event`` (which has an id) with what append fills in, its time 0 taken as ``ts``."""
    return _filled(event, "", ts)


def _filled(event: Event, new_id: str, ts_default: int) -> Event:
    cls = type(event)
    key = signature = None
    if cls in _KEYED:
        signals = event.signals  # type: ignore[attr-defined]
        if signals and not event.key and type(signals) is list:  # type: ignore[attr-defined]
            fields = _key_fields_of(signals)
            if fields is not None:
                key = fields[0]
                if cls in _SIGNED and event.error_signature is None:  # type: ignore[attr-defined]
                    signature = fields[1]
    replace = msgspec.structs.replace
    if new_id and event.ts == 0 and not event.seq and cls is not Attempt:
        # The common append (no id, no time), with literal keywords: building a dict of
        # changes and unpacking it costs twice as much as the replace itself.
        if key is None:
            return replace(event, id=new_id, ts=ts_default)
        if signature is None:
            return replace(event, id=new_id, ts=ts_default, key=key)
        return replace(event, id=new_id, ts=ts_default, key=key, error_signature=signature)
    changes: dict[str, Any] = {"id": new_id} if new_id else {}
    if event.ts == 0:
        changes["ts"] = ts_default
    if event.seq:
        changes["seq"] = 0  # assigned under the write lock; it travels in the frame header
    if cls is Attempt and not event.action_id:  # type: ignore[attr-defined]
        changes["action_id"] = new_id or event.id
    if key is not None:
        changes["key"] = key
        if signature is not None:
            changes["error_signature"] = signature
    return replace(event, **changes) if changes else event


# Kinds whose ``key`` (and ``error_signature``) derive from their ``signals`` at append.
_KEYED = frozenset(c for c in EVENT_TYPES if {"signals", "key"} <= set(c.__struct_fields__))
_SIGNED = frozenset(c for c in _KEYED if "error_signature" in c.__struct_fields__)
_KEY_CACHE: dict[tuple[str, ...], tuple[str, str | None]] = {}


def _key_fields_of(signals: list[Any]) -> tuple[str, str | None] | None:
    """The key fields of a list of signals, or None when it is not a list of text.

    Cached: agents see the same few signal sets over and over, and the ECMAScript-exact
    normalisation costs tens of microseconds. (A dict, not lru_cache: a hit is the common
    case and costs half as much; the cache is cleared when it grows past 4096 sets.)
    """
    try:
        signals_t = tuple(signals)
        return _KEY_CACHE[signals_t]
    except KeyError:
        pass
    except TypeError:  # an unhashable item: not text, and validation rejects the event
        return None
    if not all(isinstance(s, str) for s in signals_t):
        return None
    if len(_KEY_CACHE) >= 4096:
        _KEY_CACHE.clear()
    fields = _KEY_CACHE[signals_t] = _key_fields(signals_t)
    return fields


def _encode(event: Event, where: str) -> bytes:
    try:
        body = _encoder.encode(event)
    except (TypeError, ValueError, OverflowError, RecursionError) as exc:
        # Lone surrogates, ints past 64 bits, arbitrary objects: nothing a field can hold.
        raise unencodable_error(event, exc, where) from None
    if len(body) > MAX_EVENT_BYTES:
        raise EventTooLargeError(
            f"{_kind(event)} event: expected at most {MAX_EVENT_BYTES} encoded bytes; "
            f"got {len(body)}",
            where=where,
        )
    return body


def _validated(events: list[Event], bodies: list[bytes], where: str) -> list[AnyEvent]:
    """The batch as decoded back from its encoding, free-form fields checked."""
    try:
        checked = decode_array(array_header(len(bodies)) + b"".join(bodies))
    except msgspec.ValidationError:
        checked = [
            _decode_one(e, b, _where(where, i))
            for i, (e, b) in enumerate(zip(events, bodies, strict=True))
        ]
    for i, e in enumerate(checked):
        if _has_free_values(e):
            check_free_fields(e, _where(where, i))
    return checked


def _has_free_values(event: Event) -> bool:
    """Whether any free-form field of ``event`` holds a value (rare: most are unset)."""
    cls = type(event)
    check = _FREE_CHECKS[cls] if cls in _FREE_CHECKS else _free_check(cls)
    return check is not None and check[0](event) != check[1]


def _free_check(cls: type[Event]) -> tuple[Callable[[Event], Any], Any] | None:
    """A getter of the free-form fields of ``cls`` and what it returns when all are unset."""
    names = free_fields(cls)
    if not names:
        return None
    return operator.attrgetter(*names), (None,) * len(names) if len(names) > 1 else None


_FREE_CHECKS = {c: _free_check(c) for c in EVENT_TYPES}


def _decode_one(event: Event, body: bytes, where: str) -> AnyEvent:
    try:
        return _decoder().decode(body)
    except msgspec.ValidationError as exc:
        raise validation_error(exc, msgspec.to_builtins(event), where) from None


def _key_fields(signals: tuple[str, ...]) -> tuple[str, str | None]:
    """The evolver-compatible signal key and error signature of a list of text signals."""
    # Imported here: only events that carry signals without a key pay for the regexes.
    from ..schema._signalkey import compute_signal_key, extract_error_signature

    return compute_signal_key(list(signals)), extract_error_signature(list(signals))


def _kind(event: Event) -> str:
    return str(event.__struct_config__.tag)


def _envelope_ok(event: Event) -> bool:
    return (
        len(event.id) <= MAX_ID_CHARS and 0 <= event.ts <= TS_MAX and 1 <= event.v <= SCHEMA_VERSION
    )


def _check_envelope(event: Event, where: str) -> None:
    """Raise naming the envelope field of ``event`` that is out of range, if any."""
    if _envelope_ok(event):
        return
    kind = _kind(event)
    if len(event.id) > MAX_ID_CHARS:
        raise InvalidEventError(
            f"{kind} event, field 'id': expected at most {MAX_ID_CHARS} characters; "
            f"got {len(event.id)}",
            where=where,
            field="id",
        )
    problem = ts_problem(event.ts)
    if problem:
        raise InvalidEventError(f"{kind} event, field 'ts': {problem}", where=where, field="ts")
    raise InvalidEventError(
        f"{kind} event, field 'v': expected a schema version from 1 to {SCHEMA_VERSION}; "
        f"got {event.v}",
        where=where,
        field="v",
    )
