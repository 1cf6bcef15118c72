"""Time-ordered event ids (26 Crockford base32 characters, ULID layout).

48 bits of milliseconds then an 80-bit counter that starts at a random value in each
process (and after a fork) and counts up by one per id, across milliseconds too. Counting
up (instead of fresh randomness per id, or per millisecond as ULID's monotonic variant
does) keeps ids from one writer sorted and sharing long prefixes, which is what makes them
compress in Parquet segments, and spares a getrandom call per millisecond: one for every
durable append. Two processes clash only if their random 80-bit runs overlap.
"""

from __future__ import annotations

import os
import threading
import time

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_RANDOM_BITS = 80
_RANDOM_MASK = (1 << _RANDOM_BITS) - 1
_LOW_BITS = 30  # the last six characters; the first 20 encode the milliseconds and the rest
_LOW_MASK = (1 << _LOW_BITS) - 1


class _State:
    """The counter as (hi, low), so that the common step is small-int arithmetic."""

    last_ms = -1
    hi = 0  # counter >> 30
    low = 0  # counter & (2**30 - 1)
    hi_of = -1  # the hi that hi_text encodes
    hi_text = ""
    prefix = ""  # the first 20 characters, for (last_ms, hi)
    mid = ""  # the first 24 characters, for (last_ms, hi, low >> 10)
    mid_of = -1  # the low >> 10 that ``mid`` encodes


_state = _State()
_lock = threading.Lock()


# Two base32 digits per 10 bits: 13 table lookups encode the 130-bit big-endian form.
_PAIRS = [a + b for a in _ALPHABET for b in _ALPHABET]


def _encode(value: int) -> str:
    return "".join([_PAIRS[(value >> shift) & 1023] for shift in range(120, -1, -10)])


def _encode50(value: int) -> str:
    """Ten characters for 50 bits: the milliseconds (two zero bits on top) or ``hi``."""
    p = _PAIRS
    return "".join(
        (
            p[value >> 40 & 1023],
            p[value >> 30 & 1023],
            p[value >> 20 & 1023],
            p[value >> 10 & 1023],
            p[value & 1023],
        )
    )


def _set(ms: int, counter: int) -> None:
    """Make ``counter`` (of millisecond ``ms``) the last one used; the caller holds _lock."""
    counter &= _RANDOM_MASK
    _state.last_ms = ms
    _state.hi, _state.low = counter >> _LOW_BITS, counter & _LOW_MASK
    # The first 20 characters are the milliseconds' ten and hi's ten (which rarely changes).
    if _state.hi != _state.hi_of:
        _state.hi_of, _state.hi_text = _state.hi, _encode50(_state.hi)
    _state.prefix = _encode50(ms) + _state.hi_text
    _state.mid_of = -1


def _next_counter() -> int:
    """The counter after the last one used; a random start for a new process."""
    if _state.last_ms < 0:
        # Leave headroom below the top so counting up practically never wraps the 80 bits.
        return int.from_bytes(os.urandom(10), "big") >> 1
    return ((_state.hi << _LOW_BITS) | _state.low) + 1


def new_id(now_ms: int | None = None) -> str:
    """Return a new id that sorts after every id this process made before."""
    ms = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    with _lock:
        if ms > _state.last_ms:
            _set(ms, _next_counter())
            low = _state.low
        else:
            low = _state.low + 1
            if low > _LOW_MASK:  # carries into the first 20 characters
                _set(_state.last_ms, (_state.hi + 1) << _LOW_BITS)
                low = 0
            else:
                _state.low = low
        # Ids minted in one millisecond share their first 24 characters, 1024 at a time.
        if low >> 10 != _state.mid_of:
            _state.mid_of = low >> 10
            _state.mid = _state.prefix + _PAIRS[low >> 20] + _PAIRS[(low >> 10) & 1023]
        return _state.mid + _PAIRS[low & 1023]


def new_ids(n: int, now_ms: int | None = None) -> list[str]:
    """``n`` new ids in increasing order, as :func:`new_id` would make them one by one."""
    ms = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    with _lock:
        if ms > _state.last_ms:
            first = _next_counter()
        else:
            ms = _state.last_ms
            first = ((_state.hi << _LOW_BITS) | _state.low) + 1
        _set(ms, first + n - 1)
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
