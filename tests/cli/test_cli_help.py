"""`evolog --version`, and every command's `--help`: its flags, their allowed values and
examples that the command's own parser accepts."""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from collections.abc import Iterator
from importlib.metadata import version

import pytest

from evolog.cli._main import _command_of, build_parser

_COMBINATORS = ("|", "||", "&&", ";")


def _commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """The parser and every sub-command parser below it, with its command path."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, (*path, name))


COMMANDS = list(_commands(build_parser()))


def _evolog_argvs(example: str) -> list[list[str]]:
    """The argument lists of each ``evolog`` invocation in a shell example line
    (environment assignments and redirections dropped)."""
    lexer = shlex.shlex(example, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    argvs: list[list[str]] = []
    words: list[str] = []
    tokens = iter([*lexer, ";"])
    for token in tokens:
        if token in ("<", ">"):
            next(tokens)  # the file
        elif token not in _COMBINATORS:
            words.append(token)
            continue
        while words and "=" in words[0] and not words[0].startswith("-"):
            words.pop(0)
        if words[:1] == ["evolog"]:
            argvs.append(words[1:])
        words = [] if token in _COMBINATORS else words
    return argvs


def test_the_walk_reaches_every_command() -> None:
    names = {" ".join(path) for path, _ in COMMANDS}
    expected = {"", "init", "append", "replay", "sql", "advise", "dream", "dream undo"}
    expected |= {"isa run", "route", "ledger", "ledger birth", "ledger forget", "tick", "demo"}
    expected |= {"remember", "recall", "feedback", "compress", "hook"}
    assert expected <= names


@pytest.mark.parametrize(
    ("path", "parser"), COMMANDS, ids=[" ".join(p) or "evolog" for p, _ in COMMANDS]
)
def test_every_command_documents_its_flags_and_values_with_an_example(
    path: tuple[str, ...], parser: argparse.ArgumentParser
) -> None:
    text = parser.format_help()
    assert parser.description and parser.description in text
    assert parser.epilog and parser.epilog.startswith("example")
    assert parser.epilog in text  # the examples as written, one a line
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        name = "/".join(action.option_strings) or action.dest
        assert action.help and action.help != argparse.SUPPRESS, f"{path}: {name} has no help"
        for choice in action.choices or ():
            assert str(choice) in text, f"{path}: {name} does not show {choice!r}"
    assert "(default: None)" not in text and "(default: False)" not in text
    invocations = [a for line in parser.epilog.splitlines()[1:] for a in _evolog_argvs(line)]
    commands = [argv[2:] if argv[:1] == ["--store"] else argv for argv in invocations]
    assert any(argv[: len(path)] == list(path) for argv in commands), (
        f"no example runs `evolog {' '.join(path)}`"
    )


@pytest.mark.parametrize(
    "example",
    sorted({line.strip() for _, p in COMMANDS for line in (p.epilog or "").splitlines()[1:]}),
)
def test_every_example_is_accepted_by_the_parser(example: str) -> None:
    argvs = _evolog_argvs(example)
    assert argvs, example
    for argv in argvs:
        try:
            build_parser(_command_of(argv)).parse_args(argv)
        except SystemExit as exc:  # a parse error, or a --help by mistake
            raise AssertionError(f"`evolog {shlex.join(argv)}` does not parse") from exc


def test_help_shows_defaults_unless_the_text_names_one() -> None:
    helps = {path: p.format_help() for path, p in COMMANDS}
    assert "(default: 100000)" in helps[("compact",)]
    assert "(default: heuristic)" in helps[("dream",)]
    assert "(default 50; 0: all)" in helps[("ledger",)]
    assert "(default: 50)" not in helps[("ledger",)]
    assert "(default: [])" not in helps[("remember",)]


def _evolog(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evolog", *args], capture_output=True, text=True, timeout=120
    )


def test_version_is_the_installed_distributions() -> None:
    expected = f"evolog {version('evolog')}\n"
    fast = _evolog("--version")
    assert (fast.returncode, fast.stdout, fast.stderr) == (0, expected, "")
    # The same through the parser (any other form of the command line).
    parsed = _evolog("--store", "/nonexistent", "--version")
    assert (parsed.returncode, parsed.stdout, parsed.stderr) == (0, expected, "")
    assert "--version" in _evolog("--help").stdout


def test_version_loads_no_parser_and_no_backend() -> None:
    code = (
        "import sys\n"
        "from evolog.cli._main import main\n"
        "assert main(['--version']) == 0\n"
        "print(sorted(m for m in ('argparse', 'duckdb', 'pyarrow') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.splitlines()[-1] == "[]"


@pytest.mark.parametrize(
    "argv", [["route", "--help"], ["ledger", "birth", "--help"], ["append", "--help"]]
)
def test_help_of_a_command_from_the_command_line(argv: list[str]) -> None:
    """A feature command's parser is built alone (its layer only): its help is complete."""
    done = _evolog(*argv)
    assert done.returncode == 0, done.stderr
    assert "example" in done.stdout
    assert f"evolog {' '.join(argv[:-1])} " in done.stdout
