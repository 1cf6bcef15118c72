"""Outcome statistics per (signal key, gene) edge and per gene, with per-event decay.

Each statistic keeps exact counts and, for decay, two sums relative to its newest outcome::

    s_acc = Σ_success 2^(-(newest - t_i) / h)      f_acc = Σ_failed 2^(-(newest - t_i) / h)

so at time ``now`` the decayed evidence is ``s_acc · 2^(-max(0, now - newest) / h)`` (no
outcome ever weighs more than 1). Outcomes are added in log order, and a rebuild adds them in
the same order, so a table refreshed incrementally equals one rebuilt from scratch bit for
bit. ``h`` is a half-life in µs.

A :class:`StatTable` is an immutable *base* of columns (sorted by owner then gene, as loaded
from the cache) plus a dict *overlay* of the statistics changed since; lookups check the
overlay first, and :meth:`StatTable.columns` merges both for saving.

These are the projections' ``per_event`` edges and gene priors, folded again for the cold
path; which is the authority, and the test that keeps them equal: :mod:`evolog.projections.edges`.
"""

from __future__ import annotations

import bisect
from typing import Any

import msgspec

INT_COLUMNS = ("success", "fail", "other", "first_t", "newest_t", "last_seq")
FLOAT_COLUMNS = ("s_acc", "f_acc")


class Stat(msgspec.Struct):
    """Counts and decay sums of the outcomes of one edge (or one gene)."""

    success: int = 0
    fail: int = 0
    other: int = 0
    first_t: int = 0
    newest_t: int = 0
    last_seq: int = 0
    s_acc: float = 0.0
    f_acc: float = 0.0

    @property
    def outcomes(self) -> int:
        return self.success + self.fail + self.other

    def add(self, t: int, status: str, seq: int, half_life_us: float) -> None:
        """Count one outcome at time ``t`` (µs) with ``status``."""
        if self.outcomes == 0:
            self.first_t = self.newest_t = t
        elif t > self.newest_t:
            factor = 2.0 ** (-(t - self.newest_t) / half_life_us)
            self.s_acc *= factor
            self.f_acc *= factor
            self.newest_t = t
        self.first_t = min(self.first_t, t)
        weight = 2.0 ** (-(self.newest_t - t) / half_life_us) if t < self.newest_t else 1.0
        if status == "success":
            self.success += 1
            self.s_acc += weight
        elif status == "failed":
            self.fail += 1
            self.f_acc += weight
        else:
            self.other += 1
        self.last_seq = max(self.last_seq, seq)

    def decayed(self, now_us: int, half_life_us: float) -> tuple[float, float]:
        """(successes, failures) each weighted by 2^(-age/half-life), age at least 0."""
        if now_us <= self.newest_t:
            return self.s_acc, self.f_acc
        factor = 2.0 ** (-(now_us - self.newest_t) / half_life_us)
        return self.s_acc * factor, self.f_acc * factor


#: ``memoryview.cast`` formats of the stored columns (native byte order, as numpy writes).
FORMATS: dict[str, str] = {"owner": "i", "gene": "i", "offsets": "q"}
FORMATS.update({c: "q" for c in INT_COLUMNS})
FORMATS.update({c: "d" for c in FLOAT_COLUMNS})


def _typed(data: bytes, fmt: str) -> Any:
    """A zero-copy typed view of ``data`` (``fmt`` from :data:`FORMATS`)."""
    view: Any = memoryview(data)
    return view.cast(fmt)


class StatTable:
    """Statistics keyed by (owner id, gene id): a read-only base plus a dict overlay.

    For edges the owner is a signal-key id; for gene priors it is always 0. The base is
    typed memoryviews over the cached bytes (no numpy needed to answer, which keeps the
    import cost of a cold process low); numpy is imported only to merge for saving.
    """

    def __init__(self, columns: dict[str, bytes] | None = None) -> None:
        raw = columns or {name: b"" for name in FORMATS}
        if not raw["offsets"]:
            raw = dict(raw, offsets=(0).to_bytes(8, "little", signed=True))
        self._a = {name: _typed(raw[name], fmt) for name, fmt in FORMATS.items()}
        self._base_owners = len(self._a["offsets"]) - 1
        self._overlay: dict[tuple[int, int], Stat] = {}
        self._replaced: list[int] = []  # base rows that the overlay supersedes

    @property
    def base_rows(self) -> int:
        return len(self._a["owner"])

    def __len__(self) -> int:
        return self.base_rows - len(self._replaced) + len(self._overlay)

    def _base_row(self, owner: int, gene: int) -> int:
        if owner >= self._base_owners:
            return -1
        offsets = self._a["offsets"]
        lo, hi = offsets[owner], offsets[owner + 1]
        if lo == hi:
            return -1
        genes = self._a["gene"]
        i = bisect.bisect_left(genes, gene, lo, hi)
        return i if i < hi and genes[i] == gene else -1

    def _from_base(self, row: int) -> Stat:
        a = self._a
        return Stat(*(a[c][row] for c in INT_COLUMNS), *(a[c][row] for c in FLOAT_COLUMNS))

    def get(self, owner: int, gene: int) -> Stat | None:
        """The statistic of (owner, gene), or None if it has no outcome."""
        stat = self._overlay.get((owner, gene))
        if stat is not None:
            return stat
        row = self._base_row(owner, gene)
        return None if row < 0 else self._from_base(row)

    def for_update(self, owner: int, gene: int) -> Stat:
        """The mutable statistic of (owner, gene), created or copied into the overlay."""
        stat = self._overlay.get((owner, gene))
        if stat is None:
            row = self._base_row(owner, gene)
            if row >= 0:
                stat = self._from_base(row)
                self._replaced.append(row)
            else:
                stat = Stat()
            self._overlay[(owner, gene)] = stat
        return stat

    @property
    def overlay_size(self) -> int:
        return len(self._overlay)

    def columns(self, n_owners: int) -> dict[str, Any]:
        """Base and overlay merged as numpy arrays sorted by (owner, gene), with offsets."""
        import numpy as np

        base = {k: np.frombuffer(v, dtype=v.format) for k, v in self._a.items()}
        keep = np.ones(self.base_rows, dtype=bool)
        keep[np.asarray(self._replaced, dtype=np.int64)] = False
        items = sorted(self._overlay.items())
        out: dict[str, Any] = {}
        for name, index in (("owner", 0), ("gene", 1)):
            over = np.fromiter((k[index] for k, _ in items), np.int32, len(items))
            out[name] = np.concatenate([base[name][keep], over])
        for c in (*INT_COLUMNS, *FLOAT_COLUMNS):
            dtype = np.float64 if c in FLOAT_COLUMNS else np.int64
            vals = np.fromiter((getattr(s, c) for _, s in items), dtype, len(items))
            out[c] = np.concatenate([base[c][keep], vals])
        order = np.lexsort((out["gene"], out["owner"]))
        for name in list(out):
            out[name] = out[name][order]
        counts = np.bincount(out["owner"], minlength=n_owners)[:n_owners]
        out["offsets"] = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        return out
