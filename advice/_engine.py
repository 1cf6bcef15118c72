"""``AdviceEngine``: gene advice over one log, kept warm between calls.

The engine folds the log into an :class:`evolog.advice._state.AdviceState` once (or loads it from
the store's cache), then folds only the events appended since before each call. A call whose
log files have not changed does not even open the log. ``as_of`` below the folded head
folds a private state from the start (slow, never cached).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

import msgspec
from evolog.eventlog import EventLog, InvalidEventError, Snapshot, parse_ts
from evolog.eventlog.schema import js_truthy

from ._batch import Batch, fold_batch
from ._cache import Signature, load_dead, load_state, log_signature, save_dead, save_state
from ._errors import InvalidInputError
from ._evolog_policy import EvologParams, evolog_decide, gene_ids_of
from ._limits import check_length
from ._reader import AttemptFinder, read_rows
from ._state import AdviceState, Gap, Row
from .evolver._export import iso_ms
from .evolver._policy import evolver_advice

POLICIES = ("evolog", "evolver")
#: Rewrite the cache once this many events were folded since it was loaded.
SAVE_AFTER_EVENTS = 5000


class Advice(msgspec.Struct, frozen=True):
    """One advice answer, shaped like evolver's ``getAdvice`` result plus our evidence."""

    policy: str
    current_signal_key: str
    preferred_gene_id: object
    banned_gene_ids: tuple[object, ...]
    explanation: tuple[str, ...]
    status: str
    scored: tuple[dict[str, Any], ...]
    as_of: int
    now_us: int
    explore: tuple[str, ...] = ()
    candidate_keys: tuple[tuple[str, float], ...] = ()
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """evolver's result keys first (``bannedGeneIds`` as a list, in its Set order)."""
        return {
            "currentSignalKey": self.current_signal_key,
            "preferredGeneId": self.preferred_gene_id,
            "bannedGeneIds": list(self.banned_gene_ids),
            "explanation": list(self.explanation),
            "policy": self.policy,
            "status": self.status,
            "explore": list(self.explore),
            "scored": list(self.scored),
            "candidateKeys": [[k, s] for k, s in self.candidate_keys],
            "as_of": self.as_of,
            "now": iso_ms(self.now_us),
            "warnings": list(self.warnings),
        }


def parse_now(now: object) -> int:
    """``now`` as µs: None (the clock), integer µs, or ISO-8601 text."""
    if now is None:
        return time.time_ns() // 1000
    try:
        return parse_ts(now, "now")
    except InvalidEventError as exc:
        raise InvalidInputError(str(exc)) from None


def _check_query(signals: object, policy: str, as_of: object) -> None:
    if not isinstance(signals, list | tuple):
        raise InvalidInputError(f"signals: expected a list of strings; got {signals!r:.80}")
    for i, signal in enumerate(signals):
        check_length(signal, f"signals[{i}]", InvalidInputError)
    if policy not in POLICIES:
        raise InvalidInputError(f"policy: expected one of {', '.join(POLICIES)}; got {policy!r}")
    if as_of is not None and (isinstance(as_of, bool) or not isinstance(as_of, int) or as_of < 0):
        raise InvalidInputError(f"as_of: expected a seq (an integer >= 0); got {as_of!r}")


class AdviceEngine:
    """Gene advice over ``log``; keep one per process for warm calls.

    ``use_cache`` reads and writes the folded state under the store's ``cache/advice/``.
    Not thread-safe: use one engine per thread, or a lock around calls.
    """

    def __init__(
        self,
        log: EventLog,
        *,
        use_cache: bool = True,
        params: EvologParams | None = None,
        one_shot: bool = False,
    ) -> None:
        self.log = log
        self.use_cache = use_cache
        # A one-shot process (the CLI) answers one query: scanning the distinct keys exactly
        # (tens of ms at 1e5 keys) beats importing usearch and numpy (about 200 ms) to use
        # the index.
        self.one_shot = one_shot
        self.params = params or EvologParams()
        self._state: AdviceState | None = None
        self._signature: Signature | None = None
        self._loaded = False
        self._dead_memo: tuple[Signature, dict[str, str]] | None = None

    def state(self, as_of: int | None = None) -> AdviceState:
        """The folded state at the log's head, or as of seq ``as_of``."""
        state = self._refresh()
        if as_of is None or as_of >= state.head:
            return state
        private = AdviceState()
        with self.log.snapshot() as snap:
            head = _fold(private, snap, read_rows(snap, 0, as_of))
        private.head = max(private.head, head)
        return private

    def _refresh(self) -> AdviceState:
        state = self._refresh_state()
        state.catalog.prefer_exact = self.one_shot
        return state

    def _refresh_state(self) -> AdviceState:
        if self._state is None and self.use_cache and not self._loaded:
            self._loaded = True
            cached = load_state(self.log.paths)
            if cached is not None:
                self._state, self._signature = cached
        state = self._state or AdviceState()
        signature = log_signature(self.log.paths)
        if self._state is not None and signature == self._signature:
            return state
        first = self._state is None
        with self.log.snapshot() as snap:
            read = read_rows(snap, state.head)
            if read[0] < state.head:  # the store was replaced under the cache
                state = AdviceState()
                read = read_rows(snap, 0)
            head = _fold(state, snap, read)
            state.head = max(state.head, head)
        self._state, self._signature = state, signature
        if self.use_cache and (state.applied >= SAVE_AFTER_EVENTS or (first and state.head)):
            # A one-shot save keeps no key index (it never loaded one): a long-lived process
            # rebuilds it once, on its first search above EXACT_SCAN_MAX keys.
            self.save()
        return state

    def _dead(self, as_of: int | None) -> dict[str, str]:
        """Buried entries from the survival ledger, memoised while the log is unchanged."""
        if as_of is not None:
            return _deaths(self.log, as_of)
        signature = log_signature(self.log.paths)
        if self._dead_memo is None and self.use_cache:
            self._dead_memo = load_dead(self.log.paths)
        if self._dead_memo is None or self._dead_memo[0] != signature:
            self._dead_memo = (signature, _deaths(self.log, None))
            if self.use_cache:
                save_dead(self.log.paths, *self._dead_memo)
        return self._dead_memo[1]

    def save_if_index_grew(self) -> None:
        """Save when a search had to build the key index, so the next process maps it."""
        state = self._state
        if state is not None and self.use_cache and state.catalog.index_grew:
            self.save()
            state.catalog.index_grew = False

    def save(self) -> None:
        """Write the folded state to the store's cache now."""
        if self._state is not None and self._signature is not None:
            save_state(self.log.paths, self._state, self._signature)
            self._state.applied = 0

    def advise(
        self,
        signals: Sequence[object],
        genes: Sequence[object],
        *,
        policy: str = "evolog",
        drift: object = False,
        now: object = None,
        as_of: int | None = None,
        include_dead: bool | None = None,
    ) -> Advice:
        """Which gene to prefer for ``signals`` among ``genes``, and which to avoid.

        ``drift`` is tested for JavaScript truthiness, as evolver does (``"false"`` is true).
        ``now`` is None (the clock), integer µs or ISO-8601 text. Genes the survival ledger
        has buried are skipped (``ledger_skip:<id>:<cause>`` in the explanation) unless
        ``include_dead``; by default the ``evolver`` policy includes them, since evolver has
        no ledger and its users switch expecting identical decisions.
        """
        _check_query(signals, policy, as_of)
        now_us = parse_now(now)
        state = self.state(as_of)
        if policy == "evolver":
            # A warm engine answers from the window's summaries, kept as the log advances;
            # a one-shot process or a past state reads the window once, which costs less
            # than summarising it.
            indexed = state is self._state and not self.one_shot
            return _evolver(state, signals, genes, drift, now_us, indexed)
        ids, warnings = gene_ids_of(genes)
        skips: tuple[str, ...] = ()
        if not include_dead:
            dead = self._dead(as_of)
            skips = tuple(f"ledger_skip:{g}:{dead[g]}" for g in ids if g in dead)
            ids = [g for g in ids if g not in dead]
        d = evolog_decide(state, list(signals), ids, js_truthy(drift), now_us, self.params)
        return Advice(
            policy="evolog",
            current_signal_key=d.current_signal_key,
            preferred_gene_id=d.preferred_gene_id,
            banned_gene_ids=d.banned_gene_ids,
            explanation=(*d.explanation, *skips),
            status=d.status,
            scored=tuple(s.to_json() for s in d.scored),
            as_of=state.head,
            now_us=now_us,
            explore=d.explore,
            candidate_keys=d.candidate_keys,
            warnings=tuple(warnings),
        )


def _fold(state: AdviceState, snap: Snapshot, read: tuple[int, Iterator[Row | Gap | Batch]]) -> int:
    """Fold the rows of ``read`` (from :func:`read_rows` on ``snap``) into ``state``; its head."""
    head, rows = read
    state.find_attempt = AttemptFinder(snap, head)
    apply = state.apply
    try:
        for row in rows:
            if type(row) is Row:
                apply(row)
            elif type(row) is Batch:
                fold_batch(state, row)
            else:
                state.skip(row)  # type: ignore[arg-type]
    finally:
        state.find_attempt = None  # holds the snapshot
    return head


def _deaths(log: EventLog, as_of: int | None) -> dict[str, str]:
    # Imported only when the ledger must be replayed: the projections package loads DuckDB.
    from evolog.projections import deaths

    return deaths(log, as_of=as_of)


def _evolver(
    state: AdviceState,
    signals: Sequence[object],
    genes: object,
    drift: object,
    now_us: int,
    indexed: bool,
) -> Advice:
    if not isinstance(genes, list | tuple):
        raise InvalidInputError(f"genes: expected a list of gene objects; got {genes!r:.80}")
    if indexed:
        index = state.evolver_index()
        result = index.advice(list(signals), list(genes), drift, now_us // 1000)
    else:
        result = evolver_advice(
            state.window_objects(), list(signals), list(genes), drift, now_us // 1000, None
        )
    scored = tuple(
        {
            "geneId": s.gene_id,
            "score": s.score,
            "best": s.best,
            "attempts": s.attempts,
            "prior": s.prior,
            "prior_attempts": s.prior_attempts,
            "banned": s.banned,
        }
        for s in result.scored
    )
    return Advice(
        policy="evolver",
        current_signal_key=result.current_signal_key,
        preferred_gene_id=result.preferred_gene_id,
        banned_gene_ids=result.banned_gene_ids,
        explanation=result.explanation,
        status="prefer" if result.preferred_gene_id is not None else "no_genes",
        scored=scored,
        as_of=state.head,
        now_us=now_us,
    )
