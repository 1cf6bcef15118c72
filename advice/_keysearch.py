"""Distinct signal keys and the search for keys similar to a query's signals.

A key's signal set is its parts (``key.split('|')``; ``(none)`` is the empty set): keys are
evolver's sorted, de-duplicated, normalised signals joined by ``|``, so the parts are exactly
the normalised set (except for signals that themselves contain ``|``, which evolver's keys
cannot tell apart either). Similarity is Jaccard over those sets.

**Related keys**. evolver's normalisation keeps digits inside tokens, so
``timeout after 646ms`` and ``timeout after 1200ms`` hash to different ``errsig_norm`` keys
and one recurring error spreads over as many keys as it has timings. Matching therefore uses
each key's *matching set* (:func:`match_signals`): the normalised signals with every
``errsig:`` text normalised once more — each digit run, wherever it sits, becomes ``<n>`` —
and hashed as ``errsig_match:<hash>``. It is computed from the signals the key was first seen
with (a key seen without them keeps its own parts). The keys themselves, and the ``evolver``
policy, are untouched.

Below :data:`EXACT_SCAN_MAX` distinct keys every key is compared (a few microseconds each).
Above it, a usearch binary index over signal-set fingerprints (Tanimoto metric, each signal
hashed to :data:`BITS_PER_SIGNAL` of :data:`FINGERPRINT_BITS` bits) proposes candidates and
each is verified by exact Jaccard, so the cost no longer grows with the number of keys. The
index is approximate: a qualifying key can be missed (recall is measured in bench/), never
wrongly included.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Iterable
from typing import Any

from evolog.eventlog import file_crc
from evolog.eventlog.schema import (
    compute_signal_key,
    js_string,
    js_trim,
    normalize_error_signature,
    stable_hash,
)

from ._errors import IndexBackendError

NONE_KEY = "(none)"
FINGERPRINT_BITS = 512
BITS_PER_SIGNAL = 2
EXACT_SCAN_MAX = 768  # the measured crossover (bench/RESULTS.md)
# In a one-shot process the index costs an import of usearch and numpy (~200 ms) before its
# first search; an exact scan costs ~4 us per key, so scanning wins up to ~20k keys.
ONE_SHOT_EXACT_MAX = 20_000
SEARCH_COUNT = 256  # candidates asked of the index before exact verification
EXPANSION_SEARCH = 256


_DIGITS = re.compile(r"[0-9]+", re.ASCII)
_ERRSIG = "errsig:"


def match_signals(signals: object) -> frozenset[str]:
    """The matching set of a signal list (see the module docstring)."""
    out: set[str] = set()
    for raw in signals if isinstance(signals, list | tuple) else ():
        s = js_trim(js_string(raw))
        if not s.startswith(_ERRSIG):
            if s:
                out.add(s)
            continue
        norm = normalize_error_signature(s[len(_ERRSIG) :])
        if norm is not None:
            out.add("errsig_match:" + stable_hash(_DIGITS.sub("<n>", norm)))
    return frozenset(out)


def key_signals(key: str) -> frozenset[str]:
    """The normalised signal set a key stands for."""
    return frozenset() if key == NONE_KEY or not key else frozenset(key.split("|"))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard similarity; two empty sets are identical (evolver's convention)."""
    if not a and not b:
        return 1.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter) if inter else 0.0


def fingerprint(signals: frozenset[str]) -> Any:
    """Packed bit fingerprint (a uint8 numpy array) of a signal set."""
    import numpy as np  # only the index path needs numpy

    bits = np.zeros(FINGERPRINT_BITS, dtype=np.uint8)
    for s in signals:
        h = hashlib.blake2b(s.encode("utf-8", "surrogatepass"), digest_size=8).digest()
        for j in range(BITS_PER_SIGNAL):
            bits[int.from_bytes(h[4 * j : 4 * j + 4], "little") % FINGERPRINT_BITS] = 1
    return np.packbits(bits)


class KeyCatalog:
    """Distinct signal keys by id (ids are dense and stable: the order keys were first seen)."""

    def __init__(
        self, keys: list[str] | None = None, match: Iterable[tuple[int, str]] = ()
    ) -> None:
        self.keys: list[str] = keys if keys is not None else []
        # The matching set of a key whose set differs from its own parts, "|"-joined.
        self.match: dict[int, str] = dict(match)
        self.exact_parts = False  # match on evolver's key parts (the rule before 17.3)
        self._ids: dict[str, int] | None = None
        self._sets: dict[int, frozenset[str]] = {}  # built on first use
        self._index: Any = None  # usearch Index over ids < self._indexed
        self.prefer_exact = False  # scan up to ONE_SHOT_EXACT_MAX keys (one-shot use)
        self._deferred: tuple[str, int, int, int] | None = None
        self.index_grew = False  # build_index added keys that are not saved yet
        self._indexed = 0
        self._view_path: str | None = None

    def __len__(self) -> int:
        return len(self.keys)

    def _id_map(self) -> dict[str, int]:
        if self._ids is None:
            self._ids = {k: i for i, k in enumerate(self.keys)}
        return self._ids

    def id_map(self) -> dict[str, int]:
        """Key -> id, the live dict (for a fold's loop; change it only through :meth:`add`)."""
        return self._id_map()

    def id_of(self, key: str) -> int | None:
        """The id of a key, or None if it has never been seen."""
        return self._id_map().get(key)

    def add(self, key: str, signals: list[str] | None = None) -> int:
        """The id of a key, added if new (its matching set from ``signals``, if they give
        this key)."""
        ids = self._id_map()
        kid = ids.get(key)
        if kid is None:
            kid = ids[key] = len(self.keys)
            self.keys.append(key)
            if signals and "errsig:" in "".join(map(str, signals)):
                matched = match_signals(signals)
                if matched != key_signals(key) and compute_signal_key(signals) == key:
                    self.match[kid] = "|".join(sorted(matched))
        return kid

    def signal_set(self, kid: int) -> frozenset[str]:
        """The set a key is matched on: its matching set, or its parts (``exact_parts``)."""
        found = self._sets.get(kid)
        if found is None:
            joined = None if self.exact_parts else self.match.get(kid)
            found = key_signals(self.keys[kid]) if joined is None else key_signals(joined)
            self._sets[kid] = found
        return found

    # -- the similarity index --------------------------------------------------------------
    def attach_index(self, index: Any, indexed: int, path: str | None = None) -> None:
        """Use a memory-mapped usearch index (saved at ``path``) holding key ids < ``indexed``."""
        self._index, self._indexed, self._view_path = index, indexed, path

    def defer_index(self, path: str, indexed: int, size: int, crc: int) -> None:
        """Map the saved index at ``path`` only when a search needs it (usearch and numpy
        cost ~200 ms to import; an exact scan below the threshold needs neither); ``crc``
        is the CRC-32 of the file that was saved."""
        self._deferred = (path, indexed, size, crc)

    def _load_deferred(self) -> None:
        path, indexed, size, crc = self._deferred or ("", 0, 0, 0)
        self._deferred = None
        # Not the bytes saved (damaged, or another writer's): rebuilt from the keys instead.
        with contextlib.suppress(OSError):
            if path and file_crc(path) != crc:
                path = ""
        index = load_index(path) if path else None
        # The index file is replaced before the state file: another writer's newer index may
        # sit next to this state. Use it only if it is the one this state saved.
        if index is not None and len(index) == size:
            self.attach_index(index, indexed, path)

    def build_index(self) -> Any:
        """Build or extend the usearch index so that it covers every key; return it."""
        try:
            from evolog.projections import usearch_index_class

            Index = usearch_index_class()
            if self._index is None:
                self._index = Index(
                    ndim=FINGERPRINT_BITS,
                    metric="tanimoto",
                    dtype="b1",
                    expansion_search=EXPANSION_SEARCH,
                )
                self._indexed = 0
            elif self._view_path is not None:
                # A memory-mapped index is read-only: load it to grow it.
                self._index = Index.restore(self._view_path, view=False)
                self._view_path = None
            import numpy as np

            todo = [i for i in range(self._indexed, len(self.keys)) if self.signal_set(i)]
            if todo:
                self.index_grew = True
                vectors = np.stack([fingerprint(self.signal_set(i)) for i in todo])
                self._index.add(np.asarray(todo, dtype=np.uint64), vectors)
            self._indexed = len(self.keys)
        except (RuntimeError, ValueError, MemoryError, OSError) as exc:
            raise IndexBackendError(f"building the signal-key index: {exc}") from None
        return self._index

    @property
    def indexed(self) -> int:
        if self._index is None and self._deferred is not None:
            return self._deferred[1]  # the saved index, still on disk and unchanged
        return self._indexed if self._index is not None else 0

    @property
    def index_size(self) -> int:
        if self._index is None and self._deferred is not None:
            return self._deferred[2]
        return len(self._index) if self._index is not None else 0

    @property
    def index_crc(self) -> int:
        """The CRC-32 of the saved index file still in use unchanged (else 0)."""
        return self._deferred[3] if self._index is None and self._deferred is not None else 0

    @property
    def index_loaded(self) -> bool:
        """Whether an index is in memory (a deferred one is still only on disk)."""
        return self._index is not None

    def save_index(self, path: str) -> None:
        if self._index is None:
            return
        try:
            self._index.save(path)
        except (RuntimeError, ValueError, OSError) as exc:
            raise IndexBackendError(f"{path}: saving the signal-key index: {exc}") from None

    # -- search ----------------------------------------------------------------------------
    def similar(
        self, query: frozenset[str], min_sim: float, limit: int, exact: bool | None = None
    ) -> list[tuple[int, float]]:
        """Up to ``limit`` (key id, Jaccard) with Jaccard >= ``min_sim``, most similar first.

        Ties are broken by key id, so the answer is deterministic. ``exact`` forces the scan
        (True) or the index (False); by default the index is used above
        :data:`EXACT_SCAN_MAX` keys.
        """
        if not query:
            kid = self.id_of(NONE_KEY)
            return [] if kid is None else [(kid, 1.0)]
        if exact is None:
            limit_exact = ONE_SHOT_EXACT_MAX if self.prefer_exact else EXACT_SCAN_MAX
            exact = len(self.keys) <= limit_exact
        if exact:
            pool: Any = range(len(self.keys))
        else:
            if self._index is None and self._deferred is not None:
                self._load_deferred()
            if self._index is None or self._indexed == 0:
                self.build_index()
            pool = self._index_candidates(query)
            pool.extend(range(self._indexed, len(self.keys)))
        lo, hi = min_sim * len(query), len(query) / min_sim if min_sim > 0 else float("inf")
        found = []
        for kid in pool:
            s = self.signal_set(kid)
            if lo <= len(s) <= hi:
                sim = jaccard(query, s)
                if sim >= min_sim:
                    found.append((kid, sim))
        found.sort(key=lambda x: (-x[1], x[0]))
        return found[:limit]

    def _index_candidates(self, query: frozenset[str]) -> list[int]:
        try:
            matches = self._index.search(fingerprint(query), min(SEARCH_COUNT, self._indexed))
        except (RuntimeError, ValueError) as exc:
            raise IndexBackendError(f"searching the signal-key index: {exc}") from None
        return [int(k) for k in matches.keys if int(k) < self._indexed]


def load_index(path: str) -> Any:
    """Memory-map a saved usearch index, or None if there is none (a cache)."""
    if not os.path.exists(path):
        return None
    try:
        from evolog.projections import usearch_index_class

        return usearch_index_class().restore(path, view=True)
    except (RuntimeError, ValueError, OSError):
        return None  # a damaged cache is rebuilt, not an error
