"""The views' query parameters, each checked with a one-line error naming it."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping

import msgspec

from evolog.server import Problem

_MAX_TEXT = 400
_KNOWN = frozenset({"as_of", "at", "agent", "session", "since", "until", "q", "limit"})


class Filters(msgspec.Struct, frozen=True, kw_only=True):
    """What every view is asked for: a point in the log and the events to show."""

    as_of: int | None = None
    at: int | None = None  # µs; resolved to the last seq at or before it
    agent: str = ""
    session: str = ""
    since: int | None = None  # µs
    until: int | None = None  # µs
    q: str = ""
    limit: int = 50


def _time(name: str, text: str) -> int:
    try:
        moment = _dt.datetime.fromisoformat(text)
    except ValueError:
        raise Problem(
            422, f"{name}: expected an ISO-8601 time (YYYY-MM-DD[THH:MM[:SS]]); got {text!r}", name
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_dt.UTC)
    return int(moment.timestamp() * 1_000_000)


def _int(name: str, text: str, low: int, high: int) -> int:
    if not (text.isascii() and text.isdigit() and len(text) <= 19):
        raise Problem(422, f"{name}: expected an integer in [{low}, {high}]; got {text!r}", name)
    value = int(text)
    if not low <= value <= high:
        raise Problem(422, f"{name}: expected an integer in [{low}, {high}]; got {value}", name)
    return value


def parse(params: Mapping[str, str]) -> Filters:
    """The filters of a view request (blank means unset); unknown names are refused."""
    unknown = sorted(set(params) - _KNOWN)
    if unknown:
        raise Problem(
            422,
            f"{unknown[0]}: expected one of {', '.join(sorted(_KNOWN))}; got {unknown[0]!r}",
            unknown[0],
        )
    got = {k: v.strip() for k, v in params.items() if v.strip()}
    for name in ("agent", "session", "q"):
        if len(got.get(name, "")) > _MAX_TEXT:
            raise Problem(
                422, f"{name}: expected at most {_MAX_TEXT} characters; got {len(got[name])}", name
            )
    since = _time("since", got["since"]) if "since" in got else None
    until = _time("until", got["until"]) if "until" in got else None
    if since is not None and until is not None and until < since:
        raise Problem(
            422,
            f"until: expected a time after since ({got['since']}); got {got['until']!r}",
            "until",
        )
    return Filters(
        as_of=_int("as_of", got["as_of"], 0, 1 << 62) if "as_of" in got else None,
        at=_time("at", got["at"]) if "at" in got else None,
        agent=got.get("agent", ""),
        session=got.get("session", ""),
        since=since,
        until=until,
        q=got.get("q", ""),
        limit=_int("limit", got["limit"], 1, 500) if "limit" in got else 50,
    )


__all__ = ["Filters", "parse"]
