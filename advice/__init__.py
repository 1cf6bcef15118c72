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
        ├── InvalidTaskError (ValueError)
        └── JudgeReplyError

The strategy router (:class:`Router`) routes a task to ZERO_SHOT, MEMORY_TRAVERSAL (an entry
node with its steps and constraints) or CONTEXT_JUMP over the dream-built memory graph; a
node is an entry point only if :func:`applicability` says it applies to the task (not merely
shares its vocabulary), the same test recall uses. :class:`JudgedRouter` lets a model
(:class:`ModelJudge`) make that verdict instead.
Advice and routing skip entries the survival ledger has buried unless told otherwise.
"""

from typing import TYPE_CHECKING

from evolog.eventlog.schema import (
    compute_signal_key,
    extract_error_signature,
    has_error_signal,
    jaccard,
    normalize_error_signature,
    normalize_signals_for_matching,
    stable_hash,
)

from evolog._lazy import lazy_exports

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
from ._limits import MAX_TASK_CHARS, check_length

if TYPE_CHECKING:
    from ._attempts import close_attempt, open_attempts, outcome_id
    from ._engine import POLICIES, Advice, AdviceEngine
    from ._evolog_policy import EvologParams
    from ._outcomes import InferredOutcome, infer_from_signals, infer_outcome
    from ._state import AttemptInfo
    from .evolver._export import apply_patch, canonical_evolver, to_evolver
    from .evolver._file import ImportReport, import_evolver
    from .evolver._follow import follow_evolver
    from .evolver._import import evolver_to_event, patch_supported
    from .evolver._policy import EvolverAdvice, ScoredGene, evolver_advice, read_evolver_jsonl_tail
    from .routing._applicability import Applicability, ApplicabilityRule, applicability
    from .routing._judge import JudgedRouter, JudgeReplyError, ModelJudge
    from .routing._router import (
        DEFAULT_FLOORS,
        EntryPoint,
        InvalidTaskError,
        Plan,
        PlanStep,
        RouteDecision,
        Router,
        RouterConfig,
        RouterError,
        RouterPath,
    )
    from .routing._traversal import Traversal

__all__ = [
    "DEFAULT_FLOORS",
    "MAX_TASK_CHARS",
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
    "JudgeReplyError",
    "JudgedRouter",
    "LogReadError",
    "ModelJudge",
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
    "check_length",
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
# load on first use, so `evolog advise` in a cold process does not pay for them. The engine,
# attempts and evolver interoperability load on first use too: the hook's recall imports
# evolog.advice.recall, and paid ~40 ms of CPU for this package's eager imports.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "._attempts": "close_attempt open_attempts outcome_id",
        "._engine": "POLICIES Advice AdviceEngine",
        "._evolog_policy": "EvologParams",
        "._outcomes": "InferredOutcome infer_from_signals infer_outcome",
        "._state": "AttemptInfo",
        ".evolver._export": "apply_patch canonical_evolver to_evolver",
        ".evolver._file": "ImportReport import_evolver",
        ".evolver._follow": "follow_evolver",
        ".evolver._import": "evolver_to_event patch_supported",
        ".evolver._policy": "EvolverAdvice ScoredGene evolver_advice read_evolver_jsonl_tail",
        ".routing._router": "DEFAULT_FLOORS EntryPoint InvalidTaskError Plan PlanStep "
        "RouteDecision Router RouterConfig RouterError RouterPath",
        ".routing._applicability": "Applicability ApplicabilityRule applicability",
        ".routing._judge": "JudgeReplyError JudgedRouter ModelJudge",
        ".routing._traversal": "Traversal",
    },
    globals(),
)
