"""The ``evolog`` command: JSON in and out.

Every command reads the store from ``--store`` or ``EVOLOG_STORE`` (default ``~/.evolog``).
Errors print one line, ``evolog: error: ...``, and exit 2 (bad input) or 1 (anything
else); the hook command never fails (see :mod:`evolog._hooks`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from eventlog import EventLogError

if TYPE_CHECKING:
    import argparse

Handler = Callable[[Any], int]
DEFAULT_STORE = "~/.evolog"


def store_path(args: Any) -> str:
    return os.path.expanduser(args.store or os.environ.get("EVOLOG_STORE") or DEFAULT_STORE)


def _cmd_init(args: argparse.Namespace) -> int:
    from eventlog import init_store

    paths = init_store(args.dir or store_path(args))
    _print_json({"store": paths.root, "created": True})
    return 0


def _cmd_append(args: argparse.Namespace) -> int:
    from ._cli_append import run_append

    return run_append(args, store_path(args))


def _cmd_replay(args: argparse.Namespace) -> int:
    from ._cli_read import run_replay

    return run_replay(args, store_path(args))


def _cmd_stats(args: argparse.Namespace) -> int:
    from eventlog import EventLog

    with EventLog(store_path(args)) as log:
        _print_json(log.stats())
    return 0


def _cmd_verify(args: argparse.Namespace) -> int:
    import msgspec

    from eventlog import EventLog

    with EventLog(store_path(args)) as log:
        report = log.verify()
    _print_json(msgspec.to_builtins(report))
    return 0 if report.ok else 1


def _cmd_seal(args: argparse.Namespace) -> int:
    from eventlog import EventLog

    with EventLog(store_path(args), auto_seal="off") as log:
        result = log.seal()
    if not args.quiet:
        _print_json(result._asdict())
    return 0


def _cmd_compact(args: argparse.Namespace) -> int:
    from eventlog import EventLog

    with EventLog(store_path(args)) as log:
        result = log.compact(args.small_rows, args.target_rows)
    _print_json(result._asdict())
    return 0


def _cmd_hook(args: argparse.Namespace) -> int:
    from ._hooks import run_hook

    return run_hook(args.agent_kind, store_path(args))


def _cmd_demo(args: argparse.Namespace) -> int:
    from ._demo import run_demo

    return run_demo(args.dir, args.cycles, args.seed)


def _print_json(obj: object) -> None:
    import msgspec

    sys.stdout.buffer.write(msgspec.json.format(msgspec.json.encode(obj), indent=2) + b"\n")


def _add_feature_commands(sub: Any) -> None:
    """Commands of the projections, advice, dream and ledger layers (imported lazily)."""
    from ._cli_advice import add_advice_commands
    from ._cli_dream import add_dream_commands
    from ._cli_ledger import add_ledger_commands
    from ._cli_sql import add_sql_commands

    add_sql_commands(sub)
    add_advice_commands(sub)
    add_dream_commands(sub)
    add_ledger_commands(sub)


def build_parser() -> argparse.ArgumentParser:
    import argparse

    p = argparse.ArgumentParser(prog="evolog", description="Event-sourced agent memory.")
    p.add_argument("--store", help="store directory (default: $EVOLOG_STORE or ~/.evolog)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    s = sub.add_parser("init", help="create an empty store")
    s.add_argument("dir", nargs="?", help="directory (default: the store)")
    s.set_defaults(func=_cmd_init)

    s = sub.add_parser("append", help="append events (JSON argument, NDJSON stdin or flags)")
    from ._cli_append import add_append_arguments

    add_append_arguments(s)
    s.set_defaults(func=_cmd_append)

    s = sub.add_parser("replay", help="print events as NDJSON (what append accepts)")
    s.add_argument("--as-of", help="a seq, or an ISO time (event time <= it)")
    s.add_argument("--kinds", help="comma-separated kinds")
    s.set_defaults(func=_cmd_replay)

    sub.add_parser("stats", help="counts and sizes").set_defaults(func=_cmd_stats)
    sub.add_parser("verify", help="check the log; exit 1 on a problem").set_defaults(
        func=_cmd_verify
    )
    s = sub.add_parser("seal", help="seal the WAL into Parquet segments")
    s.add_argument("--quiet", action="store_true")
    s.set_defaults(func=_cmd_seal)

    s = sub.add_parser("compact", help="merge small segments")
    s.add_argument("--small-rows", type=int, default=100_000)
    s.add_argument("--target-rows", type=int, default=1_000_000)
    s.set_defaults(func=_cmd_compact)

    s = sub.add_parser("hook", help="record an agent hook payload read from stdin")
    s.add_argument("agent_kind", choices=["claude-code"])
    s.set_defaults(func=_cmd_hook)

    _add_feature_commands(sub)

    s = sub.add_parser("demo", help="simulate an agent into a store and show what it stored")
    s.add_argument("--dir", default="evolog-demo")
    s.add_argument("--cycles", type=int, default=300)
    s.add_argument("--seed", type=int, default=7)
    s.set_defaults(func=_cmd_demo)
    return p


def _fast_args(argv: list[str]) -> SimpleNamespace | None:
    """The hook-path commands, parsed without argparse (building the parser costs ~10 ms).

    Only the plain forms take this path: ``[--store DIR] append [JSON]`` and
    ``[--store DIR] hook claude-code``; anything else goes through the full parser.
    """
    store = None
    if len(argv) >= 2 and argv[0] == "--store":
        store, argv = argv[1], argv[2:]
    if argv[:1] == ["append"] and (
        len(argv) == 1 or (len(argv) == 2 and argv[1].lstrip().startswith("{"))
    ):
        event = argv[1] if len(argv) == 2 else None
        return SimpleNamespace(store=store, event=event, durability="always", func=_cmd_append)
    if argv == ["hook", "claude-code"]:
        return SimpleNamespace(store=store, agent_kind="claude-code", func=_cmd_hook)
    return None


def _is_ours(exc: BaseException) -> bool:
    """An error of one of our packages (each has one base), as opposed to a bug."""
    for cls in type(exc).__mro__:
        if cls.__module__.split(".")[0] in ("eventlog", "projections", "advice", "dream"):
            return True
    return False


def main(argv: Sequence[str] | None = None) -> int:
    arglist = list(sys.argv[1:] if argv is None else argv)
    args = _fast_args(arglist) or build_parser().parse_args(arglist)
    handler: Handler = args.func
    try:
        return handler(args)
    except Exception as exc:
        if not isinstance(exc, EventLogError) and not _is_ours(exc):
            raise
        print(f"evolog: error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, ValueError) else 1
    except BrokenPipeError:
        # `evolog replay | head`: the reader left; not an error of ours.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        return 130
