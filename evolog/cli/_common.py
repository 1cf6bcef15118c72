"""What the command modules share: where the store is, and printing JSON.

Its own module so that the command modules import it, never the parser module (which
imports them).
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

__all__ = ["DEFAULT_STORE", "ledger_config", "print_json", "print_text_json", "store_path"]

DEFAULT_STORE = "~/.evolog"


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
