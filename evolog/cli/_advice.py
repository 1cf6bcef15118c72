"""``evolog advise``, ``evolog import evolver`` and ``evolog follow evolver``.

``advise`` answers in the shape of evolver's getAdvice result (plus the scored list). The
query comes from flags, or as JSON on stdin in the body shape of evolver's remote
``/kg/advice`` call (``{"signals": [...], "genes": [...], "driftEnabled": bool}``, plus
optional ``"now"`` and ``"as_of"``); stdin is read only when ``--signals`` or ``--genes`` is
missing, and flags override it.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from ._common import read_input, store_path

if TYPE_CHECKING:
    import argparse

    from evolog.advice import Advice


def add_advice_commands(subparsers: Any) -> None:
    """Register ``advise``, ``import`` and ``follow`` on the ``evolog`` sub-parsers."""
    from ._help import doc

    s = subparsers.add_parser(
        "advise", help="which gene to use for signals, which to avoid", **doc("advise")
    )
    s.add_argument("--signals", help="comma-separated signals (or JSON on stdin)")
    s.add_argument(
        "--signal",
        action="append",
        help="one signal, taken whole (commas included); repeat for more",
    )
    s.add_argument("--genes", help="JSON file: a list of genes, or an object with 'genes'")
    s.add_argument(
        "--policy",
        choices=["evolog", "evolver"],
        help="evolog (the default: per-outcome decay, bans need evidence) or evolver "
        "(evolver's getMemoryAdvice, decision for decision)",
    )
    s.add_argument("--drift", action="store_true", default=None, help="random drift enabled")
    s.add_argument("--now", help="ISO-8601 time to decay evidence to (default: the clock)")
    s.add_argument("--as-of", type=int, dest="as_of", help="answer as of this seq")
    s.add_argument(
        "--include-dead",
        action="store_true",
        help="also consider genes the survival ledger has buried",
    )
    s.set_defaults(func=run_advise)

    for name, helptext in (
        ("import", "import an evolver memory graph (idempotent)"),
        ("follow", "tail a live evolver memory graph into the store"),
    ):
        s = subparsers.add_parser(name, help=helptext, **doc(name))
        s.add_argument("source", choices=["evolver"], help="what kind of file it is")
        s.add_argument("file", help="the memory_graph.jsonl file")
        s.add_argument("--agent", default="evolver", help="agent name for imported events")
        s.add_argument("--id-prefix", default="", help="prefix for imported event ids")
        if name == "follow":
            s.add_argument("--poll", type=float, default=1.0, help="seconds between polls")
            s.add_argument("--polls", type=int, help="stop after this many polls")
            s.set_defaults(func=run_follow)
        else:
            s.set_defaults(func=run_import)


def _error(message: str, code: int) -> int:
    print(f"evolog: error: {message}", file=sys.stderr)
    return code


def _print_json(obj: object) -> None:
    import msgspec

    sys.stdout.write(msgspec.json.format(msgspec.json.encode(obj), indent=2).decode() + "\n")


def _stdin_query() -> dict[str, Any]:
    from evolog.advice import InvalidInputError

    try:
        text = read_input("-", "stdin", InvalidInputError)
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            f"stdin: expected a JSON query object in UTF-8; got an invalid byte at offset "
            f"{exc.start}"
        ) from None
    if not text.strip():
        return {}
    try:
        query = json.loads(text)
    except ValueError as exc:
        raise InvalidInputError(
            f"stdin: expected a JSON query object; got invalid JSON ({exc})"
        ) from None
    if not isinstance(query, dict):
        got = type(query).__name__
        raise InvalidInputError(f"stdin: expected a JSON query object; got a {got}")
    return query


def _genes_file(path: str) -> Any:
    from evolog.advice import InvalidInputError

    try:
        data = json.loads(read_input(path, f"--genes {path}", InvalidInputError))
    except InvalidInputError:
        raise
    except OSError as exc:
        raise InvalidInputError(f"--genes {path}: cannot read: {exc.strerror}") from None
    except ValueError as exc:
        raise InvalidInputError(
            f"--genes {path}: expected JSON; got invalid JSON ({exc})"
        ) from None
    return data.get("genes") if isinstance(data, dict) else data


def _query(args: argparse.Namespace) -> dict[str, Any]:
    from evolog.advice import InvalidInputError

    given = args.signals is not None or bool(args.signal)
    query = _stdin_query() if not given or args.genes is None else {}
    if given:
        split = [s for s in (args.signals or "").split(",") if s]
        query["signals"] = [*split, *(args.signal or [])]
    if args.genes is not None:
        query["genes"] = _genes_file(args.genes)
    if args.drift is not None:
        query["driftEnabled"] = True
    if args.now is not None:
        query["now"] = args.now
    if args.as_of is not None:
        query["as_of"] = args.as_of
    for name in ("signals", "genes"):
        if name not in query:
            raise InvalidInputError(
                f"{name}: expected --{name} or a JSON query on stdin with {name!r}; got neither"
            )
    _check_text(query["signals"], "signals")
    return query


def _check_text(values: Any, name: str) -> None:
    """Refuse text that cannot be written back out as UTF-8 (a lone surrogate: from
    invalid bytes in an argument, or a ``\\udcxx`` escape in JSON)."""
    from evolog.advice import InvalidInputError

    for i, value in enumerate(values if isinstance(values, list) else ()):
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise InvalidInputError(
                    f"{name}[{i}]: expected UTF-8 text; got an unpaired surrogate or an "
                    f"invalid byte at character {exc.start} of {value!r}"
                ) from None


def _advise(args: argparse.Namespace) -> Advice:
    from evolog.advice import AdviceEngine
    from evolog.eventlog import EventLog

    query = _query(args)
    with EventLog(store_path(args)) as log:
        engine = AdviceEngine(log, one_shot=True)
        advice = engine.advise(
            query["signals"],
            query["genes"],
            policy=args.policy or query.get("policy", "evolog"),
            drift=query.get("driftEnabled", False),
            now=query.get("now"),
            as_of=query.get("as_of"),
            include_dead=True if args.include_dead else None,
        )
        engine.save_if_index_grew()
        return advice


def run_advise(args: argparse.Namespace) -> int:
    """``evolog advise``: print the advice as JSON."""
    from evolog.advice import AdviceError

    try:
        advice = _advise(args)
    except AdviceError as exc:
        return _error(str(exc), 2 if isinstance(exc, ValueError) else 1)
    _print_json(advice.to_json())
    return 0


def run_import(args: argparse.Namespace) -> int:
    """``evolog import evolver FILE``: print what was imported, skipped and why."""
    from evolog.advice import AdviceError, import_evolver
    from evolog.eventlog import EventLog

    try:
        with EventLog(store_path(args)) as log:
            report = import_evolver(log, args.file, agent=args.agent, id_prefix=args.id_prefix)
    except AdviceError as exc:
        return _error(str(exc), 2 if isinstance(exc, ValueError) else 1)
    _print_json(report.to_json())
    return 0


def run_follow(args: argparse.Namespace) -> int:
    """``evolog follow evolver FILE``: tail until Ctrl-C (or ``--polls``); print totals."""
    from evolog.advice import AdviceError, ImportReport, follow_evolver
    from evolog.eventlog import EventLog

    polls = [0]
    last = [0]

    def on_poll(report: ImportReport) -> None:
        polls[0] += 1
        if report.imported != last[0]:
            last[0] = report.imported
            print(f"evolog: follow: {report.imported} events imported", file=sys.stderr)

    def should_stop() -> bool:
        return args.polls is not None and polls[0] >= args.polls

    try:
        with EventLog(store_path(args)) as log:
            report = follow_evolver(
                log,
                args.file,
                poll_seconds=args.poll,
                agent=args.agent,
                id_prefix=args.id_prefix,
                should_stop=should_stop,
                on_poll=on_poll,
            )
    except AdviceError as exc:
        return _error(str(exc), 2 if isinstance(exc, ValueError) else 1)
    _print_json(report.to_json())
    return 0
