"""Encoding, decoding and validation of events.

The WAL stores msgpack; people and pipes use JSON (one event per line). Every event that
reaches the WAL has been encoded *and decoded again* with the typed decoder, so nothing in
the log can fail to decode later (a Python caller can put any object in a Struct field).
"""

from __future__ import annotations

import functools
import gc
import time
from datetime import UTC
from typing import Any, TypeAlias

import msgspec

from ._dream_events import (
    ChildStep,
    Constraint,
    DreamBegin,
    DreamEnd,
    Lifecycle,
    Link,
    Mark,
    Merge,
    Node,
    Prune,
    Retraction,
)
from ._errors import EventTooLargeError, InvalidEventError
from ._events import (
    SCHEMA_VERSION,
    Attempt,
    ConfidenceEdge,
    ConfidenceGeneOutcome,
    Event,
    ExternalCandidate,
    Feedback,
    Hypothesis,
    Note,
    Outcome,
    Signal,
    Step,
    Tick,
)
from ._ids import new_id
from ._values import check_free_fields, unencodable_error

AnyEvent: TypeAlias = (
    Signal
    | Hypothesis
    | Attempt
    | Step
    | Outcome
    | Tick
    | ConfidenceEdge
    | ConfidenceGeneOutcome
    | ExternalCandidate
    | Feedback
    | Note
    | DreamBegin
    | DreamEnd
    | Constraint
    | Mark
    | Node
    | ChildStep
    | Link
    | Merge
    | Prune
    | Retraction
    | Lifecycle
)

EVENT_TYPES: tuple[type[Event], ...] = (
    Signal,
    Hypothesis,
    Attempt,
    Step,
    Outcome,
    Tick,
    ConfidenceEdge,
    ConfidenceGeneOutcome,
    ExternalCandidate,
    Feedback,
    Note,
    DreamBegin,
    DreamEnd,
    Constraint,
    Mark,
    Node,
    ChildStep,
    Link,
    Merge,
    Prune,
    Retraction,
    Lifecycle,
)
KINDS: dict[str, type[Event]] = {str(t.__struct_config__.tag): t for t in EVENT_TYPES}

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
def _json_decoder() -> msgspec.json.Decoder[AnyEvent]:
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
    """Decode many WAL bodies in one call (a msgpack array of them)."""
    n = len(bodies)
    header = b"\xdd" + n.to_bytes(4, "big")
    # Millions of new objects trigger the cyclic GC over and over; none of them form cycles.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _many_decoder().decode(header + b"".join(bodies))
    finally:
        if enabled:
            gc.enable()


@functools.cache
def _many_decoder() -> msgspec.msgpack.Decoder[list[AnyEvent]]:
    return msgspec.msgpack.Decoder(list[AnyEvent])


def to_json(event: Event) -> bytes:
    """The JSON form of an event, exactly what :func:`from_json` accepts."""
    return _json_encoder.encode(event)


def _kind_error(data: Any, where: str) -> InvalidEventError:
    got = data.get("kind") if isinstance(data, dict) else type(data).__name__
    return InvalidEventError(
        f"field 'kind': expected one of {', '.join(sorted(KINDS))}; got {got!r}",
        where=where,
        field="kind",
    )


def _validation_error(exc: msgspec.ValidationError, data: Any, where: str) -> InvalidEventError:
    msg = str(exc)
    if not isinstance(data, dict):
        return InvalidEventError(
            f"expected a JSON object with a 'kind' field; got {type(data).__name__}", where=where
        )
    if "`$.kind`" in msg or "Object missing required field `kind`" in msg:
        return _kind_error(data, where)
    field = msg.rsplit("at `$.", 1)[1].rstrip("`") if "at `$." in msg else ""
    kind = data.get("kind", "?")
    detail = msg.split(" - at `", 1)[0]
    if detail.startswith("Invalid enum value"):
        allowed = _literal_values(KINDS.get(kind), field)
        detail = f"expected one of {', '.join(allowed)}; got {detail.split(' ', 3)[-1]}"
    elif detail.startswith("Object missing required field"):
        missing = detail.rsplit(" ", 1)[-1].strip("`")
        field = f"{field}.{missing}" if field else missing
        detail = "expected a value; got none"
    prefix = f"{kind} event, field '{field}'" if field else f"{kind} event"
    return InvalidEventError(f"{prefix}: {detail}", where=where, field=field)


def _literal_values(cls: type[Event] | None, field: str) -> list[str]:
    import typing

    if cls is None:
        return []
    hints = typing.get_type_hints(cls)
    return [str(v) for v in typing.get_args(hints.get(field))]


def parse_ts(value: Any, where: str = "") -> int:
    """Accept integer microseconds or an ISO-8601 string (no offset means UTC)."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise InvalidEventError(
            f"field 'ts': expected integer microseconds or ISO-8601 text; got {value!r}",
            where=where,
            field="ts",
        )
    if isinstance(value, int):
        return value
    from datetime import datetime  # not on the hook path: ts is usually an int

    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidEventError(
            f"field 'ts': expected ISO-8601 text like 2026-03-01T12:00:00Z; got {value!r}",
            where=where,
            field="ts",
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    delta = parsed - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def check_fields(data: Any, where: str = "") -> None:
    """Reject fields the event's kind does not have (a typo would otherwise be dropped)."""
    if not isinstance(data, dict):
        return
    cls = KINDS.get(data.get("kind"))  # type: ignore[arg-type]
    if cls is None:
        return
    unknown = sorted(set(data) - set(cls.__struct_fields__) - {"kind"})
    if unknown:
        raise InvalidEventError(
            f"{data['kind']} event: unknown field {unknown[0]!r}; expected fields of "
            f"{data['kind']}: {', '.join(sorted(cls.__struct_fields__))}",
            where=where,
            field=unknown[0],
        )


def from_json(line: bytes | str, where: str = "") -> AnyEvent:
    """Decode one JSON event, with a one-line error naming the field on failure."""
    try:
        event = _json_decoder().decode(line)
        check_fields(msgspec.json.decode(line), where)
        return event
    except msgspec.ValidationError as exc:
        data = _loads_or_raise(line, where)
        if isinstance(data, dict) and isinstance(data.get("ts"), str):
            data["ts"] = parse_ts(data["ts"], where)
            check_fields(data, where)
            try:
                converted: AnyEvent = msgspec.convert(data, AnyEvent)
                return converted
            except msgspec.ValidationError as exc2:
                raise _validation_error(exc2, data, where) from None
        raise _validation_error(exc, data, where) from None
    except (msgspec.DecodeError, UnicodeDecodeError):  # msgspec: bad UTF-8 in a string
        _loads_or_raise(line, where)
        raise  # pragma: no cover - _loads_or_raise always raises here


def _loads_or_raise(line: bytes | str, where: str) -> Any:
    try:
        return msgspec.json.decode(line)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        if isinstance(line, bytes):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as uexc:
                raise InvalidEventError(
                    f"expected UTF-8 text; got invalid byte at offset {uexc.start}",
                    where=where,
                ) from None
        raise InvalidEventError(
            f"expected one JSON object; got malformed JSON ({_json_problem(exc)})", where=where
        ) from None


def _json_problem(exc: Exception) -> str:
    text = str(exc)
    if text.startswith("Number out of range"):
        return "a number outside the 64-bit float range"
    return text


def from_builtins(data: Any, where: str = "") -> AnyEvent:
    """Convert a dict (e.g. from a hook payload) to an event, validating it."""
    if isinstance(data, dict) and isinstance(data.get("ts"), str):
        data = dict(data, ts=parse_ts(data["ts"], where))
    check_fields(data, where)
    try:
        event: AnyEvent = msgspec.convert(data, AnyEvent)
        return event
    except msgspec.ValidationError as exc:
        raise _validation_error(exc, data, where) from None


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
            raise _validation_error(exc, msgspec.to_builtins(event), where) from None
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
