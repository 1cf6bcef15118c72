"""Sealed data and the manifest under attack: bit flips, swapped files, corrupted keys.

The manifest is the list of what is sealed: a damaged one must stop seal, compaction and
garbage collection instead of letting them delete "unlisted" segments. A segment's bytes are
pinned by a content hash in the manifest, its pages by Parquet page checksums, and its seq
range by the manifest; ``verify`` and the readers check them.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import time
from pathlib import Path

import msgspec
import pytest
from _eventlog_util import exact, hash_tree
from evolog.eventlog import (
    Attempt,
    CorruptLogError,
    Event,
    EventLog,
    InvalidEventError,
    Note,
    Outcome,
)
from evolog.eventlog.sealed._manifest import FileCommitter
from evolog.eventlog.wal import _frames as fr
from evolog.eventlog.wal import _wal

HOUR = 3600.0


def _events(n: int, start: int = 0) -> list[Event]:
    out: list[Event] = []
    for i in range(start, start + n):
        if i % 3 == 0:
            out.append(Attempt(id=f"a{i}", ts=1_000_000 + i, action_id=f"act-{i}", gene="g1"))
        elif i % 3 == 1:
            out.append(
                Outcome(id=f"o{i}", ts=1_000_000 + i, action_id=f"act-{i}", status="success")
            )
        else:
            out.append(Note(id=f"n{i}", ts=1_000_000 + i, text=f"note {i}"))
    return out


def _store(root: Path, segments: int = 2, per: int = 100, tail: int = 0) -> Path:
    """A store with ``segments`` sealed segments of ``per`` events and a WAL tail."""
    store = root / "store"
    with EventLog(store, create=True, auto_seal="off", durability="none") as log:
        for s in range(segments):
            log.append_many(_events(per, s * per))
            log.seal()
        if tail:
            log.append_many(_events(tail, segments * per))
    return store


def _age(store: Path, seconds: float = HOUR) -> None:
    """Make every segment file look older than the garbage grace period."""
    past = time.time() - seconds
    for p in (store / "segments").iterdir():
        os.utime(p, (past, past))


def _segment_files(store: Path) -> list[Path]:
    manifest = json.loads((store / "manifest.json").read_text())
    return [store / "segments" / s["file"] for s in manifest["segments"]]


def _replay(store: Path) -> list[bytes]:
    with EventLog(store, auto_seal="off") as log:
        return [exact(e) for e in log.replay()]


# -- the manifest ----------------------------------------------------------------------


@pytest.mark.parametrize("operation", ["seal", "compact"])
def test_a_corrupted_manifest_key_stops_seal_and_compact_and_deletes_nothing(
    tmp_path: Path, operation: str
) -> None:
    store = _store(tmp_path, segments=3, tail=10)
    _age(store)
    manifest = store / "manifest.json"
    manifest.write_bytes(manifest.read_bytes().replace(b'"segments"', b'"segmentz"'))
    before = hash_tree(store)
    with EventLog(store, auto_seal="off") as log:
        with pytest.raises(CorruptLogError, match="manifest") as info:
            if operation == "seal":
                log.seal()
            else:
                log.compact(small_rows=10**9, target_rows=10**9)
        assert "\n" not in str(info.value)
        assert not log.verify().ok
    after = hash_tree(store)
    after.pop("./seal.lock", None)
    before.pop("./seal.lock", None)
    assert after == before


def test_single_bit_flips_in_the_manifest_are_all_refused(tmp_path: Path) -> None:
    store = _store(tmp_path, segments=2)
    manifest = store / "manifest.json"
    good = manifest.read_bytes()
    committer = FileCommitter(str(manifest))
    refused = 0
    for bit in random.Random(3).sample(range(len(good) * 8), 800):
        data = bytearray(good)
        data[bit // 8] ^= 1 << (bit % 8)
        manifest.write_bytes(bytes(data))
        with pytest.raises(CorruptLogError):
            committer.load()
        refused += 1
    manifest.write_bytes(good)
    assert refused == 800
    assert committer.load().sealed_seq == 200


def test_garbage_collection_deletes_only_files_the_manifest_retired(tmp_path: Path) -> None:
    store = _store(tmp_path, segments=3, tail=5)
    stray = store / "segments" / "seg-00000000000000000001-00000000000000000100-cafe.parquet"
    shutil.copy(_segment_files(store)[0], stray)
    _age(store)
    with EventLog(store, auto_seal="off") as log:
        log.seal()
        assert stray.exists(), "a file no manifest retired was deleted"
        log.compact(small_rows=10**9, target_rows=10**9)
        retired = {g["file"] for g in json.loads((store / "manifest.json").read_text())["garbage"]}
        assert len(retired) == 4
        from evolog.eventlog.sealed._manifest import FileCommitter as FC
        from evolog.eventlog.sealed._seal import collect_garbage

        deleted = collect_garbage(log.paths, FC(log.paths.manifest), grace=0.0)
        assert deleted == 4
        assert stray.exists()
        assert not any((store / "segments" / f).exists() for f in retired)
        assert log.verify().ok
        assert len(list(log.replay())) == 305


def test_a_manifest_from_the_previous_version_opens_and_is_upgraded_at_the_next_seal(
    tmp_path: Path,
) -> None:
    store = _store(tmp_path, segments=2, tail=5)
    want = _replay(store)
    manifest = store / "manifest.json"
    doc = json.loads(manifest.read_text())
    legacy = {
        "format": 1,
        "version": doc["version"],
        "sealed_seq": doc["sealed_seq"],
        "segments": [
            {
                k: s[k]
                for k in ("file", "first_seq", "last_seq", "rows", "min_ts", "max_ts", "bytes")
            }
            for s in doc["segments"]
        ],
        "garbage": doc["garbage"],
    }
    manifest.write_bytes(msgspec.json.encode(legacy))
    assert _replay(store) == want
    with EventLog(store, auto_seal="off") as log:
        report = log.verify()
        assert report.ok, report.problems
        assert any("no content hashes" in n for n in report.notes)
        log.seal()
        upgraded = json.loads(manifest.read_text())
        assert upgraded["format"] == 2 and upgraded["checksum"]
        assert all(s["hash"] for s in upgraded["segments"])
        assert log.verify().ok
    assert _replay(store) == want


def _as_legacy(manifest: Path) -> None:
    """Rewrite a manifest as the previous version wrote it: format 1, no hashes/checksum."""
    doc = json.loads(manifest.read_text())
    for seg in doc["segments"]:
        del seg["hash"]
    del doc["checksum"]
    doc["format"] = 1
    manifest.write_bytes(msgspec.json.encode(doc))


def test_a_damaged_segment_of_a_legacy_store_is_not_blessed_with_a_hash(tmp_path: Path) -> None:
    store = _store(tmp_path, segments=2, tail=5)
    _as_legacy(store / "manifest.json")
    _, second = _segment_files(store)
    _flip(second, 8 * second.stat().st_size - 1)  # the closing magic: no longer Parquet
    before = hash_tree(store)
    with EventLog(store, auto_seal="off") as log:
        for operation in (log.seal, log.compact):
            with pytest.raises(CorruptLogError, match=second.name):
                operation()
    after = hash_tree(store)
    for tree in (before, after):
        tree.pop("./seal.lock", None)
    assert after == before


def test_a_legacy_manifest_with_an_unknown_key_is_refused(tmp_path: Path) -> None:
    store = _store(tmp_path, segments=1)
    manifest = store / "manifest.json"
    doc = json.loads(manifest.read_text())
    legacy = {"format": 1, "version": 1, "sealed_seq": 100, "segmentz": [], "garbage": []}
    manifest.write_bytes(msgspec.json.encode(legacy))
    with pytest.raises(CorruptLogError, match="segments"):
        FileCommitter(str(manifest)).load()
    assert doc["segments"]


# -- segments --------------------------------------------------------------------------


def _flip(path: Path, bit: int) -> None:
    data = bytearray(path.read_bytes())
    data[bit // 8] ^= 1 << (bit % 8)
    path.write_bytes(bytes(data))


def _replay_outcome(log: EventLog, want: list[bytes]) -> str:
    try:
        got = [exact(e) for e in log.replay()]
    except CorruptLogError as exc:
        assert "\n" not in str(exc)
        return "refused"
    return "same" if got == want else "changed"


def test_single_bit_flips_in_a_sealed_segment_are_all_caught(tmp_path: Path) -> None:
    """Seeded flips anywhere in a real segment: verify catches every one, and a reader
    either refuses it (content hash, page checksums, seq range) or returns what was sealed,
    unchanged. Counts are printed for the record (``pytest -s``)."""
    store = _store(tmp_path, segments=1, per=600)
    (segment,) = _segment_files(store)
    want = _replay(store)
    good = segment.read_bytes()
    rng = random.Random(13)
    counts = {"refused": 0, "same": 0, "changed": 0, "verify_missed": 0}
    with EventLog(store, auto_seal="off") as log:
        for bit in rng.sample(range(len(good) * 8), 300):
            _flip(segment, bit)
            outcome = _replay_outcome(log, want)
            counts[outcome] += 1
            if log.verify().ok:
                counts["verify_missed"] += 1
            segment.write_bytes(good)
    print(f"\n{len(good)} byte segment, 300 single-bit flips: {counts}")
    assert counts["verify_missed"] == 0
    assert counts["changed"] == 0


def test_a_segment_copied_over_the_next_one_is_refused_by_readers(tmp_path: Path) -> None:
    store = _store(tmp_path, segments=2, tail=3)
    first, second = _segment_files(store)
    shutil.copy(first, second)
    with EventLog(store, auto_seal="off") as log:
        for read in (
            lambda: list(log.replay()),
            lambda: list(log.replay_arrow()),
            lambda: list(log.replay_arrow(columns=["seq", "id"])),
            log.stats,
        ):
            with pytest.raises(CorruptLogError, match=second.name):
                read()
        report = log.verify()
    assert not report.ok
    assert any(second.name in p for p in report.problems)


def test_the_projections_refuse_a_swapped_segment(tmp_path: Path) -> None:
    from evolog import Memory

    store = _store(tmp_path, segments=2)
    first, second = _segment_files(store)
    shutil.copy(first, second)
    with Memory(store) as mem, pytest.raises(CorruptLogError, match=second.name):
        mem.sql("SELECT count(*), count(DISTINCT seq) FROM events")


@pytest.mark.parametrize("damage", ["missing", "truncated"])
def test_a_missing_or_truncated_segment_is_one_line_from_every_reader(
    tmp_path: Path, damage: str
) -> None:
    from evolog import Memory

    store = _store(tmp_path, segments=2)
    _, second = _segment_files(store)
    if damage == "missing":
        second.unlink()
    else:
        second.write_bytes(second.read_bytes()[:-100])
    with EventLog(store, auto_seal="off") as log:
        for read in (lambda: list(log.replay()), lambda: list(log.replay_arrow()), log.stats):
            with pytest.raises(CorruptLogError, match=second.name) as info:
                read()
            assert "\n" not in str(info.value)
    with Memory(store) as mem:
        for query in (lambda: mem.ledger(), lambda: mem.sql("SELECT count(*) FROM events")):
            with pytest.raises(CorruptLogError, match=second.name) as info:
                query()
            assert "\n" not in str(info.value)


def test_verify_checks_the_time_range_the_manifest_records(tmp_path: Path) -> None:
    store = _store(tmp_path, segments=2)
    committer = FileCommitter(str(store / "manifest.json"))
    manifest = committer.load()
    bad = msgspec.structs.replace(manifest.segments[1], min_ts=manifest.segments[1].min_ts + 50)
    committer.commit(msgspec.structs.replace(manifest, segments=[manifest.segments[0], bad]))
    with EventLog(store, auto_seal="off") as log:
        report = log.verify()
    assert not report.ok
    assert any("ts" in p and bad.file in p for p in report.problems)


def test_compaction_refuses_to_merge_a_damaged_segment(tmp_path: Path) -> None:
    store = _store(tmp_path, segments=3)
    _, second, _ = _segment_files(store)
    _flip(second, 8 * (second.stat().st_size // 2))
    before = hash_tree(store)
    with EventLog(store, auto_seal="off") as log, pytest.raises(CorruptLogError, match=second.name):
        log.compact(small_rows=10**9, target_rows=10**9)
    after = hash_tree(store)
    after.pop("./seal.lock", None)
    before.pop("./seal.lock", None)
    assert after == before


def test_a_wal_frame_with_non_string_map_keys_is_a_clear_error_at_seal(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with EventLog(store, create=True, auto_seal="off") as log:
        log.append(Note(id="a", ts=1, text="x"))
        (_, path), *_ = _wal.list_wal(log.paths.wal)
    body = msgspec.msgpack.encode({"kind": "hypothesis", "id": "b", "ts": 2, "selector": {None: 1}})
    with open(path, "ab") as f:
        f.write(fr.frame_bodies(2, [body]))
    before = hash_tree(store)
    with (
        EventLog(store, auto_seal="off") as log,
        pytest.raises(
            (CorruptLogError, InvalidEventError), match=r"\.wal: seqs \d+\.\.2: "
        ) as info,
    ):
        log.seal()
    assert os.path.basename(path) in str(info.value)
    assert "\n" not in str(info.value)
    # The seal rotated the WAL (an empty new file); the events and segments are untouched.
    after = hash_tree(store)
    wal = os.path.relpath(path, store)
    assert after[wal] == before[wal]
    for tree in (before, after):  # the id index is a cache the writer brought up to date
        for name in [n for n in tree if n.startswith(("wal", "index")) or n == "./seal.lock"]:
            tree.pop(name)
    assert after == before
