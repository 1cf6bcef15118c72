"""Helpers of the Iceberg tests: stores with interleaved histories, rows to compare."""

from __future__ import annotations

import random
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
from _eventlog_util import REPO
from evolog.eventlog import Attempt, Event, EventLog, Note, Outcome, Signal, Step
from evolog.eventlog.sealed._arrow import SCHEMA, events_to_table
from evolog.eventlog.sealed._manifest import FileCommitter

STORES = ("alpha", "beta", "gamma")


def _events(rng: random.Random, store: str, n: int) -> list[Event]:
    out: list[Event] = []
    for i in range(n):
        action = f"{store}-act-{rng.randrange(1000)}"
        pick = rng.randrange(5)
        if pick == 0:
            out.append(Signal(signals=[f"err_{i % 7}"], agent=store, observed={"i": i}))
        elif pick == 1:
            out.append(Attempt(action_id=action, gene=f"gene_{i % 3}", agent=store, key="k1"))
        elif pick == 2:
            out.append(Step(action_id=action, index=i, action="run", ok=i % 2 == 0))
        elif pick == 3:
            score = rng.random() if i % 4 else None
            out.append(Outcome(action_id=action, status="success", score=score, agent=store))
        else:
            out.append(Note(text=f"note {i} of {store}", agent=store))
    return out


def interleaved_stores(base: Path, rounds: int = 6, seed: int = 3) -> dict[str, Path]:
    """Three stores written turn by turn (batches of uneven size, seals at different
    moments, one store left with an unsealed tail): their histories interleave in time."""
    rng = random.Random(seed)
    paths = {name: base / name for name in STORES}
    logs = {name: EventLog(p, create=True, auto_seal="off") for name, p in paths.items()}
    try:
        for r in range(rounds):
            for name, log in logs.items():
                log.append_many(_events(rng, name, rng.randrange(20, 90)))
                if rng.random() < 0.7 or r == rounds - 1:
                    log.seal()
        logs["gamma"].append_many(_events(rng, "gamma", 15))  # a tail: never published
    finally:
        for log in logs.values():
            log.close()
    return paths


def add_events(path: Path, n: int, seed: int, *, seal: bool = True) -> None:
    with EventLog(path, auto_seal="off") as log:
        log.append_many(_events(random.Random(seed), path.name, n))
        if seal:
            log.seal()


def replay_rows(path: Path, store_id: str, upto: int | None = None) -> list[dict[str, Any]]:
    """The store's sealed events (seq <= ``upto``) as rows of the table, replayed."""
    sealed = FileCommitter(str(path / "manifest.json")).load().sealed_seq
    with EventLog(path) as log:
        events = list(log.replay(sealed if upto is None else min(upto, sealed)))
    return [{"store_id": store_id, **r} for r in events_to_table(events).to_pylist()]


def table_rows(table: pa.Table) -> list[dict[str, Any]]:
    """Rows of a table read back, in the events' columns, ordered by store and seq."""
    names = ["store_id", *SCHEMA.names]
    rows = table.select(names).to_pylist()
    return sorted(rows, key=lambda r: (r["store_id"], r["seq"]))


def sorted_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: (r["store_id"], r["seq"]))


_WITHOUT_PYICEBERG = (
    "import sys; sys.modules['pyiceberg'] = None; sys.argv[0] = 'evolog'; "
    "from evolog.cli._main import main; sys.exit(main())"
)


def blocked(*args: str) -> subprocess.CompletedProcess[bytes]:
    """``evolog ARGS`` in an interpreter where pyiceberg cannot be imported."""
    return subprocess.run(
        [sys.executable, "-c", _WITHOUT_PYICEBERG, *args],
        cwd=REPO,
        capture_output=True,
        timeout=120,
        check=False,
    )
