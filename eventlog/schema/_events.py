"""The event schema: frozen, tagged msgspec Structs in one union.

Schema evolution follows msgspec's rules: a new field always has a default, a field's type
never changes, a field is never renamed. ``v`` is bumped only when a meaning changes; an
upcaster in :mod:`evolog.eventlog.schema._codec` then rewrites old versions on read.

``evolver_patch`` (on the kinds evolver writes) holds how an imported evolver line differs from
what evolver's own writer would produce, so an export gives back the original line exactly.

Field names are shared across kinds only when their types agree, because every kind lands in
one wide Parquet schema (a column per distinct field name).
"""

import sys
from typing import Annotated, Any, Literal

import msgspec

Source = Literal["real", "simulated", "dreamed"]

# Every typed number must fit a Parquet int64/float64 column and a JSON number: a wider int
# would be acknowledged and then fail every seal; NaN or infinity would come back from JSON
# (``evolog replay``) as null. Rejecting them at append keeps every path lossless.
Int = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
Float = Annotated[float, msgspec.Meta(ge=-sys.float_info.max, le=sys.float_info.max)]

SCHEMA_VERSION = 1


class Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind", omit_defaults=True):
    """The envelope every event carries.

    ``id`` is the idempotency key: empty means "generate a time-ordered id at append".
    ``seq`` is assigned by the log (a value given by a client is ignored). ``ts`` is event
    time in integer microseconds since the Unix epoch, UTC; 0 means "now, at append".
    """

    id: str = ""
    seq: Int = 0
    ts: Int = 0
    agent: str = ""
    session: str | None = None
    source: Source = "real"
    v: Int = SCHEMA_VERSION


class Mutation(msgspec.Struct, frozen=True, omit_defaults=True):
    """An evolver mutation (outcomes carry only id, category and risk_level)."""

    id: str
    category: str | None = None
    trigger_signals: list[str] | None = None
    target: str | None = None
    expected_effect: str | None = None
    risk_level: str | None = None


class Personality(msgspec.Struct, frozen=True, omit_defaults=True):
    """An evolver personality state and its rounded key."""

    key: str
    rigor: Float | None = None
    creativity: Float | None = None
    verbosity: Float | None = None
    risk_tolerance: Float | None = None
    obedience: Float | None = None


class Signal(Event, frozen=True, tag="signal"):
    """What an agent observed: raw signals, their normalised key and error signature."""

    signals: list[str] = []
    key: str = ""
    error_signature: str | None = None
    observed: dict[str, Any] | None = None
    evolver_patch: dict[str, Any] | None = None


class Hypothesis(Event, frozen=True, tag="hypothesis"):
    """What the agent expects a gene or strategy to do for a signal set."""

    hypothesis_id: str = ""
    signals: list[str] = []
    key: str = ""
    error_signature: str | None = None
    text: str = ""
    predicted_status: str | None = None
    predicted_score: Float | None = None
    mutation: Mutation | None = None
    personality: Personality | None = None
    gene: str | None = None
    gene_category: str | None = None
    drift: bool = False
    selected_by: str | None = None
    selector: Any = None
    capsules: list[str] = []
    observed: dict[str, Any] | None = None
    evolver_patch: dict[str, Any] | None = None


class Attempt(Event, frozen=True, tag="attempt"):
    """An action taken: the decision, which entries decided and supported it, the task.

    ``action_id`` names the attempt for its steps and outcome; empty means "use the event id".
    """

    action_id: str = ""
    task: str | None = None
    signals: list[str] = []
    key: str = ""
    error_signature: str | None = None
    mutation: Mutation | None = None
    personality: Personality | None = None
    gene: str | None = None
    gene_category: str | None = None
    hypothesis_id: str | None = None
    drift: bool = False
    selected_by: str | None = None
    selector: Any = None
    capsules: list[str] = []
    decided_by: list[str] = []
    supported_by: list[str] = []
    observed: dict[str, Any] | None = None
    evolver_patch: dict[str, Any] | None = None


class Step(Event, frozen=True, tag="step"):
    """One ordered step of an attempt (a tool call, a command, a reasoning step)."""

    action_id: str = ""
    index: Int = 0
    reasoning: str = ""
    action: str = ""
    result: str = ""
    tool: str | None = None
    ok: bool | None = None
    error: str | None = None
    duration_ms: Float | None = None


class Outcome(Event, frozen=True, tag="outcome"):
    """How an attempt ended, with provenance and the measured resource delta.

    ``decided_by``/``supported_by`` name the memory entries (genes, strategy nodes) that
    decided and supported the action; ``delta`` is a measured change in a conserved resource,
    never a grade.
    """

    action_id: str = ""
    status: str = ""
    score: Float | None = None
    note: str | None = None
    signals: list[str] = []
    key: str = ""
    error_signature: str | None = None
    current_signals: list[str] | None = None
    mutation: Mutation | None = None
    personality: Personality | None = None
    gene: str | None = None
    gene_category: str | None = None
    hypothesis_id: str | None = None
    half_life_days: Float | None = None
    decided_by: list[str] = []
    supported_by: list[str] = []
    delta: Float | None = None
    capsules: list[str] = []
    observed: dict[str, Any] | None = None
    baseline: dict[str, Any] | None = None
    evolver_patch: dict[str, Any] | None = None


class Tick(Event, frozen=True, tag="tick"):
    """A clock tick of the survival ledger (upkeep is charged per tick)."""

    ticks: Int = 1
    reason: str | None = None


class ConfidenceEdge(Event, frozen=True, tag="confidence_edge"):
    """An evolver (signal key, gene) confidence snapshot, kept for lossless import."""

    signals: list[str] = []
    key: str = ""
    gene: str | None = None
    gene_category: str | None = None
    success: Int = 0
    fail: Int = 0
    attempts: Int = 0
    p: Float | None = None
    decay_weight: Float | None = None
    value: Float | None = None
    half_life_days: Float | None = None
    updated_at: str | None = None
    derived_from: str | None = None
    evolver_patch: dict[str, Any] | None = None


class ConfidenceGeneOutcome(Event, frozen=True, tag="confidence_gene_outcome"):
    """An evolver per-gene confidence snapshot (no signal), kept for lossless import."""

    gene: str | None = None
    gene_category: str | None = None
    success: Int = 0
    fail: Int = 0
    attempts: Int = 0
    p: Float | None = None
    decay_weight: Float | None = None
    value: Float | None = None
    half_life_days: Float | None = None
    updated_at: str | None = None
    derived_from: str | None = None
    evolver_patch: dict[str, Any] | None = None


class ExternalCandidate(Event, frozen=True, tag="external_candidate"):
    """An evolver external asset candidate, kept for lossless import."""

    signals: list[str] = []
    key: str = ""
    origin: str | None = None
    received_at: str | None = None
    asset_type: str | None = None
    asset_id: str | None = None
    trigger: list[str] = []
    candidate_gene: str | None = None
    candidate_confidence: Float | None = None
    evolver_patch: dict[str, Any] | None = None


class Feedback(Event, frozen=True, tag="feedback"):
    """A person's or a program's judgement of an entry or an attempt.

    ``action_id`` (optional) names the attempt the judgement is about: a rated feedback on
    an item for an attempt replaces the verdict that attempt's outcome gave the item.
    """

    target: str = ""
    rating: Float | None = None
    text: str = ""
    action_id: str = ""


class Note(Event, frozen=True, tag="note"):
    """A memory note: written by ``remember``, superseded by a later note naming its item.

    ``item`` is the memory item the note writes (empty: a new item named by the note's own
    id); ``branch`` its Living Memory branch (``backbone`` is permanent); ``sources`` the
    items a compression or archive note merges (archived, never deleted); ``reason`` says
    which (``compress`` or ``archive``). ``lesson`` makes the item a lesson: recalled and
    credited like a strategy, born in the survival ledger, never compressed; ``author`` says
    who wrote it (``agent`` over MCP, ``reflection`` for the hook's lesson at ``Stop``, ""
    for a person or a program).
    """

    text: str = ""
    tags: list[str] = []
    item: str = ""
    branch: str = ""
    sources: list[str] = []
    reason: str | None = None
    lesson: bool = False
    author: str = ""


class Recall(Event, frozen=True, tag="recall"):
    """Memory items injected into an agent's context: one event per injected recall.

    ``digest`` identifies the query (BLAKE2b, 16 hex digits; the text itself is the
    attempt's), ``items`` and ``scores`` the injected items best first, ``action_id`` the
    attempt they serve (if any), ``chars``/``budget`` the block's size and its cap.
    ``encoder`` names the embedder (with its model version) whose route chose the strategy
    among the items, so a replay knows which vectors decided ("" when no route was asked).
    """

    digest: str = ""
    items: list[str] = []
    scores: list[Float] = []
    action_id: str = ""
    chars: Int = 0
    budget: Int = 0
    encoder: str = ""


class Fetched(Event, frozen=True, tag="fetched"):
    """Memory items whose details an agent asked for by id, after a recall showed their
    index lines: one event per fetch that returned something.

    ``asked`` holds the ids as given (the block's short ids or full ones), ``items`` the
    items they named (full ids, in the order asked), ``action_id`` the attempt the fetch
    serves ("" when none is known), ``chars`` the size of the details returned and ``via``
    the door it came through (``mcp``, ``http``). An outcome of that attempt credits the
    fetched items as the ones used (see :mod:`projections.memory._use`).
    """

    asked: list[str] = []
    items: list[str] = []
    action_id: str = ""
    chars: Int = 0
    via: str = ""
