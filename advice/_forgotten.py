"""Which action ids had an attempt that the advice state no longer holds.

The state keeps the last :data:`evolog.advice._state.RECENT_CLOSED` closed attempts; an
older one is looked up in the log when a late outcome needs its key or gene. This set says
when that lookup can find something, so that outcomes naming an action id that never had an
attempt (a measured settlement, say) never cost a scan of the log.

Ids are kept as CRC-32 values: a collision only costs one needless lookup, never a wrong
answer. The saved part is a sorted array of them, searched in place (a cold process reads
no more of it than a binary search touches); ids added since sit in a small set.
"""

from __future__ import annotations

import bisect
import zlib
from typing import Any


def _crc(action_id: str) -> int:
    return zlib.crc32(action_id.encode("utf-8", "surrogatepass"))


class ForgottenIds:
    """A set of action ids (as CRC-32 values): a saved sorted base plus recent additions."""

    def __init__(self, saved: bytes = b"") -> None:
        if len(saved) % 4:
            raise ValueError("forgotten action ids: expected whole 32-bit values")
        view: Any = memoryview(saved)
        self._base = view.cast("I")
        self._added: set[int] = set()
        # Hashed only when asked: adding is on every fold's path, asking almost never is.
        self._pending: list[str] = []

    def add(self, action_id: str) -> None:
        self._pending.append(action_id)

    def _hash_pending(self) -> None:
        self._added.update(map(_crc, self._pending))
        self._pending.clear()

    def __contains__(self, action_id: str) -> bool:
        self._hash_pending()
        crc = _crc(action_id)
        if crc in self._added:
            return True
        i = bisect.bisect_left(self._base, crc)
        return i < len(self._base) and self._base[i] == crc

    def to_bytes(self) -> bytes:
        """Base and additions merged, sorted, as saved."""
        self._hash_pending()
        if not self._added:
            return self._base.tobytes()  # type: ignore[no-any-return]
        import numpy as np  # saving merges the statistics with numpy too

        added = np.fromiter(self._added, np.uint32, len(self._added))
        merged = np.union1d(np.frombuffer(self._base, np.uint32), added)
        return merged.astype(np.uint32).tobytes()
