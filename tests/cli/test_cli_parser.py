"""The ``evolog`` parser: a feature command builds only its own layer, with the same result."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from evolog.cli._main import _FEATURE_LAYERS, _command_of, _fast_args, build_parser


def _commands(parser: argparse.ArgumentParser) -> set[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return set(action.choices)
    raise AssertionError("no subcommands")


def test_every_feature_command_is_in_its_layer() -> None:
    full = _commands(build_parser())
    assert set(_FEATURE_LAYERS) <= full
    for command in _FEATURE_LAYERS:
        assert command in _commands(build_parser(command))


@pytest.mark.parametrize(
    "argv",
    [
        ["sql", "SELECT 1", "--format", "csv"],
        ["--store", "/s", "edges", "--signals", "a,b", "--mode", "per_event"],
        ["--store=/s", "export", "out", "--format", "csv"],
        ["advise", "--signals", "a"],
        ["ledger"],
    ],
)
def test_partial_parser_parses_like_the_full_one(argv: list[str]) -> None:
    assert vars(build_parser(_command_of(argv)).parse_args(argv)) == vars(
        build_parser().parse_args(argv)
    )


def test_command_of_skips_the_store_option() -> None:
    assert _command_of(["--store", "sql", "sql", "q"]) == "sql"
    assert _command_of(["--store=x", "edges"]) == "edges"
    assert _command_of(["--help"]) is None
    assert _command_of([]) is None


def test_unknown_command_lists_every_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "evolog", "nosuchcommand"], capture_output=True, text=True
    )
    assert done.returncode == 2
    for command in ("init", "append", "sql", "advise", "dream", "ledger", "demo"):
        assert repr(command) in done.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["sql", "SELECT 1"],
        ["--store", "/s", "sql", "SELECT 1", "--format", "csv"],
        ["sql", "SELECT 1", "--format=json", "--as-of", "12", "--now", "2026-01-01T00:00:00Z"],
        ["sql", "SELECT 1", "--out", "x.parquet", "--format", "table", "--format", "csv"],
    ],
)
def test_sql_fast_path_parses_like_argparse(argv: list[str]) -> None:
    fast = _fast_args(argv)
    assert fast is not None
    assert vars(fast) == vars(build_parser().parse_args(argv))


@pytest.mark.parametrize(
    "argv",
    [
        ["sql"],
        ["sql", "--help"],
        ["sql", "-- a comment\nSELECT 1"],
        ["sql", "SELECT 1", "--format", "xml"],
        ["sql", "SELECT 1", "--form", "csv"],
        ["sql", "SELECT 1", "--format"],
        ["sql", "SELECT 1", "--as-of", "-3"],
        ["sql", "SELECT 1", "--store", "/s"],
        ["sql", "SELECT 1", "extra"],
    ],
)
def test_sql_fast_path_leaves_the_rest_to_argparse(argv: list[str]) -> None:
    assert _fast_args(argv) is None
