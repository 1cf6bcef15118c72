"""Making events ready for the WAL: envelope defaults, validation, encoding.

Every event that reaches the WAL has been encoded *and decoded again* with the typed
decoder, so nothing in the log can fail to decode later (a Python caller can put any object
in a Struct field). A batch is checked as one msgpack array: one decoder call instead of
one per event, which is most of what makes group commit fast. Only when the batch fails is
it checked event by event, to name the event and the field at fault.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import msgspec

from ._codec import MAX_EVENT_BYTES, MAX_ID_CHARS, _decoder, _encoder, decode_array
from ._errmsg import validation_error
from ._errors import EventTooLargeError, InvalidEventError
from ._events import SCHEMA_VERSION, Attempt, Event
from ._frames import array_header
from ._ids import new_id, new_ids
from ._union import EVENT_TYPES, KINDS, AnyEvent
from ._values import check_free_fields, free_fields, unencodable_error


class Prepared(NamedTuple):
    event: AnyEvent
    body: bytes
    fresh: bool  # the id was minted here: it cannot be in the log yet


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
    except (TypeError, ValueError, OverflowError):
        bodies = [_encode(e, _where(where, i)) for i, e in enumerate(filled)]
    for i, body in enumerate(bodies):
        if len(body) > MAX_EVENT_BYTES:
            _encode(filled[i], _where(where, i))  # raises EventTooLargeError
    checked = filled if validated else _validated(filled, bodies, where)
    for i, e in enumerate(checked):
        if not _envelope_ok(e):
            _check_envelope(e, _where(where, i))
    return [
        Prepared(e, b, not o.id)  # type: ignore[arg-type]
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
    except (TypeError, ValueError, OverflowError):
        body = b""  # _encode below raises, naming the field
    if not body or len(body) > MAX_EVENT_BYTES:
        body = _encode(event, _where(where, 0))
    checked: Event = event
    if not validated:
        try:
            checked = _decoder().decode(body)
        except msgspec.ValidationError:
            checked = _decode_one(event, body, _where(where, 0))
        if _has_free_values(checked):
            check_free_fields(checked, _where(where, 0))
    if not _envelope_ok(checked):
        _check_envelope(checked, _where(where, 0))
    return Prepared(checked, body, fresh)  # type: ignore[arg-type]


def _not_an_event(value: object, where: str) -> InvalidEventError:
    return InvalidEventError(
        f"expected an event (one of {', '.join(sorted(KINDS))}); got {type(value).__name__}",
        where=where,
    )


def _where(where: str, i: int) -> str:
    return f"{where}{i + 1}" if where else f"event {i + 1}"


def _filled(event: Event, new_id: str, ts_default: int) -> Event:
    changes: dict[str, Any] = {}
    if new_id:
        changes["id"] = new_id
    if event.ts == 0:
        changes["ts"] = ts_default
    if event.seq:
        changes["seq"] = 0  # assigned under the write lock; it travels in the frame header
    if type(event) is Attempt and not event.action_id:
        changes["action_id"] = new_id or event.id
    signals = getattr(event, "signals", None)
    if signals and type(signals) is list and not getattr(event, "key", "x"):
        fields = _key_fields_of(signals)
        if fields is not None:
            changes["key"] = fields[0]
            if getattr(event, "error_signature", "x") is None and fields[1] is not None:
                changes["error_signature"] = fields[1]
    return msgspec.structs.replace(event, **changes) if changes else event


def _key_fields_of(signals: list[Any]) -> tuple[str, str | None] | None:
    """The key fields of a list of signals, or None when it is not a list of text."""
    try:
        return _key_fields(tuple(signals))
    except TypeError:  # an unhashable item: not text, and validation rejects the event
        return None


def _encode(event: Event, where: str) -> bytes:
    try:
        body = _encoder.encode(event)
    except (TypeError, ValueError, OverflowError) as exc:
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
    values = _free_values(type(event))(event)
    return values.count(None) != len(values)


@functools.cache
def _free_values(cls: type[Event]) -> Callable[[Event], tuple[Any, ...]]:
    names = free_fields(cls)
    if len(names) > 1:
        return operator.attrgetter(*names)
    if names:
        get = operator.attrgetter(names[0])
        return lambda e: (get(e),)
    return lambda e: ()


def _decode_one(event: Event, body: bytes, where: str) -> AnyEvent:
    try:
        return _decoder().decode(body)
    except msgspec.ValidationError as exc:
        raise validation_error(exc, msgspec.to_builtins(event), where) from None


@functools.lru_cache(maxsize=4096)
def _key_fields(signals: tuple[str, ...]) -> tuple[str, str | None]:
    """The evolver-compatible signal key and error signature of a signal list.

    Items that are not text (the event then fails validation) raise TypeError. Cached:
    agents see the same few signal sets over and over, and the ECMAScript-exact
    normalisation costs tens of microseconds.
    """
    # Imported here: only events that carry signals without a key pay for the regexes.
    from ._signalkey import compute_signal_key, extract_error_signature

    if not all(type(s) is str for s in signals):
        raise TypeError("signals must be text")
    return compute_signal_key(list(signals)), extract_error_signature(list(signals))


def _kind(event: Event) -> str:
    return str(event.__struct_config__.tag)


def _envelope_ok(event: Event) -> bool:
    return len(event.id) <= MAX_ID_CHARS and event.ts >= 0 and 1 <= event.v <= SCHEMA_VERSION


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
    if event.ts < 0:
        raise InvalidEventError(
            f"{kind} event, field 'ts': expected microseconds >= 0; got {event.ts}",
            where=where,
            field="ts",
        )
    raise InvalidEventError(
        f"{kind} event, field 'v': expected a schema version from 1 to {SCHEMA_VERSION}; "
        f"got {event.v}",
        where=where,
        field="v",
    )
