"""The running installation and the store, as absolute commands a shell can run anywhere."""

from __future__ import annotations

import os
import shlex
import sys

__all__ = [
    "evolog_command",
    "marketplace_path",
    "mcp_add_line",
    "plugin_install_lines",
    "shell_line",
]


def _runs_this_python(script: str) -> bool:
    """Whether ``script`` is an entry-point script of this interpreter (its ``#!`` line)."""
    try:
        with open(script, "rb") as f:
            first = f.readline(4096)
    except OSError:
        return False
    if not first.startswith(b"#!"):
        return False
    shebang = os.fsdecode(first[2:].strip().split(b" ")[0])
    # The same interpreter in the same bin/ (`python3` and `python` of one venv alike).
    here = _python()
    same_dir = os.path.dirname(shebang) == os.path.dirname(here)
    return same_dir and os.path.realpath(shebang) == os.path.realpath(here)


def _python() -> str:
    # abspath, not realpath: a virtual environment's python is a symlink out of the venv,
    # and only the link inside it sees the venv's packages.
    return os.path.abspath(sys.executable)


def evolog_command() -> list[str]:
    """The argv that runs this installation: the ``evolog`` script that was run, else the
    one beside this interpreter, else ``python -m evolog`` (always this installation)."""
    candidates = [sys.argv[0] if sys.argv and os.path.basename(sys.argv[0]) == "evolog" else ""]
    candidates.append(os.path.join(os.path.dirname(_python()), "evolog"))
    for script in candidates:
        if script and os.access(script, os.X_OK) and _runs_this_python(os.path.abspath(script)):
            return [os.path.abspath(script)]
    return [_python(), "-m", "evolog"]


def shell_line(*args: str, store: str | None = None) -> str:
    """``evolog [--store STORE] ARGS...`` of this installation, quoted for a POSIX shell."""
    head = evolog_command() + (["--store", os.path.abspath(store)] if store else [])
    return shlex.join([*head, *args])


def mcp_add_line(store: str) -> str:
    """The ``claude mcp add`` line that serves ``store`` over MCP to Claude Code."""
    return "claude mcp add evolog -- " + shell_line("mcp", store=store)


def marketplace_path() -> str | None:
    """The checkout this installation runs from, if it holds the plugin's marketplace
    (an editable install); a wheel ships no plugin (add the repository instead)."""
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    manifest = os.path.join(here, ".claude-plugin", "marketplace.json")
    return here if os.path.isfile(manifest) else None


def plugin_install_lines(store: str) -> list[str]:
    """The two commands that install the plugin for this installation and ``store``."""
    source = marketplace_path() or "<a clone of the evolog repository>"
    head = evolog_command()
    exe = head[0] if len(head) == 1 else None
    config = [f"--config evolog={shlex.quote(exe)}"] if exe else []
    config.append(f"--config store={shlex.quote(os.path.abspath(store))}")
    return [
        f"claude plugin marketplace add {shlex.quote(source)}",
        " ".join(["claude plugin install evolog@evolog", *config]),
    ]
