"""Encoding, decoding and validation of events.

The WAL stores msgpack; people and pipes use JSON (one event per line). Every event that
reaches the WAL has been encoded *and decoded again* with the typed decoder, so nothing in
the log can fail to decode later (a Python caller can put any object in a Struct field).
"""

from __future__ import annotations

import functools
import gc
import time
from typing import Any

import msgspec

from ._errmsg import validation_error
from ._errors import EventTooLargeError, InvalidEventError
from ._events import SCHEMA_VERSION, Attempt, Event
from ._ids import new_id
from ._union import EVENT_TYPES, KINDS, AnyEvent
from ._values import check_free_fields, unencodable_error

#: The largest msgpack encoding of one event the log accepts (1 MiB).
MAX_EVENT_BYTES = 1 << 20
#: Longest accepted id (client idempotency keys included).
MAX_ID_CHARS = 256

_encoder = msgspec.msgpack.Encoder()
_json_encoder = msgspec.json.Encoder()


# Typed decoders cost milliseconds to build (type hints of every kind are resolved), and a
# hook process needs only one of them: build each on first use.
@functools.cache
def _decoder() -> msgspec.msgpack.Decoder[AnyEvent]:
    return msgspec.msgpack.Decoder(AnyEvent)


@functools.cache
def json_decoder() -> msgspec.json.Decoder[AnyEvent]:
    return msgspec.json.Decoder(AnyEvent)


def now_us() -> int:
    """Current UTC time in integer microseconds."""
    return time.time_ns() // 1000


def encode(event: Event) -> bytes:
    """msgpack encoding of an event, as stored in the WAL."""
    return _encoder.encode(event)


def decode(data: bytes) -> AnyEvent:
    """Decode one WAL body."""
    return _decoder().decode(data)


def decode_many(bodies: list[bytes]) -> list[AnyEvent]:
    """Decode many event encodings in one call (as a msgpack array of them)."""
    return decode_array(b"\xdd" + len(bodies).to_bytes(4, "big") + b"".join(bodies))


def decode_array(data: bytes) -> list[AnyEvent]:
    """Decode a msgpack array of events (what WAL frames hold, with an array header)."""
    # Millions of new objects trigger the cyclic GC over and over; none of them form cycles.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _many_decoder().decode(data)
    finally:
        if enabled:
            gc.enable()


@functools.cache
def _many_decoder() -> msgspec.msgpack.Decoder[list[AnyEvent]]:
    return msgspec.msgpack.Decoder(list[AnyEvent])


def to_json(event: Event) -> bytes:
    """The JSON form of an event, exactly what :func:`from_json` accepts."""
    return _json_encoder.encode(event)


def prepare(
    event: Event, ts_default: int, where: str = "", validated: bool = False
) -> tuple[AnyEvent, bytes]:
    """Fill the envelope defaults and validate; returns the event and its encoding.

    ``seq`` is zeroed here and assigned under the write lock; the encoding returned is of
    the seq-less event, since the seq travels in the WAL frame header. Events decoded from
    JSON by the typed decoder are already ``validated``; others are decoded back from their
    encoding, which is what proves every field has its declared type.
    """
    if not isinstance(event, EVENT_TYPES):
        raise InvalidEventError(
            f"expected an event (one of {', '.join(sorted(KINDS))}); got {type(event).__name__}",
            where=where,
        )
    changes: dict[str, Any] = {}
    if not event.id:
        changes["id"] = new_id(ts_default // 1000)
    if event.ts == 0:
        changes["ts"] = ts_default
    if event.seq:
        changes["seq"] = 0
    if isinstance(event, Attempt) and not event.action_id:
        changes["action_id"] = changes.get("id", event.id)
    signals = getattr(event, "signals", None)
    if (
        signals
        and isinstance(signals, list)
        and not getattr(event, "key", "x")
        and all(type(s) is str for s in signals)
    ):
        key, errsig = _key_fields(tuple(signals))
        changes["key"] = key
        if getattr(event, "error_signature", "x") is None and errsig is not None:
            changes["error_signature"] = errsig
    if changes:
        event = msgspec.structs.replace(event, **changes)
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
    if validated:
        checked: AnyEvent = event  # type: ignore[assignment]
    else:
        try:
            checked = _decoder().decode(body)
        except msgspec.ValidationError as exc:
            raise validation_error(exc, msgspec.to_builtins(event), where) from None
        check_free_fields(checked, where)
    _check_envelope(checked, where)
    return checked, body


@functools.lru_cache(maxsize=4096)
def _key_fields(signals: tuple[str, ...]) -> tuple[str, str | None]:
    """The evolver-compatible signal key and error signature of a signal list.

    Cached: agents see the same few signal sets over and over, and the ECMAScript-exact
    normalisation costs tens of microseconds.
    """
    # Imported here: only events that carry signals without a key pay for the regexes.
    from ._signalkey import compute_signal_key, extract_error_signature

    return compute_signal_key(list(signals)), extract_error_signature(list(signals))


def _kind(event: Event) -> str:
    return str(event.__struct_config__.tag)


def _check_envelope(event: Event, where: str) -> None:
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
    if event.v > SCHEMA_VERSION or event.v < 1:
        raise InvalidEventError(
            f"{kind} event, field 'v': expected a schema version from 1 to {SCHEMA_VERSION}; "
            f"got {event.v}",
            where=where,
            field="v",
        )


def kind_of(event: Event) -> str:
    """The ``kind`` tag of an event."""
    return _kind(event)
