"""The ledger checkpoint's file format: the rules state, and the settled keys kept apart.

A log of 1e6 decisions has 1e6 settled action keys; loading them on every ``dead_entries``
call would cost more than the call. The checkpoint holds their sorted 64-bit hashes
instead (8 bytes each, read without decoding); the exact keys live in a side file that is
read only when a new event's key matches a hash (a duplicate or late outcome), so every
answer stays exact.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator

import numpy as np
import numpy.typing as npt

from ._config import LedgerConfig
from ._cpfile import FORMAT, Checkpoint, Mark
from ._follow import LedgerFollower
from .rules._rules import LedgerRules
from .rules._state import COLUMNS, Counters, State, Ticket


def key_hash(key: str) -> int:
    """A stable 63-bit hash of an action key."""
    digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


def hashes_of(keys: Iterable[str]) -> npt.NDArray[np.int64]:
    return np.sort(np.fromiter((key_hash(k) for k in keys), np.int64))


class KeySet:
    """Settled keys: those added since the checkpoint, plus the checkpoint's (by hash)."""

    def __init__(self, hashes: npt.NDArray[np.int64], load: Callable[[], set[str]]) -> None:
        self.new: set[str] = set()
        self.hashes = hashes
        self._load = load
        self._old: set[str] | None = None

    def old(self) -> set[str]:
        if self._old is None:
            self._old = self._load()
        return self._old

    def __contains__(self, key: object, /) -> bool:
        if key in self.new:
            return True
        if not isinstance(key, str) or not len(self.hashes):
            return False
        h = key_hash(key)
        i = int(np.searchsorted(self.hashes, h))
        return i < len(self.hashes) and int(self.hashes[i]) == h and key in self.old()

    def __iter__(self) -> Iterator[str]:
        yield from self.old()
        yield from (k for k in self.new if k not in self.old())

    def add(self, key: str, /) -> None:
        self.new.add(key)

    def update(self, keys: Iterable[str], /) -> None:
        self.new.update(keys)


def dump(
    follower: LedgerFollower, config: LedgerConfig, marks: tuple[Mark, Mark], keys_file: str
) -> tuple[Checkpoint, list[str]]:
    """The checkpoint and the exact settled keys (for the side file)."""
    st = follower.rules.state
    c = st.counters
    keys = list(st.settled)
    cp = Checkpoint(
        format=FORMAT,
        config=config.fingerprint(),
        applied=follower.seq,
        first=marks[0],
        last=marks[1],
        tick=st.tick,
        period=st.period,
        outcomes=st.outcomes,
        born=st.born,
        ids=st.ids,
        columns={name: st.view(name).tobytes() for name, _, _ in COLUMNS},
        graveyard=st.graveyard,
        pending=[
            (k, t.born_tick, list(t.deciders), list(t.supporters), list(t.held))
            for k, t in st.pending.items()
        ],
        settled_hashes=hashes_of(keys).tobytes(),
        keys_file=keys_file,
        lineage=sorted(st.lineage.items()),
        merged_into=sorted(st.merged_into.items()),
        counters=[c.settled, c.dropped, c.expired, c.ignored_attempts, c.merges],
    )
    return cp, keys


def restore(
    cp: Checkpoint, config: LedgerConfig, load_keys: Callable[[], set[str]]
) -> LedgerFollower | None:
    """The follower a checkpoint describes (None if its columns are malformed)."""
    n = len(cp.ids)
    cols = {}
    for name, dtype, _ in COLUMNS:
        raw = cp.columns.get(name)
        if raw is None or len(raw) != n * np.dtype(dtype).itemsize:
            return None
        cols[name] = np.frombuffer(raw, dtype).copy()
    if len(cp.settled_hashes) % 8:
        return None
    state = State(
        n=n,
        cols=cols,
        ids=list(cp.ids),
        index={x: i for i, x in enumerate(cp.ids)},
        tick=cp.tick,
        period=cp.period,
        outcomes=cp.outcomes,
        born=cp.born,
        graveyard=list(cp.graveyard),
        pending={k: Ticket(b, tuple(d), tuple(s), tuple(h)) for k, b, d, s, h in cp.pending},
        settled=KeySet(np.frombuffer(cp.settled_hashes, np.int64), load_keys),
        lineage={i: list(v) for i, v in cp.lineage},
        merged_into=dict(cp.merged_into),
        counters=Counters(*cp.counters),
    )
    state.reserve(max(n, 64))
    follower = LedgerFollower(LedgerRules(config, state=state))
    follower.seq = cp.applied
    return follower
