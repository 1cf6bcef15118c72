"""``evolog append``: one JSON event, NDJSON on stdin, or flags for the common kinds; and
``evolog replay``, which writes the log as the NDJSON ``append`` reads.

Input is validated completely before anything is written, so a bad line leaves the log
exactly as it was; the commit, Ctrl-C and large inputs are :mod:`evolog.cli._ingest`'s.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from evolog.eventlog import AnyEvent, InvalidEventError, from_builtins, from_json

from ._common import parse_as_of, parse_kinds
from ._ingest import MAX_LINE_BYTES, append_ndjson, commit, read_ndjson

if TYPE_CHECKING:
    import argparse

__all__ = [
    "FLAGS",
    "MAX_LINE_BYTES",
    "add_append_arguments",
    "add_lock_timeout",
    "lock_options",
    "read_ndjson",
    "run_append",
]

# flag -> (field, parser). Lists are comma-separated; a signal may hold commas, so signals
# also come one per repeated --signal.
_LIST = "list"
FLAGS: dict[str, tuple[str, str]] = {
    "id": ("id", "str"),
    "ts": ("ts", "ts"),
    "agent": ("agent", "str"),
    "session": ("session", "str"),
    "source": ("source", "str"),
    "signals": ("signals", _LIST),
    "gene": ("gene", "str"),
    "gene_category": ("gene_category", "str"),
    "task": ("task", "str"),
    "action_id": ("action_id", "str"),
    "hypothesis_id": ("hypothesis_id", "str"),
    "text": ("text", "str"),
    "status": ("status", "str"),
    "score": ("score", "float"),
    "delta": ("delta", "float"),
    "note": ("note", "str"),
    "decided_by": ("decided_by", _LIST),
    "supported_by": ("supported_by", _LIST),
    "index": ("index", "int"),
    "reasoning": ("reasoning", "str"),
    "action": ("action", "str"),
    "result": ("result", "str"),
    "tool": ("tool", "str"),
    "error": ("error", "str"),
    "ticks": ("ticks", "int"),
    "tags": ("tags", _LIST),
}


# What each flag sets (``evolog append --help``); the kinds in front are where it belongs.
_FLAG_HELP: dict[str, str] = {
    "id": "the event's id, its idempotency key (default: a new time-ordered id)",
    "ts": "event time: ISO-8601, or integer microseconds since the epoch (default: now)",
    "agent": "the agent that recorded it",
    "session": "the agent's session",
    "source": "real, simulated or dreamed (default: real)",
    "signals": "comma-separated signals (--signal for one that holds commas)",
    "gene": "hypothesis, attempt: the gene used; outcome: the gene scored",
    "gene_category": "the gene's category",
    "task": "attempt: what it is for",
    "action_id": "step, outcome: the attempt it belongs to (attempt: its own; default: its id)",
    "hypothesis_id": "hypothesis: its own id; attempt, outcome: the hypothesis tested",
    "text": "hypothesis, note, feedback: the text",
    "status": "outcome: success, failed, partial, interrupted, abandoned, measured or "
    "unknown (may be left out when --delta is given)",
    "score": "outcome: evolver's grade (kept; evolog decides nothing by it)",
    "delta": "outcome: the measured change of a resource; it credits the survival ledger",
    "note": "outcome: free text",
    "decided_by": "attempt, outcome: comma-separated entries that decided the action",
    "supported_by": "attempt, outcome: comma-separated entries that informed it",
    "index": "step: its position in the attempt, >= 0",
    "reasoning": "step: why it was taken",
    "action": "step: what was done",
    "result": "step: what came of it",
    "tool": "step: the tool used",
    "error": "step: the error it met",
    "ticks": "tick: how many (default 1)",
    "tags": "note: comma-separated tags",
}


def add_append_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "event",
        nargs="?",
        help="a JSON event, or a kind used with flags (signal, hypothesis, attempt, step, "
        "outcome, tick, note, feedback, ...); with neither, NDJSON is read from stdin",
    )
    for flag in FLAGS:
        p.add_argument("--" + flag.replace("_", "-"), dest=flag, help=_FLAG_HELP[flag])
    p.add_argument(
        "--signal",
        dest="signal",
        action="append",
        help="one signal, taken whole (commas included); repeat for more",
    )
    ok = p.add_mutually_exclusive_group()
    ok.add_argument("--ok", dest="ok", action="store_const", const=True, help="step: it worked")
    ok.add_argument(
        "--failed", dest="ok", action="store_const", const=False, help="step: it failed"
    )
    p.add_argument(
        "--durability",
        choices=["always", "batch", "none"],
        default="always",
        help="always: durable before the receipt; batch: group commit; none: no fsync "
        "(default: always)",
    )
    add_lock_timeout(p)


def add_lock_timeout(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--lock-timeout",
        type=float,
        metavar="SECONDS",
        help="give up (exit 1, nothing written) if another process holds the store's lock "
        "this long (default: wait, naming the holder on stderr)",
    )


def lock_options(args: Any) -> dict[str, Any]:
    """EventLog options for an interactive command: name the lock's holder while waiting."""
    timeout = getattr(args, "lock_timeout", None)
    if timeout is not None and not timeout >= 0:
        raise InvalidEventError(f"--lock-timeout: expected seconds >= 0; got {timeout}")
    return {"lock_timeout": timeout, "on_lock_wait": _say_waiting}


def _say_waiting(line: str) -> None:
    print(f"evolog: {line}; waiting for it (Ctrl-C to stop)", file=sys.stderr, flush=True)


def run_append(args: Any, store: str) -> int:
    lock = lock_options(args)
    if args.event is None:
        _reject_flags(args, "NDJSON input")
        return append_ndjson(sys.stdin.buffer, store, args.durability, lock)
    return commit(store, args.durability, [_event_from(args)], single=True, lock=lock)


def _event_from(args: Any) -> AnyEvent:
    text = args.event.strip()
    if text.startswith("{"):
        _reject_flags(args, "a JSON event")
        return from_json(text.encode("utf-8", "surrogateescape"), "argument")
    return from_builtins(_flags_to_dict(text, args), "flags")


def _given_flags(args: Any) -> dict[str, Any]:
    given = {k: getattr(args, k, None) for k in FLAGS if getattr(args, k, None) is not None}
    if getattr(args, "ok", None) is not None:
        given["ok"] = args.ok
    if getattr(args, "signal", None):
        given["signal"] = args.signal
    return given


def _reject_flags(args: Any, what: str) -> None:
    given = _given_flags(args)
    if given:
        flag = "--" + next(iter(given)).replace("_", "-")
        raise InvalidEventError(f"{flag}: flags describe an event by kind; not usable with {what}")


def _flags_to_dict(kind: str, args: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"kind": kind}
    for name, value in _given_flags(args).items():
        if name == "signal":
            data["signals"] = [*data.get("signals", []), *value]
        elif name == "ok":
            data["ok"] = value
        else:
            field, parser = FLAGS[name]
            data[field] = _parse(name, parser, value)
    return data


def _parse(name: str, parser: str, value: Any) -> Any:
    flag = "--" + name.replace("_", "-")
    try:
        if parser == _LIST:
            return [s for s in value.split(",") if s]
        if parser == "int":
            return int(value)
        if parser == "ts" and value.strip().lstrip("-").isdigit():
            return int(value)  # microseconds; anything else is ISO-8601 text
        if parser == "float":
            return float(value)
    except ValueError:
        raise InvalidEventError(f"{flag}: expected a number; got {value!r}", field=name) from None
    return value


def run_replay(args: argparse.Namespace, store: str) -> int:
    """``evolog replay``: the log as NDJSON, exactly what ``evolog append`` accepts."""
    from evolog.eventlog import EventLog, to_json

    as_of, as_of_ts = parse_as_of(args.as_of)
    kinds = parse_kinds(args.kinds)
    out = sys.stdout.buffer
    with EventLog(store) as log:
        buf = bytearray()
        for event in log.replay(as_of, as_of_ts=as_of_ts, kinds=kinds):
            buf += to_json(event)
            buf += b"\n"
            if len(buf) > 1 << 16:
                out.write(buf)
                buf.clear()
        out.write(buf)
    out.flush()
    return 0
