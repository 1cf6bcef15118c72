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
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    import argparse

__all__ = [
    "DEFAULT_STORE",
    "MAX_INPUT_BYTES",
    "MAX_SEQ",
    "ProgressBar",
    "input_limit",
    "ledger_config",
    "parse_as_of",
    "parse_kinds",
    "print_json",
    "print_text_json",
    "read_capped",
    "read_input",
    "store_path",
]

DEFAULT_STORE = "~/.evolog"
MAX_SEQ = 2**63 - 1
#: Most bytes a command reads from one input file or from stdin (``EVOLOG_MAX_INPUT_BYTES``
#: overrides it): ``/dev/zero`` or a wrong file given by mistake must end in an error, not
#: in gigabytes of memory. NDJSON ``append`` and ``import evolver`` stream their input and
#: bound each line instead.
MAX_INPUT_BYTES = 64 << 20
_READ_CHUNK = 1 << 20


def store_path(args: Any) -> str:
    return os.path.expanduser(args.store or os.environ.get("EVOLOG_STORE") or DEFAULT_STORE)


def input_limit(error: Callable[[str], Exception]) -> int:
    """:data:`MAX_INPUT_BYTES`, or ``EVOLOG_MAX_INPUT_BYTES`` when set (a positive integer)."""
    text = os.environ.get("EVOLOG_MAX_INPUT_BYTES")
    if text is None or text == "":
        return MAX_INPUT_BYTES
    if not (text.isascii() and text.isdigit() and int(text) > 0):
        raise error(f"EVOLOG_MAX_INPUT_BYTES: expected a positive number of bytes; got {text!r}")
    return int(text)


def read_capped(
    stream: IO[bytes], where: str, limit: int, error: Callable[[str], Exception]
) -> bytes:
    """All of ``stream``, read in bounded chunks, or ``error`` once it passes ``limit`` bytes
    (at most one chunk past the limit is ever held)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = stream.read(min(_READ_CHUNK, limit + 1 - size))
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            raise error(
                f"{where}: expected at most {limit} bytes (EVOLOG_MAX_INPUT_BYTES); got more"
            )
        chunks.append(chunk)


def _read_capped_text(
    stream: TextIO, where: str, limit: int, error: Callable[[str], Exception]
) -> str:
    parts: list[str] = []
    size = 0
    while chunk := stream.read(_READ_CHUNK):
        size += len(chunk.encode("utf-8", "surrogatepass"))
        if size > limit:
            raise error(
                f"{where}: expected at most {limit} bytes (EVOLOG_MAX_INPUT_BYTES); got more"
            )
        parts.append(chunk)
    return "".join(parts)


def read_input(name: str, where: str, error: Callable[[str], Exception]) -> str:
    """The UTF-8 text of file ``name`` (``-``: stdin), capped at :func:`input_limit`.

    ``where`` names the input in the error past the cap; OSError and UnicodeDecodeError are
    left to the caller, which knows what the file was meant to be."""
    limit = input_limit(error)
    if name == "-":
        binary = getattr(sys.stdin, "buffer", None)
        if binary is None:  # a text stream put in place of stdin (an embedding caller)
            return _read_capped_text(sys.stdin, where, limit, error)
        return read_capped(binary, where, limit, error).decode("utf-8")
    with open(name, "rb") as f:
        return read_capped(f, where, limit, error).decode("utf-8")


def print_json(obj: object) -> None:
    """Indented JSON of msgspec-encodable values (structs included)."""
    import msgspec

    sys.stdout.buffer.write(msgspec.json.format(msgspec.json.encode(obj), indent=2) + b"\n")


def print_text_json(obj: object) -> None:
    """Indented JSON of plain values, non-ASCII text kept as is (the ledger commands)."""
    sys.stdout.write(json.dumps(obj, indent=2, ensure_ascii=False) + "\n")


def ledger_config(args: argparse.Namespace) -> dict[str, object]:
    """The ledger configuration of ``--config`` (a JSON object) and ``--cadence``."""
    from evolog.projections import InvalidParameterError, parse_cadence

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
