"""The log through the ``evolog`` command: bad input is refused whole, replay|append copies.

Every bad input exits 2 with exactly one stderr line naming what was expected and what was
got, and leaves every file of the store byte for byte as it was.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import msgspec
import pytest
from _eventlog_util import assert_same_events, evolog, hash_tree, with_seqs
from evolog.eventlog import (
    MAX_EVENT_BYTES,
    Attempt,
    Event,
    EventLog,
    Mutation,
    Node,
    Note,
    Outcome,
    Personality,
    Signal,
    to_json,
)
from hypothesis import given, settings
from strategies import event_lists


@pytest.fixture(scope="module")
def filled_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with sealed events and a WAL tail."""
    store = tmp_path_factory.mktemp("cli") / "store"
    with EventLog(store, create=True) as log:
        log.append_many([Note(id=f"n{i}", ts=10 + i, text="sealed") for i in range(5)])
        log.seal()
        log.append(Note(id="tail", ts=20, text="in the WAL"))
    return store


def _big_note() -> bytes:
    return json.dumps({"kind": "note", "text": "x" * MAX_EVENT_BYTES}).encode()


# (name, argv after "append", stdin, words the one error line must contain)
BAD_INPUT: list[tuple[str, list[str], bytes | None, list[str]]] = [
    ("malformed-json-arg", ['{"kind": "note", '], None, ["malformed JSON", "expected"]),
    ("malformed-json-line", [], b'{"kind":"note"}\n{"kind": "note"\n', ["line 2", "malformed"]),
    ("unknown-kind", ['{"kind":"nope"}'], None, ["'kind'", "expected one of", "'nope'"]),
    ("missing-kind", [], b'{"text":"x"}\n', ["line 1", "'kind'", "expected", "got None"]),
    ("not-an-object", [], b"[1, 2]\n", ["line 1", "expected a JSON object", "got list"]),
    ("ill-typed", ['{"kind":"note","text":5}'], None, ["'text'", "Expected `str`", "got `int`"]),
    (
        "ill-typed-nested",
        ['{"kind":"outcome","mutation":{"id":5}}'],
        None,
        ["'mutation.id'", "Expected `str`", "got `int`"],
    ),
    (
        "missing-nested-field",
        [],
        b'{"kind":"outcome","mutation":{"category":"x"}}\n',
        ["'mutation.id'", "expected a value", "got none"],
    ),
    ("unknown-field", ['{"kind":"note","txt":"x"}'], None, ["unknown field 'txt'", "expected"]),
    ("bad-ts", ['{"kind":"note","ts":"yesterday"}'], None, ["'ts'", "expected ISO-8601", "got"]),
    ("negative-ts", ['{"kind":"note","ts":-5}'], None, ["'ts'", "expected", "got -5"]),
    ("int-out-of-range", ['{"kind":"tick","ticks":18446744073709551615}'], None, ["'ticks'"]),
    ("too-large", [], _big_note() + b"\n", [f"at most {MAX_EVENT_BYTES}", "got"]),
    ("invalid-utf8-line", [], b'{"kind":"note"}\n{"kind":"note","text":"a\xff"}\n', ["UTF-8"]),
    ("invalid-utf8-arg", ['{"kind":"note","text":"a\udcff"}'], None, ["UTF-8", "got"]),
    ("empty-stdin", [], b"", ["expected at least one JSON event", "got no input"]),
    ("bad-flag-number", ["step", "--index", "abc"], None, ["--index", "expected a number"]),
]


@pytest.mark.parametrize(
    ("argv", "stdin", "words"), [c[1:] for c in BAD_INPUT], ids=[c[0] for c in BAD_INPUT]
)
def test_bad_input_is_refused_whole(
    filled_store: Path, argv: list[str], stdin: bytes | None, words: list[str]
) -> None:
    before = hash_tree(filled_store)
    result = evolog(filled_store, "append", *argv, stdin=stdin)
    err = result.stderr.decode("utf-8", "replace")
    assert result.returncode == 2, err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("evolog: error: ")
    for word in words:
        assert word in lines[0], f"{word!r} not in {lines[0]!r}"
    assert result.stdout == b""
    assert hash_tree(filled_store) == before, "a refused append changed the store"


def _rich_events() -> list[Event]:
    mutation = Mutation(id="m1", category="repair", trigger_signals=["a"], risk_level="low")
    return [
        Signal(
            id="s1",
            ts=1,
            signals=["err: \u2717 \U0001d518"],
            key="k1",
            observed={"a": [1, 2.5, None]},
        ),
        Attempt(
            id="a1", ts=2, action_id="a1", gene="g", mutation=mutation, selector={"x": {"y": True}}
        ),
        Outcome(
            id="o1",
            ts=3,
            action_id="a1",
            status="success",
            score=0.75,
            mutation=mutation,
            personality=Personality(key="p", rigor=0.5),
            decided_by=["g"],
            delta=-1.25,
            baseline={"cost": 3},
            session="sess 🧪",
            source="simulated",
        ),
        Node(id="node1", ts=4, node="N", goal="ship", confidence=0.9, traces=["t1", "t2"]),
        Note(id="n1", ts=5, text="line\nbreak \u2028 and \x00 nul", tags=["t"]),
    ]


def _replay_into(source: Path, target: Path) -> subprocess.CompletedProcess[bytes]:
    out = evolog(source, "replay")
    assert out.returncode == 0, out.stderr
    return evolog(target, "append", stdin=out.stdout)


def test_replay_piped_into_append_copies_the_log(tmp_path: Path) -> None:
    source = tmp_path / "source"
    events = _rich_events()
    with EventLog(source, create=True) as log:
        log.append_many(events[:3])
        log.seal()
        log.append_many(events[3:])
    empty = tmp_path / "empty"
    EventLog(empty, create=True).close()
    result = _replay_into(source, empty)
    assert result.returncode == 0, result.stderr
    receipts = json.loads(result.stdout)
    assert [(r["seq"], r["id"], r["duplicate"]) for r in receipts] == [
        (i + 1, e.id, False) for i, e in enumerate(events)
    ]
    with EventLog(empty) as log:
        assert_same_events(list(log.replay()), with_seqs(events))

    # Into a store that already had events: same events, seqs after the existing ones.
    busy = tmp_path / "busy"
    with EventLog(busy, create=True) as log:
        log.append_many([Note(id="x1"), Note(id="x2")])
    assert _replay_into(source, busy).returncode == 0
    with EventLog(busy) as log:
        got = list(log.replay())
    assert [e.id for e in got] == ["x1", "x2"] + [e.id for e in events]
    assert_same_events(got[2:], with_seqs(events, first=3))

    # Into the same store (or again into the copy): every id is known, nothing is added.
    for target in (source, empty):
        files = hash_tree(target)
        result = _replay_into(source, target)
        assert result.returncode == 0, result.stderr
        assert all(r["duplicate"] for r in json.loads(result.stdout))
        assert hash_tree(target) == files
    assert evolog(source, "replay").stdout == evolog(empty, "replay").stdout


@given(event_lists(min_size=1, max_size=25))
@settings(max_examples=4)
def test_replay_output_appends_back_identically(events: list[Event]) -> None:
    """Any events: the NDJSON of ``evolog replay`` reads back, through the CLI, to the same."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        source, target = Path(d) / "a", Path(d) / "b"
        with EventLog(source, create=True) as log:
            log.append_many(events)
        EventLog(target, create=True).close()
        out = evolog(source, "replay")
        assert out.stdout == b"".join(to_json(e) + b"\n" for e in with_seqs(events))
        result = evolog(target, "append", stdin=out.stdout)
        assert result.returncode == 0, result.stderr
        with EventLog(target) as log:
            assert_same_events(list(log.replay()), with_seqs(events))


def test_replay_filters(filled_store: Path) -> None:
    out = evolog(filled_store, "replay", "--as-of", "3")
    assert [json.loads(line)["id"] for line in out.stdout.splitlines()] == ["n0", "n1", "n2"]
    out = evolog(
        filled_store, "replay", "--kinds", "note", "--as-of", "1970-01-01T00:00:00.000012Z"
    )
    assert [json.loads(line)["seq"] for line in out.stdout.splitlines()] == [1, 2, 3]
    bad = evolog(filled_store, "replay", "--kinds", "nope")
    assert bad.returncode == 2 and len(bad.stderr.splitlines()) == 1
    assert msgspec.json.decode(evolog(filled_store, "verify").stdout)["ok"] is True
