"""``evolog sql``, ``evolog edges`` and ``evolog export``: the projections from the shell.

``sql`` runs one read-only query over the catalog (``events``, one view per kind,
``traces``, ``edges``, ``gene_priors``); anything else (COPY, ATTACH, SET, INSTALL, writes,
files outside the store) is refused with exit status 2. Results print as a table for people,
CSV, or JSON (an array of objects), or go to a Parquet file with ``--out``. Registering
the commands imports nothing heavy; DuckDB and pyarrow load when one of them runs.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import math
import os
import sys
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from ._common import store_path

if TYPE_CHECKING:  # pyarrow costs ~150 ms to import: not on every command's path
    import argparse

    import pyarrow as pa

_MAX_CELL = 60


def add_sql_commands(sub: Any) -> None:
    """Register ``sql``, ``edges`` and ``export`` on the ``evolog`` subparsers."""
    from ._help import doc

    s = sub.add_parser("sql", help="run one read-only SQL query over the projections", **doc("sql"))
    s.add_argument("query", help='e.g. "SELECT kind, count(*) FROM events GROUP BY kind"')
    _common(s, "table")
    s.add_argument("--out", help="write the result to this Parquet file instead of printing it")
    from ._iceberg import add_sql_options

    add_sql_options(s)
    s.set_defaults(func=run_sql)

    s = sub.add_parser(
        "edges", help="edge stats per (signal key, gene), or gene priors", **doc("edges")
    )
    s.add_argument(
        "--signals",
        help="comma-separated signals: the edges of their evolver key and of every key "
        "holding all of them (--exact: their key only)",
    )
    s.add_argument(
        "--signal", action="append", help="one signal, taken whole (commas included); repeatable"
    )
    s.add_argument("--key", help="a signal key, as stored")
    s.add_argument(
        "--exact", action="store_true", help="with --signals: only their evolver key's edges"
    )
    s.add_argument("--gene", help="comma-separated gene ids")
    s.add_argument("--priors", action="store_true", help="per-gene priors over all keys")
    s.add_argument(
        "--mode",
        choices=["newest", "per_event"],
        default=None,
        help="decay: newest (evolver's, default) or per_event",
    )
    s.add_argument("--half-life", type=float, default=None, help="edge half-life, days (30)")
    s.add_argument(
        "--gene-half-life", type=float, default=None, help="gene prior half-life, days (45)"
    )
    _common(s, "json")
    s.set_defaults(func=run_edges)

    s = sub.add_parser(
        "export", help="write events, traces, edges, ... as Parquet or CSV", **doc("export")
    )
    s.add_argument("dir", help="output directory (created if missing)")
    s.add_argument("--format", choices=["parquet", "csv"], default="parquet", help="file format")
    s.add_argument("--as-of", help="a seq, or an ISO time (event time <= it)")
    s.add_argument("--now", help="evaluate decay at this ISO time or µs (default: now)")
    s.set_defaults(func=run_export)


_SQL_OPTIONS: dict[str, tuple[str, ...] | None] = {
    "--format": ("table", "csv", "json"),
    "--as-of": None,
    "--now": None,
    "--out": None,
}


def sql_args(argv: list[str], store: str | None) -> SimpleNamespace | None:
    """``sql QUERY [--format F] [--as-of X] [--now T] [--out FILE]`` parsed as argparse
    would, without it (a cold query is mostly imports); None for anything else (help,
    abbreviations, bad values), which argparse then parses or reports."""
    if not argv or argv[0].startswith("-"):
        return None
    values: dict[str, str | None] = {"format": "table", "as_of": None, "now": None, "out": None}
    # The --iceberg options (not parsed here: such a command line goes through argparse).
    values.update(iceberg=None, snapshot=None, warehouse=None, s3_endpoint=None, s3_region=None)
    rest = argv[1:]
    while rest:
        name, equals, value = rest[0].partition("=")
        if name not in _SQL_OPTIONS or (not equals and len(rest) < 2):
            return None
        value, rest = (value, rest[1:]) if equals else (rest[1], rest[2:])
        choices = _SQL_OPTIONS[name]
        if value.startswith("-") or (choices is not None and value not in choices):
            return None
        values[name[2:].replace("-", "_")] = value
    return SimpleNamespace(store=store, command="sql", query=argv[0], func=run_sql, **values)


def _common(s: argparse.ArgumentParser, default_format: str) -> None:
    s.add_argument(
        "--format", choices=["table", "csv", "json"], default=default_format, help="output format"
    )
    s.add_argument("--as-of", help="a seq, or an ISO time (event time <= it)")
    s.add_argument("--now", help="evaluate decay at this ISO time or µs (default: now)")


def _errors(func: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Print projection (and Iceberg) errors as one line: exit 2 for bad input, 1 for
    anything else."""

    def wrapper(args: argparse.Namespace) -> int:
        from evolog.iceberg import IcebergError
        from evolog.projections import ProjectionError

        try:
            return func(args)
        except (ProjectionError, IcebergError) as exc:
            print(f"evolog: error: {exc}", file=sys.stderr)
            return 2 if isinstance(exc, ValueError) else 1

    wrapper.__doc__ = func.__doc__
    return wrapper


def _projections(args: argparse.Namespace) -> Any:
    from evolog.projections import Projections

    return Projections(store_path(args))


def _bounds(args: argparse.Namespace) -> dict[str, int | None]:
    as_of, as_of_ts = None, None
    if args.as_of is not None:  # parse_as_of loads the JSON reader, which a plain query skips
        from ._common import parse_as_of

        as_of, as_of_ts = parse_as_of(args.as_of)
    return {"as_of": as_of, "as_of_ts": as_of_ts, "now": _parse_now(args.now)}


def _parse_now(text: str | None) -> int | None:
    from evolog.eventlog import parse_ts

    if text is None:
        return None
    text = text.strip()
    # Digits are microseconds, held to the range of event times like an ISO time is.
    return parse_ts(int(text) if text.isdigit() else text, "--now")


@_errors
def run_sql(args: argparse.Namespace) -> int:
    """``evolog sql QUERY`` (over an Iceberg table with ``--iceberg``)."""
    if getattr(args, "iceberg", None) is not None:
        from ._iceberg import iceberg_result

        table, out = iceberg_result(args)
    else:
        proj = _projections(args)
        out = None
        if args.out:  # refused before the query runs, not after
            from evolog.projections import outside_store

            out = outside_store(proj.paths.root, args.out, "--out")
        table = proj.sql(args.query, **_bounds(args))
    if out is not None:
        _write_parquet(table, out)
        print(_json({"rows": table.num_rows, "out": out}))
        return 0
    render(table, args.format, sys.stdout)
    return 0


@_errors
def run_edges(args: argparse.Namespace) -> int:
    """``evolog edges``."""
    proj = _projections(args)
    genes = _split(args.gene)
    if args.priors:
        table = proj.gene_priors(
            genes=genes, mode=args.mode, gene_half_life_days=args.gene_half_life, **_bounds(args)
        )
    else:
        keys = [args.key] if args.key else None
        table = proj.edges(
            signals=_signals(args),
            keys=keys,
            genes=genes,
            mode=args.mode,
            half_life_days=args.half_life,
            gene_half_life_days=args.gene_half_life,
            related=not args.exact,
            **_bounds(args),
        )
    render(table, args.format, sys.stdout)
    return 0


@_errors
def run_export(args: argparse.Namespace) -> int:
    """``evolog export DIR``."""
    paths = _projections(args).export(args.dir, args.format, **_bounds(args))
    print(_json({"written": paths}, indent=2))
    return 0


def _signals(args: argparse.Namespace) -> list[str] | None:
    """``--signals`` split at commas, then each ``--signal`` whole."""
    if args.signals is None and not args.signal:
        return None
    return [*(_split(args.signals) or []), *(args.signal or [])]


def _split(text: str | None) -> list[str] | None:
    return [p.strip() for p in text.split(",") if p.strip()] if text is not None else None


def _write_parquet(table: pa.Table, path: str) -> None:
    import pyarrow.parquet as pq

    from evolog.projections import EngineError

    # A fresh name beside the target (O_EXCL: never an existing file, nor one a symlink
    # points to); the rename replaces the directory entry, so a hard link to the old file
    # keeps its content.
    tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{os.urandom(6).hex()}")
    created = False
    try:
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666))
        created = True
        pq.write_table(table, tmp, compression="zstd")
        os.replace(tmp, path)
    except OSError as exc:
        if created:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise EngineError(f"{path}: cannot write the result: {exc}") from None


# -- rendering -----------------------------------------------------------------------------
def render(table: pa.Table, fmt: str, out: Any) -> None:
    """Write ``table`` to ``out`` as ``table`` (aligned text), ``csv`` or ``json``."""
    from evolog.projections import py_rows

    rows = py_rows(table)
    if fmt == "json":
        out.write(_json([_jsonable(r) for r in rows], indent=2, ensure_ascii=False))
        out.write("\n")
    elif fmt == "csv":
        import csv

        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(table.column_names)
        writer.writerows([_text(v, exact=True) for v in r.values()] for r in rows)
    else:
        out.write(format_table(table.column_names, rows))


def format_table(names: Sequence[str], rows: list[dict[str, Any]]) -> str:
    """An aligned text table: numbers right-aligned, long cells cut, a row count below."""
    cells = [[_cut(_text(r[n], exact=False)) for n in names] for r in rows]
    numeric = [
        bool(rows) and all(isinstance(r[n], (int, float)) or r[n] is None for r in rows)
        for n in names
    ]
    widths = [max([len(n), *(len(c[i]) for c in cells)]) for i, n in enumerate(names)]

    def line(values: Sequence[str]) -> str:
        parts = [
            v.rjust(w) if num else v.ljust(w)
            for v, w, num in zip(values, widths, numeric, strict=True)
        ]
        return " | ".join(parts).rstrip()

    out = [line(names), "-+-".join("-" * w for w in widths)]
    out.extend(line(c) for c in cells)
    out.append(f"({len(rows)} row{'' if len(rows) == 1 else 's'})")
    return "\n".join(out) + "\n"


def _cut(text: str) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= _MAX_CELL else text[: _MAX_CELL - 1] + "…"


def _text(value: Any, *, exact: bool) -> str:
    if value is None:
        return "" if exact else "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value) if exact or not math.isfinite(value) else f"{value:.6g}"
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, (list, dict)):
        return _json(_jsonable(value), ensure_ascii=False)
    return str(value)


def _json(value: Any, **options: Any) -> str:
    import json  # only the commands and formats that print JSON pay for the import

    return json.dumps(value, **options)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)
