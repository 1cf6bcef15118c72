"""Encoding and decoding of events.

The WAL stores msgpack; people and pipes use JSON (one event per line). Validation before
an append is in :mod:`evolog.eventlog.wal._prepare`.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import time
from collections.abc import Iterator

import msgspec

from ..wal._frames import array_header
from ._events import Event
from ._union import AnyEvent

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
    return decode_array(array_header(len(bodies)) + b"".join(bodies))


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection inside: for bulk work that makes many short-lived
    objects, none of them in a cycle, which the collector would walk over and over."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def decode_array(data: bytes) -> list[AnyEvent]:
    """Decode a msgpack array of events (what WAL frames hold, with an array header)."""
    with gc_paused():  # millions of new objects, none in a cycle
        return _many_decoder().decode(data)


@functools.cache
def _many_decoder() -> msgspec.msgpack.Decoder[list[AnyEvent]]:
    return msgspec.msgpack.Decoder(list[AnyEvent])


def to_json(event: Event) -> bytes:
    """The JSON form of an event, exactly what :func:`from_json` accepts."""
    return _json_encoder.encode(event)


def kind_of(event: Event) -> str:
    """The ``kind`` tag of an event."""
    return str(event.__struct_config__.tag)
