"""``evolog replay``: the log as NDJSON, exactly what ``evolog append`` accepts."""

from __future__ import annotations

import argparse
import sys

from evolog.eventlog import EventLog, InvalidEventError, parse_ts, to_json

MAX_SEQ = 2**63 - 1


def parse_as_of(text: str | None) -> tuple[int | None, int | None]:
    """``--as-of``: digits are a seq; anything else an ISO-8601 event time."""
    if text is None:
        return None, None
    text = text.strip()
    if text.isdigit():
        if int(text) > MAX_SEQ:  # a seq is a 64-bit integer everywhere it is stored
            raise InvalidEventError(f"--as-of: expected a seq up to {MAX_SEQ}; got {text}")
        return int(text), None
    try:
        return None, parse_ts(text, "--as-of")
    except InvalidEventError:
        raise InvalidEventError(
            f"--as-of: expected a seq (digits) or an ISO-8601 time; got {text!r}"
        ) from None


def parse_kinds(text: str | None) -> list[str] | None:
    return [k.strip() for k in text.split(",") if k.strip()] if text else None


def run_replay(args: argparse.Namespace, store: str) -> int:
    as_of, as_of_ts = parse_as_of(args.as_of)
    kinds = parse_kinds(args.kinds)
    out = sys.stdout.buffer
    with EventLog(store) as log:
        buf = bytearray()
        for event in log.replay(as_of, as_of_ts=as_of_ts, kinds=kinds):
            buf += to_json(event)
            buf += b"\n"
            if len(buf) > 1 << 16:
                out.write(buf)
                buf.clear()
        out.write(buf)
    out.flush()
    return 0
