"""What the command modules share: where the store is, ``--as-of`` and ``--kinds``,
printing JSON, a progress bar.

Its own module so that the command modules import it, never the parser module (which
imports them).
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    import argparse

__all__ = [
    "DEFAULT_STORE",
    "MAX_SEQ",
    "ProgressBar",
    "ledger_config",
    "parse_as_of",
    "parse_kinds",
    "print_json",
    "print_text_json",
    "store_path",
]

DEFAULT_STORE = "~/.evolog"
MAX_SEQ = 2**63 - 1


def store_path(args: Any) -> str:
    return os.path.expanduser(args.store or os.environ.get("EVOLOG_STORE") or DEFAULT_STORE)


def print_json(obj: object) -> None:
    """Indented JSON of msgspec-encodable values (structs included)."""
    import msgspec

    sys.stdout.buffer.write(msgspec.json.format(msgspec.json.encode(obj), indent=2) + b"\n")


def print_text_json(obj: object) -> None:
    """Indented JSON of plain values, non-ASCII text kept as is (the ledger commands)."""
    sys.stdout.write(json.dumps(obj, indent=2, ensure_ascii=False) + "\n")


def ledger_config(args: argparse.Namespace) -> dict[str, object]:
    """The ledger configuration of ``--config`` (a JSON object) and ``--cadence``."""
    from evolog.projections._errors import InvalidParameterError
    from evolog.projections.energy._config import parse_cadence

    fields: dict[str, object] = {}
    if args.config:
        try:
            fields = json.loads(args.config)
        except json.JSONDecodeError as exc:
            raise InvalidParameterError(f"--config: expected a JSON object; {exc}") from None
        if not isinstance(fields, dict):
            raise InvalidParameterError(f"--config: expected a JSON object; got {args.config!r}")
    if args.cadence:
        fields.update(parse_cadence(args.cadence))
    return fields


def parse_as_of(text: str | None) -> tuple[int | None, int | None]:
    """``--as-of``: digits are a seq; anything else an ISO-8601 event time."""
    from evolog.eventlog import InvalidEventError, parse_ts

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


class ProgressBar:
    """A one-line progress bar on stderr, drawn only when stderr is a terminal."""

    def __init__(self, label: str, stream: TextIO | None = None, width: int = 30) -> None:
        self.stream = stream or sys.stderr
        self.label = label
        self.width = width
        self.enabled = self.stream.isatty()
        self._last = 0.0
        self._drawn = False

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if not self.enabled or (now - self._last < 0.1 and done < total):
            return
        self._last = now
        filled = self.width * done // total if total else self.width
        bar = "#" * filled + "." * (self.width - filled)
        self.stream.write(f"\r{self.label} [{bar}] {done}/{total}")
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        """End the bar's line, if one was drawn."""
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
