"""Time-ordered event ids (26 Crockford base32 characters, ULID layout).

48 bits of milliseconds then 80 bits that start random per process and count up within a
millisecond. Counting up (instead of fresh randomness per id) keeps ids from one writer
sorted and sharing long prefixes, which is what makes them compress in Parquet segments.
"""

from __future__ import annotations

import os
import threading
import time

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_RANDOM_BITS = 80
_RANDOM_MASK = (1 << _RANDOM_BITS) - 1


class _State:
    last_ms = -1
    counter = 0
    prefix_of = -1  # (ms << 50) | (counter >> 30) that ``prefix`` encodes
    prefix = ""


_state = _State()
_lock = threading.Lock()


# Two base32 digits per 10 bits: 13 table lookups encode the 130-bit big-endian form.
_PAIRS = [a + b for a in _ALPHABET for b in _ALPHABET]


def _encode(value: int) -> str:
    return "".join([_PAIRS[(value >> shift) & 1023] for shift in range(120, -1, -10)])


def new_id(now_ms: int | None = None) -> str:
    """Return a new id that sorts after every id this process made before."""
    ms = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    with _lock:
        if ms > _state.last_ms:
            _state.last_ms = ms
            # Leave headroom below the top so counting up never overflows the 80 bits.
            _state.counter = int.from_bytes(os.urandom(10), "big") >> 1
        else:
            ms = _state.last_ms
            _state.counter = (_state.counter + 1) & _RANDOM_MASK
        c = _state.counter
        # Ids minted in one millisecond share their first 20 characters: encode them once.
        high = (ms << 50) | (c >> 30)
        if high != _state.prefix_of:
            _state.prefix_of = high
            _state.prefix = _encode((ms << _RANDOM_BITS) | c)[:20]
        return (
            _state.prefix + _PAIRS[(c >> 20) & 1023] + _PAIRS[(c >> 10) & 1023] + _PAIRS[c & 1023]
        )


def new_ids(n: int, now_ms: int | None = None) -> list[str]:
    """``n`` new ids in increasing order, as :func:`new_id` would make them one by one."""
    ms = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    with _lock:
        if ms > _state.last_ms:
            _state.last_ms = ms
            first = int.from_bytes(os.urandom(10), "big") >> 1
        else:
            ms = _state.last_ms
            first = _state.counter + 1
        _state.counter = (first + n - 1) & _RANDOM_MASK
    # Consecutive counters share all but their last 30 bits: encode the 20-character
    # prefix once per run and only the last six characters per id.
    out: list[str] = []
    pairs = _PAIRS
    c, end = first, first + n
    while c < end:
        stop = min(end, ((c >> 30) + 1) << 30)
        prefix = _encode((ms << _RANDOM_BITS) | (c & _RANDOM_MASK))[:20]
        out += [
            prefix + pairs[(x >> 20) & 1023] + pairs[(x >> 10) & 1023] + pairs[x & 1023]
            for x in range(c, stop)
        ]
        c = stop
    return out


def _reset_after_fork() -> None:
    # A forked child must not continue its parent's counter: both would mint equal ids.
    _state.last_ms = -1


os.register_at_fork(after_in_child=_reset_after_fork)
