"""Group commit across requests: one append per group, atomic per request."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from _server_util import new_store
from evolog.eventlog import EventLog, InvalidEventError, Note, Step

from evolog.server._commit import GroupCommitter


async def _submit_all(log: EventLog, batches: list[list[object]]) -> tuple[list[object], int]:
    committer = GroupCommitter(log)
    committer.start()
    try:
        results = await asyncio.gather(
            *(committer.submit(b) for b in batches),
            return_exceptions=True,
        )
    finally:
        await committer.stop()
    return list(results), committer.groups


@pytest.mark.parametrize("durability", ["always", "batch"])
def test_requests_share_groups_and_a_bad_one_fails_alone(tmp_path: Path, durability: str) -> None:
    store = new_store(tmp_path / "s")
    batches: list[list[object]] = [
        [Note(id=f"r{r}-{i}", text="x") for i in range(3)] for r in range(20)
    ]
    batches[7] = [Note(id="bad-ok", text="x"), Step(action_id="a", index=-1)]  # refused
    with EventLog(store, durability=durability) as log:
        results, groups = asyncio.run(_submit_all(log, batches))
        stored = {e.id: e.seq for e in log.replay()}
    assert isinstance(results[7], InvalidEventError) and "index" in str(results[7])
    assert "bad-ok" not in stored  # the bad request's good event went in with it, or not at all
    good = [r for i, r in enumerate(results) if i != 7]
    assert all(isinstance(r, list) and len(r) == 3 for r in good)
    for receipts in good:
        for receipt in receipts:
            assert stored[receipt.id] == receipt.seq and not receipt.duplicate
    assert sorted(stored.values()) == list(range(1, 58))
    # All twenty queued before the committer woke: one group, one append (the refused one
    # made it append request by request, still one group).
    assert groups == 1


def test_duplicates_across_requests_of_one_group(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s")
    same = [[Note(id="same", text="x")] for _ in range(5)]
    with EventLog(store) as log:
        results, _ = asyncio.run(_submit_all(log, same))
        assert [e.id for e in log.replay()] == ["same"]
    flags = [r[0].duplicate for r in results]
    assert flags.count(False) == 1 and {r[0].seq for r in results} == {1}
