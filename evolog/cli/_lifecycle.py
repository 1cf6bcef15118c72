"""``evolog ledger birth|pin|unpin|forget ENTRY``: explicit lifecycle events.

Each appends one ``lifecycle`` event, after checking it against the ledger as of now (under
the ``ledger`` command's ``--config``/``--cadence`` if given). An action the ledger would
refuse or ignore — forgetting a pinned or escrowed entry (darwin's ``Ledger.forget``),
pinning a dead one, a second birth (nothing is resurrected) — is an error of one line
and appends nothing.
"""

from __future__ import annotations

import math
import sys
from typing import TYPE_CHECKING, Any

from ._common import ledger_config, print_text_json, store_path

if TYPE_CHECKING:
    import argparse

    from evolog.projections import EntryView

OPS = ("birth", "pin", "unpin", "forget")


def add_lifecycle_commands(ledger_parser: Any) -> None:
    """Register the lifecycle actions as optional sub-commands of ``ledger``."""
    from ._help import doc

    sub = ledger_parser.add_subparsers(dest="lifecycle", metavar="{birth,pin,unpin,forget}")
    s = sub.add_parser(
        "birth", help="birth an entry (e.g. an import on probation)", **doc("ledger birth")
    )
    s.add_argument("entry", help="the entry's id")
    s.add_argument("--energy", type=float, help="starting energy (default: spawn energy)")
    s.add_argument("--probation", type=int, help="positive settlements owed before deciding")
    s.add_argument("--pinned", action="store_true", help="born pinned (never dies)")
    s.set_defaults(func=run_lifecycle)
    helps = {
        "pin": "pin an alive entry: it pays upkeep but never dies or merges",
        "unpin": "unpin an alive entry",
        "forget": "bury an entry now (refused while pinned or escrowed)",
    }
    for op, text in helps.items():
        s = sub.add_parser(op, help=text, **doc("ledger " + op))
        s.add_argument("entry", help="the entry's id")
        s.set_defaults(func=run_lifecycle)


def _error(message: str) -> int:
    print(f"evolog: error: {message}", file=sys.stderr)
    return 2


def _refusal(op: str, entry: str, e: EntryView | None, args: argparse.Namespace) -> str | None:
    """Why the ledger would refuse or ignore this action (None: it takes effect)."""
    if not entry:
        return f"ledger {op}: expected an entry id; got {entry!r}"
    if op == "birth":
        if args.energy is not None and not (math.isfinite(args.energy) and args.energy > 0):
            return f"ledger birth: --energy: expected a finite number > 0; got {args.energy}"
        if args.probation is not None and args.probation < 0:
            return f"ledger birth: --probation: expected an integer >= 0; got {args.probation}"
        if e is not None:
            state = "alive" if e.alive else str(e.cause)
            return (
                f"ledger birth: entry {entry!r} was already born ({state}); an entry is born "
                "once and nothing is resurrected"
            )
        return None
    if e is None:
        return (
            f"ledger {op}: entry {entry!r} was never born in this log "
            f"(`evolog ledger birth {entry}` first)"
        )
    if not e.alive:
        return f"ledger {op}: entry {entry!r} is dead ({e.cause} at tick {e.died_tick})"
    if op == "forget" and e.pinned:
        return (
            f"ledger forget: entry {entry!r} is pinned and a pinned entry never dies "
            f"(`evolog ledger unpin {entry}` first)"
        )
    if op == "forget" and e.escrow:
        return (
            f"ledger forget: entry {entry!r} is held in escrow by {e.escrow} pending "
            "decision(s); forget it once they settle or expire"
        )
    return None


def run_lifecycle(args: argparse.Namespace) -> int:
    from evolog.eventlog import EventLog, EventLogError, Lifecycle
    from evolog.projections import ProjectionError, ledger

    op, entry = args.lifecycle, args.entry
    try:
        with EventLog(store_path(args)) as log:
            current = ledger(log, config=ledger_config(args)).entry(entry) if entry else None
            why = _refusal(op, entry, current, args)
            if why is not None:
                return _error(why)
            event = Lifecycle(entry=entry, op=op)
            if op == "birth":
                event = Lifecycle(
                    entry=entry,
                    op="birth",
                    energy=args.energy,
                    probation=args.probation,
                    pinned=True if args.pinned else None,
                )
            seq = log.append(event)
    except (ProjectionError, EventLogError) as exc:
        return _error(str(exc)) if isinstance(exc, ValueError) else _fail(exc)
    print_text_json({"seq": seq, "op": op, "entry": entry})
    return 0


def _fail(exc: Exception) -> int:
    print(f"evolog: error: {exc}", file=sys.stderr)
    return 1


__all__ = ["OPS", "add_lifecycle_commands", "run_lifecycle"]
