"""Writing any stored time as text, including times Python's ``datetime`` cannot hold.

The log refuses event times outside years 1970-9999 at append, but an older version did
not, and a segment or WAL frame can be written by hand: a reader must still answer. Arrow
and DuckDB hold any 64-bit microsecond count (years -290308 to 294247); ``datetime`` stops
at 9999, and turning such a value into one raises ``OverflowError``. Readers format those
times here, exactly: the Gregorian calendar repeats every 400 years (146,097 days), so the
time is shifted by whole cycles into ``datetime``'s range and the year shifted back.
:func:`py_rows` turns query results into Python rows that way.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa

__all__ = ["civil", "iso_date", "iso_us", "py_rows"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_CYCLE_US = 146_097 * 86_400 * 1_000_000  # 400 Gregorian years


def civil(us: int) -> tuple[int, datetime]:
    """``(year, moment)``: ``moment`` has the month, day and time of ``us`` µs after the
    epoch (UTC), but a year shifted by a multiple of 400 into 1970-2369; ``year`` is the
    real one."""
    cycles, rest = divmod(us, _CYCLE_US)
    moment = _EPOCH + timedelta(microseconds=rest)
    return moment.year + 400 * cycles, moment


def iso_us(us: int, *, utc_offset: bool = True) -> str:
    """``datetime.isoformat`` of ``us`` µs after the epoch in UTC, for any integer.

    Years outside 0001-9999 are written with a sign and at least four digits (``+10000``,
    ``-0001``), as ISO 8601's expanded form does.
    """
    year, moment = civil(us)
    text = moment.replace(tzinfo=UTC if utc_offset else None).isoformat()
    return _year(year) + text[4:]


def iso_date(days: int) -> str:
    """``date.isoformat`` of the day ``days`` after 1970-01-01, for any integer."""
    year, moment = civil(days * 86_400_000_000)
    return f"{_year(year)}-{moment.month:02d}-{moment.day:02d}"


def _year(year: int) -> str:
    return f"{year:04d}" if 1 <= year <= 9999 else f"{year:+05d}"


def py_rows(table: pa.Table) -> list[dict[str, Any]]:
    """The rows as Python values; a time or date Python cannot hold becomes ISO text.

    A log written before event times were checked (or by hand) can hold years past 9999,
    and ``datetime`` stops there: only then are the rows converted value by value.
    """
    try:
        rows: list[dict[str, Any]] = table.to_pylist()
        return rows
    except (OverflowError, ValueError):
        names = table.column_names
        columns = [table.column(n) for n in names]
        return [
            {n: _value(c[i]) for n, c in zip(names, columns, strict=True)}
            for i in range(table.num_rows)
        ]


def _value(scalar: Any) -> Any:
    """``scalar.as_py()``, with times and dates out of ``datetime``'s range as ISO text."""
    try:
        return scalar.as_py()
    except (OverflowError, ValueError):
        if not scalar.is_valid:
            return None
        kind = scalar.type
        if pa.types.is_timestamp(kind):
            per_us = {"s": 1_000_000, "ms": 1_000, "us": 1}.get(kind.unit, 0)
            us = scalar.value * per_us if per_us else scalar.value // 1_000
            return iso_us(us, utc_offset=kind.tz is not None)
        if pa.types.is_date(kind):
            days = scalar.value if pa.types.is_date32(kind) else scalar.value // 86_400_000
            return iso_date(days)
        if pa.types.is_map(kind):
            return [(_value(e["key"]), _value(e["value"])) for e in scalar.values]
        if pa.types.is_struct(kind):
            return {k: _value(scalar[k]) for k in scalar}
        if hasattr(scalar, "values"):  # the list types
            return [_value(v) for v in scalar.values]
        raise
