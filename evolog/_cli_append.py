"""``evolog append``: one JSON event, NDJSON on stdin, or flags for the common kinds.

Input is validated completely before anything is written; the whole input is then appended
as one atomic batch, so a bad line leaves the log exactly as it was.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from eventlog import AnyEvent, EventLog, InvalidEventError, from_builtins, from_json

if TYPE_CHECKING:
    import argparse

#: Longest NDJSON line read (the event cap applies to the msgpack encoding, 1 MiB).
MAX_LINE_BYTES = 4 << 20

# flag -> (field, parser). Lists are comma-separated; signals may also repeat --signal.
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


def add_append_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "event",
        nargs="?",
        help="a JSON event, or a kind (signal, attempt, step, outcome, ...) used with flags; "
        "with neither, NDJSON is read from stdin",
    )
    for flag in FLAGS:
        p.add_argument("--" + flag.replace("_", "-"), dest=flag)
    p.add_argument("--ok", dest="ok", action="store_const", const=True)
    p.add_argument("--failed", dest="ok", action="store_const", const=False)
    p.add_argument(
        "--durability",
        choices=["always", "batch", "none"],
        default="always",
        help="fsync policy (default: always)",
    )


def run_append(args: Any, store: str) -> int:
    events = _events_from(args)
    if not events:
        raise InvalidEventError("stdin: expected at least one JSON event; got no input")
    # A hook process never seals inline: that would load pyarrow into it.
    with EventLog(store, durability=args.durability, auto_seal="background") as log:
        receipts = log.append_receipts(events, "event ", validated=True)
    out = [{"seq": r.seq, "id": r.id, "duplicate": r.duplicate} for r in receipts]
    import msgspec

    payload = out[0] if args.event is not None else out
    sys.stdout.buffer.write(msgspec.json.encode(payload) + b"\n")
    return 0


def _events_from(args: Any) -> list[AnyEvent]:
    if args.event is None:
        _reject_flags(args, "NDJSON input")
        return read_ndjson(sys.stdin.buffer)
    text = args.event.strip()
    if text.startswith("{"):
        _reject_flags(args, "a JSON event")
        return [from_json(text.encode("utf-8", "surrogateescape"), "argument")]
    return [from_builtins(_flags_to_dict(text, args), "flags")]


def _given_flags(args: Any) -> dict[str, Any]:
    given = {k: getattr(args, k, None) for k in FLAGS if getattr(args, k, None) is not None}
    if getattr(args, "ok", None) is not None:
        given["ok"] = args.ok
    return given


def _reject_flags(args: Any, what: str) -> None:
    given = _given_flags(args)
    if given:
        flag = "--" + next(iter(given)).replace("_", "-")
        raise InvalidEventError(f"{flag}: flags describe an event by kind; not usable with {what}")


def _flags_to_dict(kind: str, args: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"kind": kind}
    for name, value in _given_flags(args).items():
        parser = FLAGS[name][1] if name in FLAGS else "bool"
        data[FLAGS[name][0] if name in FLAGS else name] = _parse(name, parser, value)
    return data


def _parse(name: str, parser: str, value: Any) -> Any:
    flag = "--" + name.replace("_", "-")
    try:
        if parser == _LIST:
            return [s for s in value.split(",") if s]
        if parser == "int":
            return int(value)
        if parser == "float":
            return float(value)
    except ValueError:
        raise InvalidEventError(f"{flag}: expected a number; got {value!r}", field=name) from None
    return value


def read_ndjson(stream: Any) -> list[AnyEvent]:
    """Decode every line first (blank lines skipped); any bad line rejects the input."""
    events = []
    for lineno, raw in enumerate(iter(lambda: stream.readline(MAX_LINE_BYTES + 1), b""), 1):
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            raise InvalidEventError(
                f"expected a line of at most {MAX_LINE_BYTES} bytes; got a longer one",
                where=f"line {lineno}",
            )
        if raw.strip():
            events.append(from_json(raw, f"line {lineno}"))
    return events
