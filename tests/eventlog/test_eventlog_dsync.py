"""Under ``always`` the WAL is written O_DSYNC (each write durable when it returns)."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest
from evolog.eventlog import EventLog, Note


def _dsync(log: EventLog) -> bool:
    return bool(fcntl.fcntl(log._writer._fd, fcntl.F_GETFL) & os.O_DSYNC)


@pytest.mark.parametrize(
    ("durability", "want"), [("always", True), ("batch", False), ("none", False)]
)
def test_the_wal_is_opened_dsync_only_under_always(
    tmp_path: Path, durability: str, want: bool
) -> None:
    with EventLog(tmp_path / "s", create=True, durability=durability, auto_seal="off") as log:  # type: ignore[arg-type]
        log.append(Note(text="a"))
        log.flush()
        assert _dsync(log) is want
        log.seal()  # a new active WAL file: opened the same way
        log.append(Note(text="b"))
        log.flush()
        assert _dsync(log) is want
        assert [e.text for e in log.replay()] == ["a", "b"]  # type: ignore[attr-defined]
    with EventLog(tmp_path / "s", durability=durability) as again:  # type: ignore[arg-type]
        again.append(Note(text="c"))
        assert _dsync(again) is want
