"""Advice: which gene or strategy to use for a set of signals, and which to avoid.

Two policies answer the same question in the same shape (evolver's ``getAdvice`` result plus
a scored list with evidence): ``evolog`` (the default; per-event decay over all history, bans
only on evidence of failure, "explore" when nothing is known) and ``evolver``, which
reproduces evolver's getMemoryAdvice decision for decision on the last 2000 evolver-kind
events. :class:`AdviceEngine` keeps the folded log warm between calls. Evolver memory graphs
are imported (and followed) losslessly; attempts are closed by action id, exactly once.
The signal-key primitives live in :mod:`eventlog` (keys are part of the event schema) and
are re-exported here.

Errors (all in this package derive from :class:`AdviceError`)::

    AdviceError
    ├── InvalidInputError
    ├── AttemptError
    │   ├── UnknownAttemptError
    │   └── AttemptAlreadyClosedError
    ├── EvolverSourceError
    ├── LogReadError
    ├── IndexBackendError
    └── RouterError
        └── InvalidTaskError (ValueError)

The strategy router (:class:`Router`) routes a task to ZERO_SHOT, MEMORY_TRAVERSAL (an entry
node with its steps and constraints) or CONTEXT_JUMP over the dream-built memory graph; a
node is an entry point only if :func:`applicability` says it applies to the task (not merely
shares its vocabulary), the same test recall uses.
Advice and routing skip entries the survival ledger has buried unless told otherwise.
"""

from typing import Any

from eventlog._signalkey import (
    compute_signal_key,
    extract_error_signature,
    has_error_signal,
    jaccard,
    normalize_error_signature,
    normalize_signals_for_matching,
    stable_hash,
)

from ._attempts import close_attempt, open_attempts, outcome_id
from ._engine import POLICIES, Advice, AdviceEngine
from ._errors import (
    AdviceError,
    AttemptAlreadyClosedError,
    AttemptError,
    EvolverSourceError,
    IndexBackendError,
    InvalidInputError,
    LogReadError,
    UnknownAttemptError,
)
from ._evolog_policy import EvologParams
from ._evolver_export import apply_patch, canonical_evolver, to_evolver
from ._evolver_file import ImportReport, import_evolver
from ._evolver_follow import follow_evolver
from ._evolver_import import evolver_to_event, patch_supported
from ._evolver_policy import EvolverAdvice, ScoredGene, evolver_advice, read_evolver_jsonl_tail
from ._outcomes import InferredOutcome, infer_from_signals, infer_outcome
from ._state import AttemptInfo

__all__ = [
    "DEFAULT_FLOORS",
    "POLICIES",
    "Advice",
    "AdviceEngine",
    "AdviceError",
    "Applicability",
    "ApplicabilityRule",
    "AttemptAlreadyClosedError",
    "AttemptError",
    "AttemptInfo",
    "EntryPoint",
    "EvologParams",
    "EvolverAdvice",
    "EvolverSourceError",
    "ImportReport",
    "IndexBackendError",
    "InferredOutcome",
    "InvalidInputError",
    "InvalidTaskError",
    "LogReadError",
    "Plan",
    "PlanStep",
    "RouteDecision",
    "Router",
    "RouterConfig",
    "RouterError",
    "RouterPath",
    "ScoredGene",
    "Traversal",
    "UnknownAttemptError",
    "applicability",
    "apply_patch",
    "canonical_evolver",
    "close_attempt",
    "compute_signal_key",
    "evolver_advice",
    "evolver_to_event",
    "extract_error_signature",
    "follow_evolver",
    "has_error_signal",
    "import_evolver",
    "infer_from_signals",
    "infer_outcome",
    "jaccard",
    "normalize_error_signature",
    "normalize_signals_for_matching",
    "open_attempts",
    "outcome_id",
    "patch_supported",
    "read_evolver_jsonl_tail",
    "stable_hash",
    "to_evolver",
]


# The router pulls in the memory graph, embeddings and usearch (hundreds of ms): its names
# load on first use, so `evolog advise` in a cold process does not pay for them.
_ROUTER_NAMES = frozenset(
    {
        "DEFAULT_FLOORS",
        "EntryPoint",
        "InvalidTaskError",
        "Plan",
        "PlanStep",
        "RouteDecision",
        "Router",
        "RouterConfig",
        "RouterError",
        "RouterPath",
    }
)


_APPLICABILITY_NAMES = frozenset({"Applicability", "ApplicabilityRule", "applicability"})


def __getattr__(name: str) -> Any:
    if name in _ROUTER_NAMES:
        from . import _router

        return getattr(_router, name)
    if name in _APPLICABILITY_NAMES:
        from . import _applicability

        return getattr(_applicability, name)
    if name == "Traversal":
        from ._traversal import Traversal

        return Traversal
    raise AttributeError(f"module 'advice' has no attribute {name!r}")
