"""``evolog remember``, ``recall``, ``feedback`` and ``compress``: the memory-item commands.

``remember BRANCH TEXT`` writes a note (deduplicated; the branch may be compressed) and
prints what it did as JSON. ``recall QUERY`` prints the block to inject (``--format text``,
the default) or the structured list (``--format json``) and appends a ``recall`` event
unless ``--no-record``. ``feedback ITEM helpful|harmful|neutral`` records a verdict;
``compress`` archives cold branches, ``compress --undo ITEM`` gives a merge's sources back.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from ._common import print_json, store_path

if TYPE_CHECKING:
    import argparse

__all__ = ["add_memory_commands"]


def add_memory_commands(sub: Any) -> None:
    """Register the memory-item commands on the ``evolog`` sub-parsers."""
    from ._help import doc

    s = sub.add_parser(
        "remember", help="write a memory note to a branch (deduplicated)", **doc("remember")
    )
    s.add_argument("branch", help="the branch (e.g. backbone, deploy, the project's name)")
    s.add_argument("text", help="what to remember")
    s.add_argument("--tag", action="append", default=[], help="a tag (repeatable)")
    s.add_argument(
        "--kind",
        choices=("note", "lesson"),
        default="note",
        help="a lesson is credited, decayed and can die in the ledger like a strategy",
    )
    s.set_defaults(func=run_remember)

    s = sub.add_parser(
        "recall",
        help="memory items for a query, as a block within a budget (or JSON)",
        **doc("recall"),
    )
    s.add_argument("query", help="the task or prompt")
    s.add_argument("--budget", type=int, help="character budget (default: memory.json, 4000)")
    s.add_argument("--top-n", type=int, help="at most this many items (default 10)")
    s.add_argument("--threshold", type=float, help="minimum score (default 0.15)")
    s.add_argument("--branch", action="append", help="only these branches (repeatable)")
    s.add_argument(
        "--format",
        choices=["text", "json"],
        default="text",
        help="text: the block to inject; json: the items with their scores and why",
    )
    s.add_argument("--include-dead", action="store_true", help="also items the ledger buried")
    s.add_argument("--action-id", default="", help="the attempt this recall serves")
    s.add_argument("--no-record", action="store_true", help="do not append a recall event")
    s.add_argument("--signal", action="append", help="a signal for gene advice (repeatable)")
    s.add_argument("--gene", action="append", help="a candidate gene (default: strategies)")
    s.set_defaults(func=run_recall)

    s = sub.add_parser(
        "feedback",
        help="record a verdict on a memory item (helpful, harmful or neutral)",
        **doc("feedback"),
    )
    s.add_argument("item", help="the item id (see `evolog recall --format json`)")
    s.add_argument(
        "verdict", choices=["helpful", "harmful", "neutral"], help="was the item useful?"
    )
    s.add_argument("--note", help="why (free text)")
    s.add_argument(
        "--action-id",
        default="",
        help="the attempt the verdict is about: it replaces the verdict that attempt's "
        "outcome gave the item in its ACE counters",
    )
    s.set_defaults(func=run_feedback)

    s = sub.add_parser(
        "compress",
        help="archive cold branches (or --undo a compression)",
        **doc("compress"),
    )
    s.add_argument("--undo", metavar="ITEM", help="retract this compression or archive item")
    s.set_defaults(func=run_compress)


def _memory(args: argparse.Namespace) -> Any:
    from evolog import Memory

    return Memory(store_path(args), create=False)


def run_remember(args: argparse.Namespace) -> int:
    with _memory(args) as mem:
        print_json(mem.remember(args.branch, args.text, args.tag, kind=args.kind))
    return 0


def run_recall(args: argparse.Namespace) -> int:
    with _memory(args) as mem:
        result = mem.recall(
            args.query,
            budget_chars=args.budget,
            top_n=args.top_n,
            threshold=args.threshold,
            branches=args.branch,
            include_dead=args.include_dead,
            action_id=args.action_id,
            record=not args.no_record,
            signals=args.signal,
            genes=[{"type": "Gene", "id": g} for g in args.gene] if args.gene else None,
        )
    if args.format == "json":
        print_json(result)
    elif result.text:
        sys.stdout.write(result.text + "\n")
    return 0


def run_feedback(args: argparse.Namespace) -> int:
    with _memory(args) as mem:
        seq = mem.feedback(args.item, args.verdict, args.note, action_id=args.action_id)
    print_json({"seq": seq, "item": args.item, "verdict": args.verdict})
    return 0


def run_compress(args: argparse.Namespace) -> int:
    with _memory(args) as mem:
        print_json(mem.compress(undo=args.undo))
    return 0
