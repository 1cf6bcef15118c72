"""``--help`` and ``--version``: each command's description and examples, by command path.

Imported only while a parser is being built or the version is asked for, never on the
append or hook fast path. A new command adds its entry to :data:`DOCS` and passes
``**doc("name")`` to ``add_parser``; ``tests/cli/test_cli_help.py`` checks that every command has
one with an example.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

__all__ = ["DOCS", "doc", "version_action", "version_text"]

# command path -> (description, examples). Descriptions are printed as written, so each
# line stays under 80 columns; examples are whole command lines.
DOCS: dict[str, tuple[str, tuple[str, ...]]] = {
    "": (
        "Event-sourced memory for self-improving agents: JSON in and out. An error is\n"
        "one line on stderr; exit 2 for bad input, 1 for anything else (a missing or\n"
        "damaged store). `evolog COMMAND --help` documents each command.",
        (
            "evolog demo",
            "export EVOLOG_STORE=/tmp/mem && evolog init",
            """evolog append '{"kind": "signal", "signals": ["log_error"]}'""",
            'evolog sql "SELECT kind, count(*) FROM events GROUP BY kind"',
        ),
    ),
    "init": (
        "Create an empty store (a directory); an existing store is left as it is.\n"
        'Prints {"store": PATH, "created": true|false}.',
        ("evolog --store /tmp/mem init", "evolog init ./mem"),
    ),
    "append": (
        "Append events: one JSON event as the argument, NDJSON on stdin, or a kind\n"
        "with flags. All input is validated before anything is written. Prints a\n"
        'receipt per event, {"seq", "id", "duplicate"}: an id already in the log\n'
        "writes nothing and gives back the stored seq.",
        (
            """evolog append '{"kind": "signal", "signals": ["log_error"]}'""",
            'evolog append attempt --id fix-1 --gene gene_retry --task "fix the test"',
            "evolog append step --action-id fix-1 --index 0 --action 'add a retry' --ok",
            "evolog append outcome --action-id fix-1 --status success --delta 1.0",
            "evolog replay | EVOLOG_STORE=/tmp/copy evolog append",
        ),
    ),
    "replay": (
        "Print the log's events in seq order as NDJSON, the input `append` reads.",
        (
            "evolog replay > log.ndjson",
            "evolog replay --as-of 2026-03-01T00:00:00Z --kinds attempt,outcome",
        ),
    ),
    "stats": (
        "Events (by kind), segments, the WAL and bytes per sealed event, as JSON.",
        ("evolog stats",),
    ),
    "verify": (
        "Check every checksum, seq continuity, the manifest and each segment in full;\n"
        "print a JSON report, and exit 1 if it finds a problem.",
        ("evolog verify || echo damaged",),
    ),
    "seal": (
        "Seal the write-ahead log into Parquet segments now (also automatic past 32 MiB).",
        ("evolog seal --lock-timeout 5",),
    ),
    "compact": (
        "Merge small adjacent segments; events and seqs stay the same.",
        ("evolog compact --small-rows 50000 --target-rows 500000",),
    ),
    "hook": (
        "Read an agent's hook payload on stdin and append the matching events; at\n"
        "SessionStart and UserPromptSubmit, answer on stdout with the recalled block.\n"
        "Always exits 0: a payload it cannot record goes to <store>/dead-letter.ndjson.\n"
        "Environment: EVOLOG_HOOK_CONTENT=summary|full|none (what a step keeps;\n"
        "default summary), EVOLOG_HOOK_LOCK_TIMEOUT=SECONDS (default 2).",
        (
            "EVOLOG_STORE=~/.evolog evolog hook claude-code < payload.json",
            "evolog hook claude-code --print-settings",
            "evolog hook claude-code --print-settings --http",
        ),
    ),
    "demo": (
        "Record a seeded, simulated agent life into a store, then show it back: the\n"
        "events, edge statistics, a dream and three routes, and a survival run.\n"
        "Running it again adds nothing (every id is derived from the seed).",
        ("evolog demo --dir /tmp/demo --cycles 100 --seed 3",),
    ),
    "sql": (
        "Run one read-only query over one snapshot: the view `events`, a view per\n"
        "kind (signals, attempts, steps, outcomes, ticks, nodes, ...), `traces` and\n"
        "`edges`. Anything that writes or reads other files is refused (exit 2).",
        (
            'evolog sql "SELECT gene, count(*) FROM outcomes GROUP BY gene"',
            'evolog sql --format csv --as-of 500 "SELECT * FROM traces WHERE open"',
            'evolog sql --out steps.parquet "SELECT * FROM steps"',
            "evolog sql --iceberg ./warehouse:evolog.events "
            '"SELECT store_id, kind, count(*) FROM events GROUP BY ALL"',
        ),
    ),
    "edges": (
        "Edge statistics per (signal key, gene): success and failure counts, the\n"
        "smoothed rate and its decayed value; or, with --priors, per-gene priors.\n"
        "--signals selects their key and every key holding all of them (--exact: theirs).",
        (
            "evolog edges --signals log_error,errsig:boom --mode per_event --format table",
            'evolog edges --signal "errsig:ValueError: expected 2, got 3" --signal log_error',
            "evolog edges --priors --gene gene_retry,gene_pin --format json",
        ),
    ),
    "export": (
        "Write events, traces, edges, gene_priors and each non-empty typed view of one\n"
        "snapshot into DIR, one file each; prints the paths written.",
        ("evolog export --format csv --as-of 2026-03-01T00:00:00Z ./export",),
    ),
    "advise": (
        "Which gene to prefer for the signals and which to avoid, with the evidence:\n"
        "evolver's getAdvice shape plus the scored genes. Genes come from --genes, or\n"
        'the whole query as JSON on stdin ({"signals": [...], "genes": [...]}).',
        (
            "evolog advise --signals log_error,errsig:boom --genes genes.json",
            "evolog advise --signals log_error --genes genes.json --policy evolver",
            """echo '{"signals": ["log_error"], "genes": [{"type": "Gene", "id": "g1"}]}' """
            "| evolog advise",
        ),
    ),
    "import": (
        "Import an evolver memory graph (JSONL), losslessly and idempotently: ids,\n"
        "timestamps and snapshots are kept, and importing again adds nothing.",
        ("evolog import evolver memory_graph.jsonl --agent evolver-1",),
    ),
    "follow": (
        "Tail a live evolver memory graph into the store; restarts without duplicates.",
        ("evolog follow evolver memory_graph.jsonl --poll 2",),
    ),
    "isa": (
        "Parse or run dream ISA text: check a program the way a dream cycle would.",
        (
            """printf 'BUILD_PARENT "fix flaky tests" "retry then run" 0.8\\n' """
            "| evolog isa parse -",
        ),
    ),
    "isa parse": (
        "Parse an ISA program; print its instructions and line-numbered diagnostics.",
        ("evolog isa parse program.isa",),
    ),
    "isa run": (
        "Run an ISA program on an empty graph and print the VM's result as JSON;\n"
        "--phase applies a dream phase's rules (its opcodes, only its own nodes).",
        ("evolog isa run --phase trace program.isa",),
    ),
    "dream": (
        "Dream the traces no cycle has consumed yet into strategy nodes, steps and\n"
        "constraints, each cycle one atomic batch of events. The claude dreamer needs\n"
        "ANTHROPIC_API_KEY; a dreamer that fails stops the run (exit 1) unless\n"
        "--fallback heuristic dreams those traces instead.",
        (
            "evolog dream",
            "evolog dream --dreamer claude --model claude-sonnet-4-5 --fallback heuristic",
            "evolog dream cycles",
        ),
    ),
    "dream undo": (
        "Retract a dream cycle (an appended retraction; nothing is deleted).",
        ("evolog dream undo dream-5730e7159594c0ca --cascade --reason 'bad model'",),
    ),
    "dream cycles": (
        "List the dream cycles: what each consumed and built.",
        ("evolog dream cycles",),
    ),
    "route": (
        "Route a task: zero_shot, memory_traversal (an entry node that applies, with\n"
        "its plan) or context_jump (with --current, when the task drifted away).\n"
        "--judge MODEL lets a Claude model decide which candidate applies\n"
        "(ANTHROPIC_API_KEY); if it fails, the offline verdict stands.",
        (
            'evolog route "a test is flaky, resolve it"',
            'evolog route "the signup page shows English in French" --judge claude-sonnet-4-6',
            'evolog route "now fix the build" --current node-5730e7159594c0ca-1 --top-k 3',
        ),
    ),
    "graph": (
        "The memory graph's strategy nodes with their steps and constraints, as JSON.",
        ("evolog graph --node node-5730e7159594c0ca-1", "evolog graph --all"),
    ),
    "ledger": (
        "Replay the log through the survival rules: every entry's energy, state and\n"
        "cause of death, as of now or a point in the log, under another config if\n"
        "asked (a counterfactual: nothing is written). birth, pin, unpin and forget\n"
        "append lifecycle events.",
        (
            "evolog ledger --as-of 500 --graveyard",
            """evolog ledger --json --config '{"upkeep": 0.1}' --cadence dream""",
            "evolog ledger --entry gene_retry",
            "evolog ledger birth imported-7 --probation 3",
        ),
    ),
    "ledger birth": (
        "Birth an entry explicitly (entries are otherwise born at their first mention),\n"
        "e.g. an import on probation. A second birth is refused.",
        ("evolog ledger birth imported-7 --probation 3 --energy 0.5",),
    ),
    "ledger pin": (
        "Pin an alive entry: it pays upkeep but never dies or merges.",
        ("evolog ledger pin gene_retry",),
    ),
    "ledger unpin": ("Unpin an alive entry.", ("evolog ledger unpin gene_retry",)),
    "ledger forget": (
        "Bury an entry now (refused while it is pinned or escrowed).",
        ("evolog ledger forget note-17",),
    ),
    "remember": (
        "Write TEXT to BRANCH as a memory note ('backbone' is permanent). A note whose\n"
        "words match one of the branch's notes (TF cosine >= 0.85) supersedes it.",
        ("evolog remember deploy 'run the blue-green script, then check /health' --tag ops",),
    ),
    "recall": (
        "Rank memory items for QUERY and print the block to inject (nothing when no\n"
        "item applies), within the character budget; appends a recall event unless\n"
        "--no-record.",
        (
            "evolog recall 'deploy the web service' --budget 2000 --format json",
            "evolog recall 'fix the flaky test' --branch backbone --branch ci --no-record",
        ),
    ),
    "feedback": (
        "Record a verdict on a memory item: its ACE score is helpful / (helpful +\n"
        "harmful + neutral), and an outcome with delta +1, -1 or 0 credits it in the\n"
        "survival ledger. With --action-id the verdict is about that attempt and\n"
        "replaces the one its outcome gave the item (success helpful, failed harmful).",
        (
            "evolog feedback 01J0ABC helpful --note 'saved a rollback'",
            "evolog feedback 01J0ABC harmful --action-id cc-s1-3 --note 'misled me here'",
        ),
    ),
    "compress": (
        "Merge every cold branch (access below 0.1 x the mean) into one archive item;\n"
        "sources are archived, never deleted. --undo gives a merge's sources back.",
        ("evolog compress", "evolog compress --undo 01J0ABC"),
    ),
    "serve": (
        "Serve one store to many agents over HTTP: the native /v1 API, evolver's /kg\n"
        "and MCP at /mcp; one writer (group commit), readers on snapshots. Without a\n"
        "token it listens only on loopback. Needs the extra evolog[server].",
        ("evolog serve --host 0.0.0.0 --port 8420 --token-file tokens.txt --durability batch",),
    ),
    "mcp": (
        "An MCP server on stdin/stdout for one client (tools remember, recall,\n"
        "record_outcome, advise, route, sql, search_events). Needs evolog[server].\n"
        "Add it to Claude Code with: claude mcp add evolog -- evolog mcp",
        ("evolog --store ~/.evolog mcp --durability always",),
    ),
    "publish": (
        "Publish the sealed log to a table format that other engines read; the one\n"
        "target is iceberg (see `evolog publish iceberg --help`).",
        ("evolog publish iceberg ./warehouse --store-id laptop-1",),
    ),
    "publish iceberg": (
        "Register the store's sealed Parquet segments (in place, byte-identical) in an\n"
        "Iceberg table, one snapshot per publish; publishing again adds only what is\n"
        "new. With an s3:// warehouse each new segment is first uploaded once, named\n"
        "by its SHA-256 (credentials: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY in the\n"
        "environment). Needs the extra evolog[iceberg].",
        (
            "evolog publish iceberg ./warehouse --store-id laptop-1",
            "evolog publish iceberg sqlite:///cat.db --warehouse ./wh --table team.events --seal",
            "evolog publish iceberg postgresql://evolog@db/evolog --warehouse s3://fleet/wh "
            "--s3-endpoint http://127.0.0.1:9000",
        ),
    ),
    "evolve": (
        "Run a pipeline expression over the memory items and append what it changes\n"
        "as dreamed events. '>>' runs in sequence, '|' in parallel (binds looser, as\n"
        "in Python); the strategies are ace, reasoning_bank and reme. ace retires the\n"
        "items whose harmful share exceeds --harmful-share and, with --curate, those\n"
        "scoring below it (the report's 'retired' lists them); 'ace --curate 0.3\n"
        "--harmful-share 1' is the seed's curate(threshold=0.3) alone. --dedup seed\n"
        "gives reasoning_bank and reme the seed's dedup thresholds for every entry.",
        (
            "evolog evolve 'ace >> reasoning_bank >> reme' --dry-run",
            "evolog evolve ace --curate 0.3 --harmful-share 1",
            "evolog evolve 'ace >> reme' --curate 0.25 --harmful-share 0.6 --dry-run",
            "evolog evolve 'reasoning_bank >> reme' --dedup seed --dry-run",
            "evolog evolve undo RUN",
        ),
    ),
    "tick": (
        "Append a survival-ledger clock tick: upkeep for every alive entry. Nothing\n"
        "ticks on its own; tick as time passes (cron, a session's end). One event of\n"
        "more ticks than a newborn survives needs --force.",
        ("evolog tick --reason nightly", "evolog tick --ticks 3 --reason 'weekend'"),
    ),
    "survive": (
        "The survival benchmark: arms x seeds over a real environment; or, with\n"
        "--demo, one run in which a poisoned memory dies.",
        (
            "evolog survive --demo --dir /tmp/survival",
            "evolog survive --env testsuite --arms survival,keep_everything --seeds 3",
        ),
    ),
}


def doc(command: str) -> dict[str, Any]:
    """``add_parser`` keywords for ``command`` (a path such as ``"dream undo"``)."""
    return parser_doc(*DOCS[command])


def parser_doc(description: str, examples: tuple[str, ...]) -> dict[str, Any]:
    """``add_parser`` keywords for a command's description and examples."""
    label = "examples" if len(examples) > 1 else "example"
    return {
        "description": description,
        "epilog": label + ":\n" + "\n".join("  " + line for line in examples),
        "formatter_class": help_formatter(),
    }


_FORMATTER: list[type[argparse.HelpFormatter]] = []


def help_formatter() -> type[argparse.HelpFormatter]:
    """Description and examples printed as written (argparse's default formatter re-flows
    them into one paragraph), and each option's default shown unless its help names one."""
    if _FORMATTER:
        return _FORMATTER[0]
    import argparse  # a parser is being built: argparse is loaded already

    class Formatter(argparse.RawDescriptionHelpFormatter):
        def _get_help_string(self, action: argparse.Action) -> str:
            text = action.help or ""
            default = action.default
            # `is`, not `in`, for None and False: a default of 0 is worth showing (0 == False).
            empty = default is None or default is False or default in ("", [], argparse.SUPPRESS)
            if action.option_strings and "default" not in text and not empty:
                text += " (default: %(default)s)"
            return text

    _FORMATTER.append(Formatter)
    return Formatter


def version_text() -> str:
    """``evolog X.Y.Z``: the installed distribution's version (no package is imported)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"evolog {version('evolog')}"
    except PackageNotFoundError:
        return "evolog (version unknown: the distribution is not installed)"


def version_action() -> type[argparse.Action]:
    """``--version``, reading the metadata only when asked (``action="version"`` would read
    it each time a parser is built)."""
    import argparse

    class Version(argparse.Action):
        def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
            super().__init__(
                option_strings,
                dest=argparse.SUPPRESS,
                default=argparse.SUPPRESS,
                nargs=0,
                help="print the installed version and exit",
            )

        def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
            print(version_text())
            parser.exit()

    return Version
