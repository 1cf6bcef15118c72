"""JavaScript-exact primitives behind evolver's memory-graph advice.

evolver (``src/gep/memoryGraph.js``, v1.29.8) keys its history on strings built by JavaScript
code. To reproduce its signal keys, hashes and explanations exactly we have to follow
ECMAScript rules rather than Python's where the two disagree: ``String(x || '')`` coercion,
UTF-16 code units (hashing, truncation, sort order), the ECMAScript whitespace set, ASCII-only
``\\b``/``\\d`` in non-Unicode regexes, ``Number.prototype.toFixed`` and ``Date.parse``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from decimal import ROUND_HALF_UP, Decimal, localcontext

__all__ = [
    "compute_signal_key",
    "extract_error_signature",
    "has_error_signal",
    "jaccard",
    "jaccard_sets",
    "js_pow",
    "js_string",
    "js_trim",
    "js_truthy",
    "normalize_error_signature",
    "normalize_signals_for_matching",
    "parse_iso_ms",
    "stable_hash",
    "to_fixed",
    "utf16_sort_key",
]

# ECMAScript WhiteSpace + LineTerminator: what String.prototype.trim() and regex \s use.
# Python's str.strip() and re's \s use a different set (e.g. they include U+001C..U+001F and
# U+0085 but not U+FEFF), so both are spelled out here.
_JS_WHITESPACE = (
    "\t\n\x0b\x0c\r \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_JS_WS_RUN = re.compile("[" + re.escape(_JS_WHITESPACE) + "]+")

# The string is lower-cased before these run, so evolver's /i flags change nothing; re.ASCII
# is what matters: JS regexes without /u treat \b, \d and [a-z] as ASCII only, while Python's
# default Unicode mode would let \d match other digits and case-folding match U+017F or U+212A.
_WINDOWS_PATH = re.compile(r"[a-z]:\\[^ \n\r\t]+", re.ASCII)
_SLASH_PATH = re.compile(r"/[^ \n\r\t]+", re.ASCII)
_HEX_TOKEN = re.compile(r"\b0x[0-9a-f]+\b", re.ASCII)
_NUMBER_TOKEN = re.compile(r"\b\d+\b", re.ASCII)

_ERRSIG_PREFIX = "errsig:"
_MAX_SIGNATURE_UNITS = 220
_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193
_NONE_KEY = "(none)"


def js_truthy(value: object) -> bool:
    """Return JavaScript truthiness of a JSON-like value.

    Differs from ``bool()``: empty lists and dicts are truthy in JavaScript.
    """
    if value is None or value is False:
        return False
    if isinstance(value, int | float):
        return value == value and value != 0  # NaN and ±0 are falsy
    if isinstance(value, str):
        return value != ""
    return True


def _js_number(x: float) -> str:
    """Format a double like ECMAScript ``Number::toString`` (shortest round-trip digits)."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "0"
    if x < 0:
        return "-" + _js_number(-x)
    # repr() already gives the shortest digits that round-trip, as JS does; only the layout
    # (where the point goes, when to switch to exponent form) differs.
    _, digit_tuple, exponent = Decimal(repr(x)).normalize().as_tuple()
    digits = "".join(map(str, digit_tuple))
    k = len(digits)
    n = int(exponent) + k
    if k <= n <= 21:
        return digits + "0" * (n - k)
    if 0 < n <= 21:
        return digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return "0." + "0" * -n + digits
    e = n - 1
    mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
    return f"{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"


def _canonical_utf16(text: str) -> str:
    # JavaScript strings are UTF-16, so a surrogate pair and the astral character it encodes
    # are the same string there; in Python they are not. Round-tripping merges such pairs so
    # set membership and equality agree with JavaScript.
    if text.isascii():
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def _to_string(value: object) -> str:
    """ECMAScript ``ToString`` for JSON-like values."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _canonical_utf16(value)
    if isinstance(value, int):
        try:
            return _js_number(float(value))
        except OverflowError:  # JSON.parse would have produced ±Infinity
            return "Infinity" if value > 0 else "-Infinity"
    if isinstance(value, float):
        return _js_number(value)
    if isinstance(value, list | tuple):
        # Array.prototype.join: null/undefined elements become '', not 'null'.
        return ",".join("" if item is None else _to_string(item) for item in value)
    if isinstance(value, Mapping):
        return "[object Object]"
    return str(value)


def js_string(value: object) -> str:
    """Return ``String(value || '')``: falsy values give ``''``, others JS ``ToString``."""
    return _to_string(value) if js_truthy(value) else ""


def js_trim(text: str) -> str:
    """``String.prototype.trim`` with the ECMAScript whitespace set."""
    return text.strip(_JS_WHITESPACE)


def utf16_sort_key(text: str) -> bytes:
    """Sort key that orders strings by UTF-16 code units, like JavaScript's default sort.

    Code-point order differs for astral characters, which sort before U+E000..U+FFFF in JS.
    """
    return text.encode("utf-16-be", "surrogatepass")


def stable_hash(value: object) -> str:
    """32-bit FNV-1a over the UTF-16 code units of ``String(value || '')``, as 8 hex digits."""
    data = js_string(value).encode("utf-16-le", "surrogatepass")
    h = _FNV_OFFSET
    for i in range(0, len(data), 2):
        h = ((h ^ (data[i] | (data[i + 1] << 8))) * _FNV_PRIME) & 0xFFFFFFFF
    return f"{h:08x}"


def _truncate_utf16(text: str, units: int) -> str:
    # slice() counts UTF-16 code units and may cut a surrogate pair in half; surrogatepass
    # keeps the lone high surrogate so the hash sees exactly what JavaScript hashes.
    if text.isascii():
        return text[:units]
    data = text.encode("utf-16-le", "surrogatepass")[: 2 * units]
    return data.decode("utf-16-le", "surrogatepass")


def normalize_error_signature(text: object) -> str | None:
    """Normalise an error message so that paths, hex and numbers do not split keys.

    Returns ``None`` for empty or whitespace-only input.
    """
    s = js_trim(js_string(text))
    if not s:
        return None
    s = s.lower()  # Unicode full case mapping, like toLowerCase ('İ' becomes two units)
    s = _WINDOWS_PATH.sub("<path>", s)
    s = _SLASH_PATH.sub("<path>", s)
    s = _HEX_TOKEN.sub("<hex>", s)
    s = _NUMBER_TOKEN.sub("<n>", s)
    s = _JS_WS_RUN.sub(" ", s)
    return _truncate_utf16(s, _MAX_SIGNATURE_UNITS)


def _as_array(value: object) -> list[object] | tuple[object, ...]:
    """``Array.isArray(value) ? value : []``; tuples count as arrays on the Python side."""
    return value if isinstance(value, list | tuple) else []


def normalize_signals_for_matching(signals: object) -> list[str]:
    """Trim signals, drop empty ones and replace ``errsig:`` entries by a hash of their text.

    Order and duplicates are kept; nothing is lower-cased.
    """
    out: list[str] = []
    for raw in _as_array(signals):
        s = js_trim(js_string(raw))
        if not s:
            continue
        if s.startswith(_ERRSIG_PREFIX):
            norm = normalize_error_signature(s[len(_ERRSIG_PREFIX) :])
            if norm is None:
                continue
            s = "errsig_norm:" + stable_hash(norm)
        out.append(s)
    return out


def compute_signal_key(signals: object) -> str:
    """Distinct normalised signals in UTF-16 order joined by ``|``, or ``(none)``."""
    unique = sorted(set(normalize_signals_for_matching(signals)), key=utf16_sort_key)
    return "|".join(unique) if unique else _NONE_KEY


def extract_error_signature(signals: object) -> str | None:
    """Normalised text of the first ``errsig:`` signal, or ``None``.

    Unlike matching, the signal is not trimmed first, so ``'  errsig:x'`` does not count.
    """
    for raw in _as_array(signals):
        s = js_string(raw)
        if s.startswith(_ERRSIG_PREFIX):
            return normalize_error_signature(s[len(_ERRSIG_PREFIX) :])
    return None


def has_error_signal(signals: object) -> bool:
    """True if one element is exactly ``'log_error'`` (case-sensitive, ``errsig:`` ignored)."""
    return any(isinstance(s, str) and s == "log_error" for s in _as_array(signals))


def jaccard(a: object, b: object) -> float:
    """Jaccard similarity of two signal lists after matching normalisation.

    Two empty sets are identical (1.0); one empty set shares nothing (0.0).
    """
    return jaccard_sets(
        set(normalize_signals_for_matching(a)), set(normalize_signals_for_matching(b))
    )


def jaccard_sets(a: AbstractSet[str], b: AbstractSet[str]) -> float:
    """Jaccard similarity of two already-normalised signal sets."""
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


def to_fixed(x: float, digits: int) -> str:
    """``Number.prototype.toFixed``: exact binary value, ties rounded away from zero.

    Python's ``'%.3f'`` rounds ties to even, e.g. 0.0625 gives ``0.062`` where JS gives
    ``0.063``.
    """
    if not 0 <= digits <= 100:
        raise ValueError(f"digits must be in 0..100, got {digits}")
    if math.isnan(x):
        return "NaN"
    if abs(x) >= 1e21:
        return _js_number(x)
    with localcontext() as ctx:
        ctx.prec = 200
        fixed = Decimal(abs(x)).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
    # JS tests x < 0, so -0 prints unsigned but -0.0001 prints as "-0.000".
    return ("-" if x < 0 else "") + format(fixed, "f")


def js_pow(base: float, exponent: float) -> float:
    """``Math.pow`` with ECMAScript's special cases, finite results from the C library.

    V8 computes finite powers with an fdlibm-derived algorithm that differs from glibc in the
    last bit for about one input in ten, so a decay weight can be one ulp off (evolver's worked
    example 01 scores 0.1764455022221308 in V8 and 0.17644550222213073 here). No decision in
    evolver's worked examples depends on that bit; only a score sitting exactly on a threshold
    or tie could flip (docs/reference/evolver-memory-graph.md §13).
    """
    if math.isnan(exponent):
        return math.nan  # Python returns 1.0 for pow(1, nan)
    if math.isinf(exponent) and abs(base) == 1:
        return math.nan  # JS keeps the pre-IEEE-754-2008 rule here
    try:
        return math.pow(base, exponent)
    except OverflowError:
        return math.inf if base > 0 or exponent % 2 != 1 else -math.inf
    except ValueError:  # 0 ** negative, or negative ** fraction
        if base == 0:
            odd = exponent % 2 == 1
            return -math.inf if odd and math.copysign(1.0, base) < 0 else math.inf
        return math.nan


_ISO_DATE_TIME = re.compile(
    r"(?P<y>[+-]\d{6}|\d{4})(?:-(?P<mo>\d{2})(?:-(?P<d>\d{2}))?)?"
    r"(?:T(?P<h>\d{2}):(?P<mi>\d{2})(?::(?P<s>\d{2})(?:\.(?P<f>\d+))?)?"
    r"(?P<tz>Z|[+-]\d{2}:\d{2})?)?",
    re.ASCII,
)
_MAX_TIME_MS = 8.64e15
_DAY_MS = 86_400_000


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 in the proleptic Gregorian calendar; day may overflow the month."""
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * ((month + 9) % 12) + 2) // 5 + day - 1
    return era * 146_097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719_468


def _offset_ms(tz: str | None) -> int | None:
    if tz is None or tz == "Z":
        return 0
    hours, minutes = int(tz[1:3]), int(tz[4:6])
    if hours > 23 or minutes > 59:
        return None
    sign = -1 if tz[0] == "-" else 1
    return sign * (hours * 60 + minutes) * 60_000


def parse_iso_ms(value: object) -> float:
    """``Date.parse`` for the ECMAScript date-time string format; NaN when it does not apply.

    Date-times without an offset are read as UTC (evolver reads them in the process's local
    time zone; its reference answers were produced with TZ=UTC). Strings outside the ISO
    format, which V8 hands to a lenient legacy parser, give NaN here. A day 29..31 past the
    end of its month rolls over as in V8 (``2026-02-30`` is 2 March).
    """
    m = _ISO_DATE_TIME.fullmatch(js_string(value))
    if m is None or m["y"] == "-000000":
        return math.nan
    month, day = int(m["mo"] or 1), int(m["d"] or 1)
    hour, minute, second = int(m["h"] or 0), int(m["mi"] or 0), int(m["s"] or 0)
    millis = int((m["f"] or "0").ljust(3, "0")[:3])
    offset = _offset_ms(m["tz"])
    bad_time = hour > 24 or minute > 59 or second > 59
    if hour == 24 and (minute or second or millis):
        bad_time = True
    if offset is None or bad_time or not (1 <= month <= 12 and 1 <= day <= 31):
        return math.nan
    days = _days_from_civil(int(m["y"]), month, day)
    t = days * _DAY_MS + ((hour * 60 + minute) * 60 + second) * 1000 + millis - offset
    return float(t) if abs(t) <= _MAX_TIME_MS else math.nan
