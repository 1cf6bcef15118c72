"""``evolog ledger``, ``evolog tick`` and ``evolog survive``.

``ledger`` replays the log through the survival rules (as of a seq or time, under another
config if asked) and prints every entry's balance and fate; ``--json`` prints the same as
one JSON document; ``ledger birth|pin|unpin|forget`` append lifecycle events
(:mod:`evolog.cli._lifecycle`). ``tick`` appends a clock tick (a catch-up of more ticks than
a newborn survives needs ``--force``). ``survive`` runs the survival benchmark
(arms x seeds over a real environment) or, with ``--demo``, shows a poisoned memory dying.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._common import ledger_config, print_text_json, store_path

if TYPE_CHECKING:
    import argparse

    from evolog.projections import EntryView, LedgerView


def add_ledger_commands(subparsers: Any) -> None:
    """Register ``ledger``, ``tick`` and ``survive`` on the ``evolog`` sub-parsers."""
    from ._help import doc

    s = subparsers.add_parser(
        "ledger", help="survival energy of every memory entry, on demand", **doc("ledger")
    )
    s.add_argument("--as-of", help="a seq, or an ISO time (event time <= it)")
    s.add_argument("--entry", help="one entry, with its history")
    s.add_argument("--graveyard", action="store_true", help="dead entries only, burial order")
    s.add_argument("--json", action="store_true", help="JSON instead of a table")
    s.add_argument("--config", help="ledger config as a JSON object (a counterfactual)")
    s.add_argument("--cadence", help="extra ticks: dream[:N], outcomes:N, day or us:N")
    s.add_argument("--limit", type=int, default=50, help="table rows (default 50; 0: all)")
    s.set_defaults(func=run_ledger, lifecycle=None)
    from ._lifecycle import add_lifecycle_commands

    add_lifecycle_commands(s)

    s = subparsers.add_parser("tick", help="append a survival-ledger clock tick", **doc("tick"))
    s.add_argument("--ticks", type=int, default=1, help="how many ticks (default 1)")
    s.add_argument("--reason", help="why (free text)")
    s.add_argument("--force", action="store_true", help="allow a catch-up that starves")
    s.set_defaults(func=run_tick)

    s = subparsers.add_parser(
        "survive", help="survival benchmark, or --demo: poison dying", **doc("survive")
    )
    s.add_argument(
        "--env", choices=["storage", "testsuite"], default="storage", help="the environment"
    )
    s.add_argument(
        "--arms",
        default="survival,random_matched,keep_everything",
        help="comma-separated, from survival, random_matched and keep_everything",
    )
    s.add_argument("--seeds", type=int, default=10, help="seeds per arm")
    s.add_argument("--cycles", type=int, default=30, help="cycles per run")
    s.add_argument("--dir", help="keep the stores here (default: a temporary directory)")
    s.add_argument(
        "--pytest",
        choices=["worker", "subprocess"],
        default="worker",
        help="testsuite env: run pytest in a warm worker or a fresh subprocess",
    )
    s.add_argument("--json", action="store_true", help="JSON instead of a table")
    s.add_argument("--demo", action="store_true", help="one survival run with a death table")
    s.add_argument("--seed", type=int, default=7, help="the demo's seed (default 7)")
    s.set_defaults(func=run_survive)


def _error(message: object, code: int) -> int:
    print(f"evolog: error: {message}", file=sys.stderr)
    return code


def run_ledger(args: argparse.Namespace) -> int:
    from evolog.eventlog import EventLogError
    from evolog.projections import ProjectionError, ledger

    from ._common import parse_as_of

    try:
        as_of, as_of_ts = parse_as_of(args.as_of)
        history = [args.entry] if args.entry else False
        view = ledger(store_path(args), as_of, as_of_ts=as_of_ts, config=ledger_config(args),
                      history=history)  # fmt: skip
    except (ProjectionError, EventLogError) as exc:
        return _error(exc, 2 if isinstance(exc, ValueError) else 1)
    if args.entry:
        entry = view.entry(args.entry)
        if entry is None:
            return _error(f"--entry: no entry {args.entry!r} was ever born in this log", 2)
        if args.json:
            print_text_json(_entry_json(entry))
        else:
            _print_entry(entry)
        return 0
    entries = view.graveyard() if args.graveyard else view.entries()
    if args.json:
        print_text_json({**view.summary(), "entries": [_entry_json(e) for e in entries]})
    else:
        _print_table(view, entries, args.limit)
    return 0


def _entry_json(entry: EntryView) -> dict[str, Any]:
    import msgspec

    out: dict[str, Any] = msgspec.to_builtins(entry)
    if out.get("history") is None:
        out.pop("history", None)
    return out


def _state(e: EntryView) -> str:
    return ("alive" + (" pinned" if e.pinned else "")) if e.alive else str(e.cause)


def _print_table(view: LedgerView, entries: list[EntryView], limit: int) -> None:
    s = view.summary()
    deaths = ", ".join(f"{k} {v}" for k, v in s["deaths"].items() if v) or "none"
    out = sys.stdout
    out.write(
        f"ledger as of seq {s['as_of_seq']}, tick {s['tick']}: {s['alive']} alive, "
        f"{s['dead']} dead ({deaths}), {s['pending']} pending\n"
    )
    shown = entries if limit <= 0 else entries[:limit]
    width = max([len(e.id) for e in shown] + [5])
    out.write(
        f"{'entry':<{width}} {'energy':>9} {'state':<10} {'born':>5} {'died':>5} {'uses':>6}\n"
    )
    for e in shown:
        died = "" if e.died_tick is None else str(e.died_tick)
        out.write(f"{e.id:<{width}} {e.energy:>9.4f} {_state(e):<10} {e.born_tick:>5} "
                  f"{died:>5} {e.uses:>6}\n")  # fmt: skip
    if len(shown) < len(entries):
        out.write(f"... {len(entries) - len(shown)} more (--limit 0 for all, --json)\n")


def _print_entry(e: EntryView) -> None:
    out = sys.stdout
    out.write(f"{e.id}: {_state(e)}, energy {e.energy:.6f}, born tick {e.born_tick}")
    out.write("" if e.died_tick is None else f", died tick {e.died_tick}")
    out.write(f", {e.uses} uses\n")
    if e.lineage:
        out.write(f"lineage: {', '.join(e.lineage)}\n")
    if e.merged_into:
        out.write(f"merged into: {e.merged_into}\n")
    for n in e.history or []:
        out.write(f"  seq {n.seq:>8} tick {n.tick:>5}  {n.what:<20} ")
        out.write(f"{n.amount:>+10.6f} -> {n.energy:.6f}\n")


def run_tick(args: argparse.Namespace) -> int:
    from evolog.eventlog import EventLog, EventLogError, Tick

    if args.ticks < 1:
        return _error(f"--ticks: expected a positive integer; got {args.ticks}", 2)
    bound = catch_up_bound()
    if args.ticks > bound and not args.force:
        # One event charging many ticks of upkeep at once kills every entry that was not
        # credited in between, however good its record: refuse it unless asked twice.
        return _error(
            f"--ticks {args.ticks}: charges {args.ticks} ticks of upkeep at once, more than "
            f"a newborn's energy lasts ({bound}); every entry not credited since would "
            "starve, whatever its record. Tick as time passes (e.g. once a session or a "
            "day, or `evolog ledger --cadence day`), or pass --force",
            2,
        )
    try:
        with EventLog(store_path(args)) as log:
            seq = log.append(Tick(ticks=args.ticks, reason=args.reason))
    except EventLogError as exc:
        return _error(exc, 2 if isinstance(exc, ValueError) else 1)
    print_text_json({"seq": seq, "ticks": args.ticks})
    return 0


def catch_up_bound() -> int:
    """The most ticks one event may charge: a never-credited newborn survives them."""
    import math

    from evolog.projections import LedgerConfig

    cfg = LedgerConfig()
    return max(1, math.ceil(cfg.spawn_energy / cfg.upkeep) - 1)


def run_survive(args: argparse.Namespace) -> int:
    from evolog.survive import SurvivalError

    try:
        if args.demo:
            from evolog.survive import poison_demo

            return poison_demo(args.dir or "evolog-survival-demo", args.cycles, args.seed)
        return _suite(args)
    except SurvivalError as exc:
        return _error(exc, 1)


def _suite(args: argparse.Namespace) -> int:
    from evolog.survive import UNITS, aggregate, run_metrics, run_suite, table, to_builtins

    if args.seeds < 1 or args.cycles < 1:
        return _error("--seeds and --cycles: expected positive integers", 2)
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]

    def progress(run: Any) -> None:
        print(f"  {run.arm} seed {run.seed}: cum delta {sum(run.deltas):+.0f}", file=sys.stderr)

    with tempfile.TemporaryDirectory(prefix="evolog-survive-") as tmp:
        root = Path(args.dir or tmp)
        runs = run_suite(args.env, arms, range(args.seeds), args.cycles, root,
                         pytest_mode=args.pytest, progress=progress)  # fmt: skip
    metrics = [run_metrics(r) for r in runs]
    agg = aggregate(metrics)
    if args.json:
        print_text_json({"env": args.env, "seeds": args.seeds, "cycles": args.cycles,
                     "arms": to_builtins(agg), "runs": [m.__dict__ for m in metrics]})  # fmt: skip
    else:
        sys.stdout.write(f"{args.env}: {args.seeds} seeds x {args.cycles} cycles\n")
        sys.stdout.write(table(agg, UNITS[args.env]) + "\n")
    return 0
