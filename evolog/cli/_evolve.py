"""``evolog evolve EXPRESSION`` and ``evolog evolve undo RUN``: memory-evolution runs.

``evolve "ace >> reasoning_bank >> reme"`` runs the pipeline over the store's memory items
and appends the proposed changes (``--dry-run``: prints them and appends nothing);
progress goes to stderr, the report to stdout as JSON (``retired``: the items pruned).
``--curate`` and ``--harmful-share`` set ACE's two retirement rules; ``--dedup seed``
gives ReasoningBank and ReMe the seed's dedup rules for every entry. ``evolve undo RUN``
retracts a run.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from ._common import print_json, store_path

if TYPE_CHECKING:
    import argparse

__all__ = ["add_evolve_commands"]


def add_evolve_commands(sub: Any) -> None:
    """Register ``evolve`` on the ``evolog`` sub-parsers."""
    from ._help import doc

    s = sub.add_parser(
        "evolve",
        help="evolve the memory items with a pipeline (ace, reasoning_bank, reme; >> and |)",
        **doc("evolve"),
    )
    s.add_argument("expression", help="the pipeline, or 'undo'")
    s.add_argument("run", nargs="?", help="with 'undo': the run to retract")
    s.add_argument("--dry-run", action="store_true", help="print the proposed events only")
    s.add_argument(
        "--embedder",
        default=None,
        help="embedder for the dedups of ReasoningBank and ReMe (default: the store's "
        "default; 'none': the seed's rules, exact content for ReasoningBank)",
    )
    s.add_argument(
        "--dedup",
        choices=("align", "seed"),
        default="align",
        help="align (default): written lessons by word alignment, the offline templates by "
        "the seed's rules; seed: the seed's rules for all (cosine >= 0.85, ratio > 0.85)",
    )
    s.add_argument("--model", default=None, help="a Claude model for reflection and patterns")
    s.add_argument(
        "--curate",
        type=float,
        default=None,
        metavar="THRESHOLD",
        help="ace also retires the items whose score helpful / (helpful + harmful + neutral) "
        "is below THRESHOLD, from 0 to 1 (default: no curation; 0.3 is the seed's)",
    )
    s.add_argument(
        "--harmful-share",
        type=float,
        default=0.5,
        metavar="SHARE",
        help="ace retires the items whose harmful / (helpful + harmful + neutral) exceeds "
        "SHARE, from 0 to 1; 1 retires none this way (default: 0.5)",
    )
    s.add_argument("--quiet", action="store_true", help="no progress on stderr")
    s.set_defaults(func=run_evolve)


def run_evolve(args: argparse.Namespace) -> int:
    from evolog.dream.evolve import apply, pipeline, undo
    from evolog.eventlog import EventLog

    if args.expression == "undo":
        if not args.run:
            print("evolog: evolve undo: expected a RUN id; got none", file=sys.stderr)
            return 2
        with EventLog(store_path(args), create=False) as log:
            ids = undo(log, args.run)
        print_json({"undone": args.run, "events": len(ids)})
        return 0
    if args.run:
        print(f"evolog: evolve: expected one expression; got also {args.run!r}", file=sys.stderr)
        return 2
    ace = {"harmful_share": args.harmful_share, "curate_threshold": args.curate}
    rule = {"rule": args.dedup}
    options = {"ace": ace, "reasoning_bank": rule, "reme": rule}
    strategy = pipeline(args.expression, options)  # parse before opening anything
    embedder = None
    if args.embedder != "none":
        from evolog.projections import get_embedder

        embedder = get_embedder(args.embedder)
    model = None
    if args.model:
        from evolog.dream.evolve import ClaudeModel

        model = ClaudeModel(model=args.model)

    def say(message: str) -> None:
        if not args.quiet:
            print(f"evolve: {message}", file=sys.stderr, flush=True)

    with EventLog(store_path(args), create=False) as log:
        report = apply(
            log, strategy, dry_run=args.dry_run, embedder=embedder, model=model, progress=say
        )
    print_json(report)
    return 0
