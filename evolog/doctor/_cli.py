"""``evolog doctor``: the command line."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

__all__ = ["add_doctor_commands"]

_DESCRIPTION = (
    "Check that Claude Code can use this installation: the evolog command runs from a\n"
    "bare shell (what a hook's shell may be), the store takes writes, the hooks and the\n"
    "MCP server are configured (plugin, ~/.claude/settings.json, ~/.claude.json or\n"
    "./.mcp.json) with commands a hook's shell finds, `evolog mcp` lists its tools within\n"
    "Claude Code's 5 s wait (on a scratch store; this also warms its start-up cache), and\n"
    "whether the store's worker runs. One line per check: ok, FIX (with what to run) or\n"
    "note. Exits 1 when a check needs a fix."
)
_EXAMPLES = ("evolog doctor", "evolog --store ~/work/memory doctor --no-mcp-start")


def _cmd_doctor(args: argparse.Namespace) -> int:
    from evolog.cli import store_path

    from ._checks import print_checks, run_checks

    checks = run_checks(store_path(args), os.getcwd(), mcp_start=not args.no_mcp_start)
    return print_checks(checks)


def add_doctor_commands(sub: Any) -> None:
    from evolog.cli import help_formatter

    s = sub.add_parser(
        "doctor",
        help="check the Claude Code setup (hooks, MCP, store, worker); say what to fix",
        description=_DESCRIPTION,
        epilog="examples:\n" + "\n".join("  " + e for e in _EXAMPLES),
        formatter_class=help_formatter(),
    )
    s.add_argument(
        "--no-mcp-start", action="store_true", help="skip starting `evolog mcp` to time it"
    )
    s.set_defaults(func=_cmd_doctor)
