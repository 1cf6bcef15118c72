"""A requested dreamer that fails, in a run that asked for the heuristic fallback.

Without a fallback (the default) a dreamer failure stops the run: see
:meth:`evolog.dream._phases.CycleBuilder._dream_one`. With one, each failing trace is dreamed by
the heuristic dreamer and the cycle says so (its dream-end status is ``fallback``, its phase
log names every such trace). :class:`Guarded` keeps a fallback run from paying the
dreamer's retries once per trace: after a failure that will not go away within the run (the
API unreachable or refusing, a missing key), every later call fails at once with that reason.
A reply that was merely unusable (:class:`~dream.DreamerOutputError`) concerns one trace
and does not stop the dreamer.
"""

from __future__ import annotations

from collections.abc import Sequence

from evolog.projections import StepRecord, StrategyNode

from ._dreamer import Dreamer, DreamProgram, LinkCandidate
from ._errors import DreamerError, DreamerOutputError
from ._traces import Trace

__all__ = ["Guarded"]


class Guarded:
    """``inner`` until it fails for good in this run; then a failure without a call."""

    def __init__(self, inner: Dreamer) -> None:
        self.inner = inner
        self.down: str | None = None

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def model(self) -> str | None:
        return self.inner.model

    @property
    def records_text(self) -> bool:
        return self.inner.records_text

    @property
    def batch_size(self) -> int:
        return self.inner.batch_size

    def dream_trace(self, trace: Trace) -> DreamProgram:
        self._check()
        try:
            return self.inner.dream_trace(trace)
        except DreamerError as exc:
            raise self._note(exc) from None

    def link(self, candidates: Sequence[LinkCandidate]) -> DreamProgram:
        self._check()
        try:
            return self.inner.link(candidates)
        except DreamerError as exc:
            raise self._note(exc) from None

    def compact(self, node: StrategyNode, steps: Sequence[StepRecord]) -> DreamProgram:
        self._check()
        try:
            return self.inner.compact(node, steps)
        except DreamerError as exc:
            raise self._note(exc) from None

    def _check(self) -> None:
        if self.down is not None:
            raise DreamerError(f"{self.down} (not called again in this run)")

    def _note(self, exc: DreamerError) -> DreamerError:
        if not isinstance(exc, DreamerOutputError):
            self.down = str(exc)
        return exc
