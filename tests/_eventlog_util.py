"""Helpers shared by the event-log tests: exact comparisons, Arrow row checks, store hashing."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec
import pyarrow as pa
from evolog.eventlog import Event, EventLog, kind_of

JSON_META = b"evolog.json"
REPO = Path(__file__).resolve().parents[1]
CRASHY = Path(__file__).with_name("_crashy.py")


def _plain(value: Any) -> Any:
    if isinstance(value, msgspec.Struct):
        out = {name: _plain(getattr(value, name)) for name in value.__struct_fields__}
        tag = value.__struct_config__.tag
        return {"kind": tag, **out} if tag else out
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def exact(event: Event) -> bytes:
    """A byte-exact form of an event, every field included (NaN, -0.0, dict order count).

    Not the event's own msgpack: ``omit_defaults`` drops a default only when it is the very
    default object, so equal events can encode differently.
    """
    return msgspec.msgpack.encode(_plain(event))


def with_seqs(events: Sequence[Event], first: int = 1) -> list[Event]:
    """The events as the log stores them: seqs first, first+1, ..."""
    return [msgspec.structs.replace(e, seq=first + i) for i, e in enumerate(events)]


def assert_same_events(got: Sequence[Event], want: Sequence[Event]) -> None:
    """Equal, element by element, with a readable message on the first difference."""
    assert len(got) == len(want), f"expected {len(want)} events; got {len(got)}"
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert exact(g) == exact(w), f"event {i}: expected {w!r}; got {g!r}"


def arrow_table(log: EventLog, **kwargs: Any) -> pa.Table:
    """Everything ``replay_arrow`` yields, as one table (ts cast to int µs)."""
    batches = list(log.replay_arrow(**kwargs))
    if not batches:
        return pa.table({})
    table = pa.Table.from_batches(batches)
    if "ts" in table.column_names:
        i = table.column_names.index("ts")
        table = table.set_column(i, "ts", table["ts"].cast(pa.int64()))
    return table


def _drop_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if v is not None}
    return value


def assert_rows_match(table: pa.Table, events: Sequence[Event]) -> None:
    """Every row of ``table`` holds exactly the fields of the matching event; others null."""
    assert table.num_rows == len(events)
    rows = table.to_pylist()
    json_cols = {f.name for f in table.schema if f.metadata and JSON_META in f.metadata}
    for row, event in zip(rows, events, strict=True):
        assert row["kind"] == kind_of(event)
        fields = set(type(event).__struct_fields__)
        for name, got in row.items():
            if name == "kind":
                continue
            if name not in fields:
                assert got is None, f"seq {event.seq}: column {name} of another kind is {got!r}"
                continue
            want = getattr(event, name)
            if name in json_cols:
                got = None if got is None else msgspec.json.decode(got)
            elif isinstance(want, msgspec.Struct):
                want = _drop_none(msgspec.to_builtins(want))
                got = _drop_none(got)
            assert msgspec.msgpack.encode(got) == msgspec.msgpack.encode(want), (
                f"seq {event.seq} column {name}: expected {want!r}; got {got!r}"
            )


def evolog(
    store: Path, *args: str, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run the ``evolog`` command on ``store`` in a fresh interpreter."""
    return subprocess.run(
        [sys.executable, "-m", "evolog", "--store", str(store), *args],
        input=stdin,
        capture_output=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )


def hash_tree(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root`` (relative path -> digest), plus empty dirs."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        if not dirnames and not filenames:
            out[rel + "/"] = "dir"
        for name in filenames:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                out[os.path.join(rel, name)] = hashlib.sha256(f.read()).hexdigest()
    return out


@contextmanager
def fresh_store(**kwargs: Any) -> Iterator[EventLog]:
    """A new store in a temporary directory (for Hypothesis examples)."""
    with tempfile.TemporaryDirectory(prefix="evolog-test-") as d:
        kwargs.setdefault("durability", "none")
        kwargs.setdefault("auto_seal", "off")
        with EventLog(os.path.join(d, "store"), create=True, **kwargs) as log:
            yield log


# -- writer subprocesses (tests/_crashy.py) ---------------------------------------------


def spawn(mode: str, store: Path, ack: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(CRASHY), mode, str(store), str(ack), *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def read_acks(path: Path) -> list[tuple[int, str]]:
    """The acknowledged (seq, id) pairs; a line cut by the kill is not an ack."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text().split("\n")[:-1]:
        seq, eid = line.split(" ", 1)
        out.append((int(seq), eid))
    return out


def read_log(store: Path) -> list[Event]:
    """Every event, after checking verify() and gap-free seqs."""
    with EventLog(store) as log:
        report = log.verify()
        events = list(log.replay())
    assert report.ok, report.problems
    assert not [n for n in report.notes if "torn" not in n and "not in the manifest" not in n]
    assert [e.seq for e in events] == list(range(1, len(events) + 1)), "seqs are not 1..N"
    assert report.events == len(events)
    ids = [e.id for e in events]
    assert len(set(ids)) == len(ids), "an id is present twice"
    return events


def check_acked(events: list[Event], acks: dict[str, list[tuple[int, str]]]) -> None:
    """Acked events are present at their seq; per writer, present ids are a prefix of its
    sequence, at most one append longer than what was acknowledged."""
    by_seq = {e.seq: e.id for e in events}
    for prefix, pairs in acks.items():
        for seq, eid in pairs:
            assert by_seq.get(seq) == eid, f"acked {eid} at seq {seq}; log has {by_seq.get(seq)}"
        mine = [e for e in events if e.id.startswith(prefix + "-")]
        n = len(mine)
        assert [e.id for e in mine] == [f"{prefix}-{i}" for i in range(n)]
        assert len(pairs) <= n <= len(pairs) + 1, f"{prefix}: {n} present, {len(pairs)} acked"
