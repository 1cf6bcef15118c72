"""Advice: which gene or strategy to use for a set of signals, and which to avoid.

The ``evolver`` policy reproduces evolver's getMemoryAdvice decision for decision; the
signal-key primitives it uses live in :mod:`eventlog` (keys are part of the event schema)
and are re-exported here.
"""

from eventlog._signalkey import (
    compute_signal_key,
    extract_error_signature,
    has_error_signal,
    jaccard,
    normalize_error_signature,
    normalize_signals_for_matching,
    stable_hash,
)

from ._evolver_policy import EvolverAdvice, ScoredGene, evolver_advice, read_evolver_jsonl_tail

__all__ = [
    "EvolverAdvice",
    "ScoredGene",
    "compute_signal_key",
    "evolver_advice",
    "extract_error_signature",
    "has_error_signal",
    "jaccard",
    "normalize_error_signature",
    "normalize_signals_for_matching",
    "read_evolver_jsonl_tail",
    "stable_hash",
]
