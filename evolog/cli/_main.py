"""The ``evolog`` command: JSON in and out.

Every command reads the store from ``--store`` or ``EVOLOG_STORE`` (default ``~/.evolog``).
Errors print one line, ``evolog: error: ...``, and exit 2 (bad input, a mistake in the
arguments) or 1 (anything else: a missing or corrupt store, a file-system error); ``verify``
exits 1 when it finds a problem. A reader that leaves early (``evolog replay | head``) ends
the command quietly. The hook command never fails (see :mod:`evolog.hook._hooks`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, NoReturn

from evolog.eventlog import EventLogError

from ._common import print_json, store_path

if TYPE_CHECKING:
    import argparse

Handler = Callable[[Any], int]


def _cmd_init(args: argparse.Namespace) -> int:
    from evolog.eventlog import Paths, init_store

    target = args.dir or store_path(args)
    existed = os.path.exists(Paths.of(target).marker)
    paths = init_store(target)
    print_json({"store": paths.root, "created": not existed})
    return 0


def _cmd_append(args: argparse.Namespace) -> int:
    from ._append import run_append

    return run_append(args, store_path(args))


def _cmd_replay(args: argparse.Namespace) -> int:
    from ._append import run_replay

    return run_replay(args, store_path(args))


def _cmd_stats(args: argparse.Namespace) -> int:
    from evolog.eventlog import EventLog

    with EventLog(store_path(args)) as log:
        print_json(log.stats())
    return 0


def _cmd_verify(args: argparse.Namespace) -> int:
    import msgspec

    from evolog.eventlog import EventLog

    with EventLog(store_path(args)) as log:
        report = log.verify()
    print_json(msgspec.to_builtins(report))
    return 0 if report.ok else 1


def _cmd_seal(args: argparse.Namespace) -> int:
    from evolog.eventlog import EventLog

    from ._append import lock_options

    with EventLog(store_path(args), auto_seal="off", **lock_options(args)) as log:
        result = log.seal()
    if not args.quiet:
        print_json(result._asdict())
    return 0


def _cmd_compact(args: argparse.Namespace) -> int:
    from evolog.eventlog import EventLog

    with EventLog(store_path(args)) as log:
        result = log.compact(args.small_rows, args.target_rows)
    print_json(result._asdict())
    return 0


def _cmd_hook(args: argparse.Namespace) -> int:
    if getattr(args, "print_settings", False) and getattr(args, "http", False):
        from evolog.worker import print_http_settings

        return print_http_settings(store_path(args))
    if getattr(args, "print_settings", False):
        import shlex

        from evolog.doctor import evolog_command
        from evolog.hook import settings_text

        # Absolute paths: a hook's shell need not have this installation on its PATH.
        store = os.path.abspath(store_path(args))
        command = shlex.join([*evolog_command(), "hook", "claude-code"])
        sys.stdout.write(settings_text(command, shlex.quote(store)) + "\n")
        return 0
    from evolog.hook import run_hook

    if getattr(args, "start_worker", False):
        from evolog.worker import start_worker

        store = store_path(args)
        return start_worker(store, lambda: run_hook(args.agent_kind, store))
    return run_hook(args.agent_kind, store_path(args))


def _cmd_version(args: argparse.Namespace) -> int:
    from ._help import version_text

    print(version_text())
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from evolog import run_demo

    return run_demo(args.dir, args.cycles, args.seed)


# The layer that registers each feature command. A known command builds only its own
# layer's subparsers: constructing all of them (and importing their modules) costs about
# 10 ms of a cold `evolog sql`, a quarter of what it may add to DuckDB's own start-up.
_FEATURE_LAYERS = {
    **dict.fromkeys(("sql", "edges", "export"), "sql"),
    **dict.fromkeys(("advise", "import", "follow"), "advice"),
    **dict.fromkeys(("isa", "dream", "route", "graph"), "dream"),
    **dict.fromkeys(("ledger", "tick", "survive"), "ledger"),
    **dict.fromkeys(("remember", "recall", "feedback", "compress"), "memory"),
    **dict.fromkeys(("serve", "mcp"), "server"),
    "publish": "publish",
    "evolve": "evolve",
    "worker": "worker",
    **dict.fromkeys(("pause", "resume", "forget", "status"), "controls"),
    "doctor": "doctor",
    "ui": "ui",
}


_CORE_COMMANDS = frozenset(
    ("init", "append", "replay", "stats", "verify", "seal", "compact", "hook", "demo")
)


def _add_feature_commands(sub: Any, layers: Sequence[str]) -> None:
    """Commands of the projections, advice, dream and ledger layers (imported lazily)."""
    add: Callable[[Any], None]
    for layer in layers:
        if layer == "sql":
            from ._sql import add_sql_commands as add
        elif layer == "advice":
            from ._advice import add_advice_commands as add
        elif layer == "dream":
            from ._dream import add_dream_commands as add
        elif layer == "memory":
            from ._memory import add_memory_commands as add
        elif layer == "server":
            from ._serve import add_server_commands as add
        elif layer == "publish":
            from ._iceberg import add_publish_commands as add
        elif layer == "evolve":
            from ._evolve import add_evolve_commands as add
        elif layer == "worker":
            from evolog.worker import add_worker_commands as add
        elif layer == "controls":
            from evolog.hook import add_control_commands as add
        elif layer == "doctor":
            from evolog.doctor import add_doctor_commands as add
        elif layer == "ui":
            from evolog.ui import add_ui_commands as add
        else:
            from ._ledger import add_ledger_commands as add
        add(sub)


def _command_of(argv: Sequence[str]) -> str | None:
    """The subcommand named in ``argv`` (after the global options), if any."""
    rest = list(argv)
    while rest and rest[0].startswith("--store"):
        rest = rest[1:] if "=" in rest[0] else rest[2:]
    return rest[0] if rest and not rest[0].startswith("-") else None


def _add_core_commands(sub: Any) -> None:
    """The event-log commands."""
    from ._help import doc

    s = sub.add_parser("init", help="create an empty store", **doc("init"))
    s.add_argument("dir", nargs="?", help="directory (default: the store)")
    s.set_defaults(func=_cmd_init)

    s = sub.add_parser(
        "append", help="append events (JSON argument, NDJSON stdin or flags)", **doc("append")
    )
    from ._append import add_append_arguments, add_lock_timeout

    add_append_arguments(s)
    s.set_defaults(func=_cmd_append)

    s = sub.add_parser(
        "replay", help="print events as NDJSON (what append accepts)", **doc("replay")
    )
    s.add_argument("--as-of", help="a seq, or an ISO time (event time <= it)")
    s.add_argument("--kinds", help="comma-separated kinds, e.g. attempt,outcome (default: all)")
    s.set_defaults(func=_cmd_replay)

    sub.add_parser("stats", help="counts and sizes", **doc("stats")).set_defaults(func=_cmd_stats)
    sub.add_parser(
        "verify", help="check the log; exit 1 on a problem", **doc("verify")
    ).set_defaults(func=_cmd_verify)
    s = sub.add_parser("seal", help="seal the WAL into Parquet segments", **doc("seal"))
    s.add_argument("--quiet", action="store_true", help="print nothing on success")
    add_lock_timeout(s)
    s.set_defaults(func=_cmd_seal)

    s = sub.add_parser("compact", help="merge small segments", **doc("compact"))
    s.add_argument(
        "--small-rows", type=int, default=100_000, help="merge segments below this many rows"
    )
    s.add_argument(
        "--target-rows", type=int, default=1_000_000, help="at most this many rows per merge"
    )
    s.set_defaults(func=_cmd_compact)

    s = sub.add_parser("hook", help="record an agent hook payload read from stdin", **doc("hook"))
    s.add_argument("agent_kind", choices=["claude-code"], help="the agent sending the payload")
    s.add_argument(
        "--print-settings",
        action="store_true",
        help="print the ~/.claude/settings.json hooks block that installs recording and recall",
    )
    s.add_argument(
        "--http",
        action="store_true",
        help="with --print-settings: http hooks to the store's worker (see `evolog worker`)",
    )
    s.add_argument(
        "--start-worker",
        action="store_true",
        help="also start the store's worker if none runs (the SessionStart hook of --http)",
    )
    s.set_defaults(func=_cmd_hook)


def _parser_class(command: str | None) -> type[argparse.ArgumentParser]:
    import argparse

    # argparse reports an unknown option of a subcommand from the top parser: name the
    # subcommand's help when the command line names one.
    known = command in _FEATURE_LAYERS or command in _CORE_COMMANDS
    hint = f"evolog {command} --help" if known else "evolog --help"

    class Parser(argparse.ArgumentParser):
        """argparse, with a mistake reported in one line and a pointer to ``--help``
        (argparse's own report is the whole usage, a dozen lines, then the error)."""

        def error(self, message: str) -> NoReturn:
            self.exit(2, f"evolog: error: {message} (see `{hint}`)\n")

    return Parser


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The full parser, or with a feature ``command`` only the subparsers of its layer."""
    from ._help import doc, version_action

    p = _parser_class(command)(prog="evolog", **doc(""))
    p.add_argument("--version", action=version_action())
    p.add_argument("--store", help="store directory (default: $EVOLOG_STORE or ~/.evolog)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    layer = _FEATURE_LAYERS.get(command or "")
    if layer is not None:
        _add_feature_commands(sub, [layer])
        return p
    _add_core_commands(sub)
    # Every layer, in the order of the table (a new command cannot be left out of --help).
    _add_feature_commands(sub, list(dict.fromkeys(_FEATURE_LAYERS.values())))

    s = sub.add_parser(
        "demo", help="simulate an agent into a store and show what it stored", **doc("demo")
    )
    s.add_argument("--dir", default="evolog-demo", help="the store to fill")
    s.add_argument("--cycles", type=int, default=300, help="simulated attempts")
    s.add_argument("--seed", type=int, default=7, help="random seed")
    s.set_defaults(func=_cmd_demo)
    return p


def _fast_args(argv: list[str]) -> SimpleNamespace | None:
    """The hook-path commands, ``sql`` and ``--version``, parsed without argparse
    (importing it and building a parser costs 5-10 ms).

    Only the plain forms take this path: ``[--store DIR] append [JSON]``,
    ``[--store DIR] hook claude-code``, ``[--store DIR] sql QUERY [options]`` and
    ``--version``; anything else goes through the full parser.
    """
    if argv == ["--version"]:
        return SimpleNamespace(func=_cmd_version)
    store = None
    if len(argv) >= 2 and argv[0] == "--store":
        store, argv = argv[1], argv[2:]
    if argv[:1] == ["append"] and (
        len(argv) == 1 or (len(argv) == 2 and argv[1].lstrip().startswith("{"))
    ):
        event = argv[1] if len(argv) == 2 else None
        return SimpleNamespace(store=store, event=event, durability="always", func=_cmd_append)
    if argv[:2] == ["hook", "claude-code"] and argv[2:] in ([], ["--start-worker"]):
        start = argv[2:] == ["--start-worker"]
        return SimpleNamespace(
            store=store, agent_kind="claude-code", start_worker=start, func=_cmd_hook
        )
    if argv[:1] == ["sql"]:
        from ._sql import sql_args

        return sql_args(argv[1:], store)
    return None


def _is_ours(exc: BaseException) -> bool:
    """An error of one of our packages (each has one base), as opposed to a bug."""
    for cls in type(exc).__mro__:
        parts = cls.__module__.split(".")
        if parts[0] == "evolog" and parts[1:2] in (["eventlog"], ["projections"], ["advice"],
                                                   ["dream"]):  # fmt: skip
            return True
    return False


def _is_backend(exc: BaseException) -> bool:
    """An error of pyarrow or duckdb (without importing either to ask)."""
    return any(c.__module__.split(".")[0] in ("pyarrow", "duckdb") for c in type(exc).__mro__)


def _names_hook(argv: Sequence[str]) -> bool:
    """Whether the command line's first word, after the global options, is ``hook``."""
    rest = list(argv)
    while rest and rest[0].startswith("-"):
        rest = rest[2:] if rest[0] == "--store" else rest[1:]
    return rest[:1] == ["hook"]


def main(argv: Sequence[str] | None = None) -> int:
    arglist = list(sys.argv[1:] if argv is None else argv)
    if not _names_hook(arglist):
        return _main(arglist)
    # Claude Code reads exit 2 of a hook as "block this action": a hook's own problem (an
    # unknown argument after an upgrade, say) must never block the agent. It exits 1, a
    # non-blocking error whose stderr line the agent shows.
    try:
        code = _main(arglist)
    except SystemExit as exc:  # argparse's mistakes, after their one line; --help is 0
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException as exc:
        print(f"evolog: error: hook: {_one_line(exc)}", file=sys.stderr)
        code = 1
    return 1 if code == 2 else code


def _main(arglist: list[str]) -> int:
    try:
        args = _fast_args(arglist) or build_parser(_command_of(arglist)).parse_args(arglist)
        handler: Handler = args.func
        return handler(args)
    except Exception as exc:
        if isinstance(exc, BrokenPipeError):
            return _reader_left()
        if _is_backend(exc):
            # A storage library's error that no layer mapped (a damaged segment, say): a
            # problem with the store, not with the command's input.
            print(f"evolog: error: reading the store: {_one_line(exc)}", file=sys.stderr)
            return 1
        if not isinstance(exc, (EventLogError, OSError)) and not _is_ours(exc):
            raise
        # One line for every error of ours (a corrupt or missing segment under any reading
        # command included) and for a file-system error that reached this far unmapped.
        print(f"evolog: error: {_one_line(exc)}", file=sys.stderr)
        return 2 if isinstance(exc, ValueError) else 1
    except KeyboardInterrupt:
        return 130


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    if isinstance(exc, OSError) and exc.strerror:  # not "[Errno 20] ...: 'path'"
        text = exc.strerror
        if exc.filename is not None and str(exc.filename) not in text:
            text = f"{exc.filename}: {text}"
    return " ".join((text or type(exc).__name__).split())


def _reader_left() -> int:
    """`evolog replay | head`: the reader left. Not an error of ours; exit quietly (and
    keep Python's exit-time flush of stdout from failing again)."""
    import contextlib

    with contextlib.suppress(OSError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0
