"""CLI commands for dreams and strategies: ``isa``, ``dream``, ``route`` and ``graph``.

``evolog isa parse FILE|-`` and ``evolog isa run FILE|-`` are for people writing or
debugging dreamer prompts: the parsed instructions and diagnostics, or the VM's result on an
empty graph, as JSON. ``evolog dream`` dreams every undreamed trace (a progress bar on a
terminal), ``evolog dream undo CYCLE`` retracts a cycle, ``evolog dream cycles`` lists
them; ``evolog route "task"`` routes a task; ``evolog graph`` shows the strategies.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

import msgspec

from ._common import ProgressBar, read_input, store_path

if TYPE_CHECKING:
    import argparse

__all__ = ["add_dream_commands", "demo_dream"]

Handler = Callable[[Any], int]


def _emit(obj: object) -> None:
    sys.stdout.buffer.write(msgspec.json.format(msgspec.json.encode(obj), indent=2) + b"\n")
    sys.stdout.flush()


def _guarded(func: Handler) -> Handler:
    """Print our own errors as one line; 2 for bad input, 1 for anything else."""

    def run(args: Any) -> int:
        try:
            return func(args)
        except Exception as exc:
            # Imported here: `evolog isa parse` must not pay for numpy and DuckDB.
            from evolog.advice import RouterError
            from evolog.dream import DreamError
            from evolog.projections import ProjectionError

            if not isinstance(exc, DreamError | ProjectionError | RouterError):
                raise
            print(f"evolog: error: {exc}".replace("\n", " "), file=sys.stderr)
            return 2 if isinstance(exc, ValueError) else 1

    return run


# -- isa --------------------------------------------------------------------------------
def _read_source(name: str) -> str:
    try:
        return read_input(name, "stdin" if name == "-" else name, _InputError)
    except (OSError, UnicodeDecodeError) as exc:
        raise _InputError(f"{name}: expected a readable UTF-8 ISA file; got {exc}") from None


class _InputError(ValueError):
    pass


def _parsed(args: Any) -> Any:
    from evolog.dream import ISA_REGISTRY, parse_program

    known = ISA_REGISTRY.versions()
    if args.isa_version not in known:
        raise _InputError(
            f"--isa-version: expected one of {', '.join(known)}; got {args.isa_version!r}"
        )
    return parse_program(_read_source(args.file), isa_version=args.isa_version)


def _program_json(program: Any) -> dict[str, Any]:
    return {
        "isa_version": program.isa_version,
        "ok": program.ok,
        "instructions": [
            {"opcode": i.opcode.value, "args": list(i.args), "line": i.line}
            for i in program.instructions
        ],
        "diagnostics": msgspec.to_builtins(program.diagnostics),
    }


def _cmd_isa_parse(args: Any) -> int:
    program = _parsed(args)
    _emit(_program_json(program))
    return 0 if program.ok else 1


def _cmd_isa_run(args: Any) -> int:
    from evolog.dream import run_program

    program = _parsed(args)
    ctx = None
    if args.phase:
        from evolog.dream import VMContext
        from evolog.dream.isa import PHASE_OPCODES

        # As the dream cycle runs that phase: its opcodes only, and only its own nodes.
        label = "SWS/REM" if args.phase == "trace" else args.phase
        ctx = VMContext(phase=label, allowed=PHASE_OPCODES[args.phase], scope=frozenset())
    result = run_program(program, ctx)
    out = _program_json(program)
    del out["instructions"]
    out.update(msgspec.to_builtins(result))
    _emit(out)
    return 0 if program.ok and result.success else 1


# -- dream ------------------------------------------------------------------------------
def _make_dreamer(args: Any) -> Any:
    if args.dreamer == "claude":
        from evolog.dream import ClaudeDreamer

        return ClaudeDreamer(model=args.model)
    from evolog.dream import HeuristicDreamer

    return HeuristicDreamer()


def _cmd_dream(args: Any) -> int:
    from evolog.dream import DreamConfig, dream
    from evolog.eventlog import EventLog
    from evolog.projections import get_embedder

    config = DreamConfig(
        batch_size=args.batch_size, max_traces=args.max_traces, compaction=args.compact,
        fallback=args.fallback == "heuristic",
    )  # fmt: skip
    dreamer = _make_dreamer(args)
    bar = ProgressBar(f"dreaming ({dreamer.name})")
    with EventLog(store_path(args)) as log:
        try:
            report = dream(
                log, dreamer=dreamer, embedder=get_embedder(args.embedder), config=config,
                progress=bar,
            )  # fmt: skip
        finally:
            bar.close()
    fallbacks = sum(c.fallbacks for c in report.cycles)
    if fallbacks:  # asked for, but never silent
        print(
            f"evolog: dream: {fallbacks} of {report.traces_dreamed} trace(s) dreamed by the "
            f"heuristic fallback, not by {dreamer.name} (see each cycle's phase_log)",
            file=sys.stderr,
        )
    _emit(report)
    return 0


def _cmd_dream_undo(args: Any) -> int:
    from evolog.dream import undo_cycle
    from evolog.eventlog import EventLog

    with EventLog(store_path(args)) as log:
        _known_cycle(log, args.cycle)
        events = undo_cycle(log, args.cycle, cascade=args.cascade, reason=args.reason)
    _emit({"undone": [e.target_cycle for e in events]})
    return 0


def _known_cycle(log: Any, cycle: str) -> None:
    """Refuse an unknown cycle before undo takes the dream lock: a command that fails on its
    input leaves the store as it was, without a new lock file. (``undo_cycle`` checks again
    under the lock.)"""
    from evolog.dream import UndoError
    from evolog.projections import load_memgraph

    # A fold, not the checkpoint: a refused command leaves the store as it was, cache too.
    graph = load_memgraph(log)
    live = [c.cycle for c in graph.cycles()]
    if cycle not in live and cycle not in graph.retracted_cycles:
        recent = ", ".join(live[-5:]) or "none"
        raise UndoError(f"expected the id of a dream cycle; got {cycle!r} (recent: {recent})")


def _cmd_dream_cycles(args: Any) -> int:
    from evolog.eventlog import EventLog
    from evolog.projections import cached_memgraph

    with EventLog(store_path(args)) as log:
        graph = cached_memgraph(log)
    # Trace lists can be thousands long; `evolog graph` and the events themselves have them.
    cycles = [
        msgspec.to_builtins(c) | {"traces": len(c.traces), "consumed": len(c.consumed)}
        for c in graph.cycles()
    ]
    _emit({"cycles": cycles, "retracted": sorted(graph.retracted_cycles)})
    return 0


# -- route and graph ---------------------------------------------------------------------
def _cmd_route(args: Any) -> int:
    from evolog.advice import Router, RouterConfig
    from evolog.eventlog import EventLog
    from evolog.projections import get_embedder

    if not args.task.strip():  # refused before the graph checkpoint is brought up to date
        raise _InputError(f"task: expected non-blank text; got {args.task!r}")
    config = RouterConfig(top_k=args.top_k)
    judge = None
    if args.judge:  # built first: a missing API key is refused before the store is opened
        from evolog.advice import JudgedRouter, ModelJudge
        from evolog.dream.evolve import ClaudeModel

        judge = ModelJudge(ClaudeModel(model=args.judge), name=f"claude:{args.judge}")
    with EventLog(store_path(args)) as log:
        router = Router.from_log(
            log,
            embedder=get_embedder(args.embedder),
            config=config,
            include_dead=args.include_dead,
        )
    if judge is not None:
        router = JudgedRouter.around(router, judge)
    decision = router.route(args.task, current=args.current)
    out: dict[str, Any] = msgspec.to_builtins(decision)
    if decision.entry is not None:
        out["plan"] = msgspec.to_builtins(router.plan(decision.entry.node))
    _emit(out)
    return 0


def _cmd_graph(args: Any) -> int:
    from evolog.eventlog import EventLog
    from evolog.projections import graph_views
    from evolog.projections.graph import graph_document

    with EventLog(store_path(args)) as log:
        graph = graph_views(log)
    if args.node:
        resolved = graph.resolve(args.node)
        if resolved is None:
            raise _InputError(f"--node: expected a node of the memory graph; got {args.node!r}")
        ids = [args.node] if args.node == resolved else [args.node, resolved]
        views = [graph.view(row) for row in map(graph.row, ids) if row is not None]
    elif graph.write_document(sys.stdout.buffer, live_only=not args.all):
        return 0  # written straight from the checkpoint's mapping
    else:
        views = graph.views(live_only=not args.all)
    # The views are stored as printed: the output is their concatenation.
    sys.stdout.buffer.writelines(graph_document(views, graph.live_count, graph.cycle_count))
    sys.stdout.flush()
    return 0


def _input_errors(func: Handler) -> Handler:
    def run(args: Any) -> int:
        try:
            return func(args)
        except _InputError as exc:
            print(f"evolog: error: {exc}", file=sys.stderr)
            return 2

    return run


def _wrap(func: Handler) -> Handler:
    return _input_errors(_guarded(func))


# -- registration -----------------------------------------------------------------------
def add_dream_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``isa``, ``dream``, ``route`` and ``graph`` on the main parser's subparsers."""
    from ._help import doc

    isa = sub.add_parser(
        "isa", help="parse or run dream ISA text (for writing prompts)", **doc("isa")
    )
    isa_sub = isa.add_subparsers(dest="isa_command", required=True, metavar="ACTION")
    for name, func, text in (
        ("parse", _cmd_isa_parse, "instructions and diagnostics as JSON"),
        ("run", _cmd_isa_run, "the VM's result on an empty graph as JSON"),
    ):
        s = isa_sub.add_parser(name, help=text, **doc("isa " + name))
        s.add_argument("file", help="an ISA file, or - for stdin")
        s.add_argument("--isa-version", default="1.0", help="the ISA version it is written in")
        if name == "run":
            s.add_argument(
                "--phase",
                choices=["trace", "links", "compaction", "reconsolidation", "consolidation"],
                help="run as the dream cycle runs this phase (its opcodes, its own nodes)",
            )
        s.set_defaults(func=_wrap(func))

    d = sub.add_parser("dream", help="dream undreamed traces into strategies", **doc("dream"))
    d.add_argument(
        "--dreamer",
        choices=["heuristic", "claude"],
        default="heuristic",
        help="heuristic (deterministic, offline) or claude (a model; needs ANTHROPIC_API_KEY)",
    )
    d.add_argument("--model", help="model of the claude dreamer (default: $EVOLOG_CLAUDE_MODEL)")
    d.add_argument("--max-traces", type=_positive, help="dream at most N traces now")
    d.add_argument("--batch-size", type=_positive, help="traces per cycle")
    d.add_argument("--embedder", help="embedder name (default: $EVOLOG_EMBEDDER or wordllama)")
    d.add_argument("--compact", action="store_true", help="also shorten long summaries")
    d.add_argument(
        "--fallback",
        choices=["none", "heuristic"],
        default="none",
        help="when the dreamer fails on a trace: stop, appending nothing of the cycle (none, "
        "the default), or dream it with the heuristic dreamer and say so (heuristic)",
    )
    d.set_defaults(func=_wrap(_cmd_dream))
    d_sub = d.add_subparsers(dest="dream_command", metavar="ACTION")
    u = d_sub.add_parser("undo", help="retract a dream cycle", **doc("dream undo"))
    u.add_argument("cycle", help="the cycle's id (see `evolog dream cycles`)")
    u.add_argument("--cascade", action="store_true", help="also undo cycles built on it")
    u.add_argument("--reason", help="why (free text, kept in the retraction)")
    u.set_defaults(func=_wrap(_cmd_dream_undo))
    d_sub.add_parser("cycles", help="list dream cycles", **doc("dream cycles")).set_defaults(
        func=_wrap(_cmd_dream_cycles)
    )

    r = sub.add_parser(
        "route", help="route a task: zero-shot, memory traversal or jump", **doc("route")
    )
    r.add_argument("task", help="the task, as text")
    r.add_argument("--current", help="the node being traversed (checks for drift)")
    r.add_argument("--top-k", type=_positive, default=5, help="candidate nodes to score")
    r.add_argument("--embedder", help="embedder name (default: $EVOLOG_EMBEDDER or wordllama)")
    r.add_argument(
        "--include-dead",
        action="store_true",
        help="also route to strategies the survival ledger has buried",
    )
    r.add_argument("--judge", metavar="MODEL", help="a Claude model decides which memory applies")
    r.set_defaults(func=_wrap(_cmd_route))

    g = sub.add_parser(
        "graph", help="strategy nodes with their steps and constraints", **doc("graph")
    )
    g.add_argument("--node", help="one node (and the node it was merged into)")
    g.add_argument("--all", action="store_true", help="include merged and pruned nodes")
    g.set_defaults(func=_wrap(_cmd_graph))


def _positive(text: str) -> int:
    import argparse

    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer; got {text!r}")
    return value


# -- demo -------------------------------------------------------------------------------
DEMO_TASKS = (
    "resolve an import error",
    "a test is flaky, resolve it",
    "bake a chocolate cake",
)


def demo_dream(path: str, out: TextIO | None = None) -> None:
    """Dream a store's traces and route a few tasks, printing a short account (the demo)."""
    from evolog.advice import Router
    from evolog.dream import dream
    from evolog.eventlog import EventLog

    out = out or sys.stdout
    with EventLog(path) as log:
        report = dream(log)
        router = Router.from_log(log)
    merged = sum(c.nodes_merged for c in report.cycles)
    out.write(
        f"\ndreamed {report.traces_dreamed} traces in {len(report.cycles)} cycle(s):"
        f" {len(router.graph)} nodes built, {merged} merged, "
        f"{sum(1 for _ in router.graph.nodes())} strategies live\n"
    )
    for task in DEMO_TASKS:
        decision = router.route(task)
        line = f"  route {task!r}: {decision.path.value}"
        if decision.entry is not None:
            plan = router.plan(decision.entry.node)
            steps = " → ".join(s.action for s in plan.steps)
            line += (
                f" -> {plan.goal!r} (similarity {decision.entry.similarity:.2f}): {steps};"
                f" {len(plan.constraints)} constraint(s)"
            )
        out.write(line + "\n")
