"""The bodies of the native API, as msgspec types (they also generate the OpenAPI document)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from evolog.advice import MAX_TASK_CHARS

Seq = Annotated[int, msgspec.Meta(ge=0, description="a position in the log (0: the start)")]
Time = Annotated[
    int | str,
    msgspec.Meta(description="integer microseconds since the epoch, or ISO-8601 text"),
]


class ErrorBody(msgspec.Struct):
    """Every error answer: what was wrong, and which part of the request it was in."""

    error: str
    field: str | None
    status: int


class Receipt(msgspec.Struct, array_like=False):
    """What an append did for one event."""

    seq: int
    id: str
    duplicate: bool


class AppendBatchResponse(msgspec.Struct):
    """An NDJSON batch's receipts, in input order (the batch is atomic)."""

    count: int
    duplicates: int
    receipts: list[Receipt]


class SqlRequest(msgspec.Struct, forbid_unknown_fields=True):
    """One read-only query over ``events``, the typed views, ``traces``, ``edges``."""

    query: Annotated[
        str, msgspec.Meta(examples=["SELECT kind, count(*) AS n FROM events GROUP BY kind"])
    ]
    format: Literal["json", "csv", "arrow"] = "json"
    as_of: Seq | None = None
    as_of_ts: Time | None = None
    now: Time | None = None
    max_rows: Annotated[int, msgspec.Meta(ge=1, le=1_000_000)] = 100_000


class SqlResponse(msgspec.Struct):
    columns: list[str]
    rows: list[dict[str, Any]]
    row_count: int
    truncated: bool


class SearchRequest(msgspec.Struct, forbid_unknown_fields=True):
    """Events whose text contains a phrase (the MCP tool ``search_events``)."""

    text: Annotated[str, msgspec.Meta(examples=["timeout"])] = ""
    kinds: list[str] | None = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=500)] = 20


class SearchResponse(msgspec.Struct):
    events: list[dict[str, Any]]
    count: int


class EdgesRequest(msgspec.Struct, forbid_unknown_fields=True):
    """Edge stats per (signal key, gene), or per-gene priors with ``priors``."""

    signals: list[str] | None = None
    keys: list[str] | None = None
    genes: list[str] | None = None
    priors: bool = False
    mode: Literal["newest", "per_event"] | None = None
    half_life_days: Annotated[float, msgspec.Meta(gt=0)] | None = None
    gene_half_life_days: Annotated[float, msgspec.Meta(gt=0)] | None = None
    as_of: Seq | None = None
    now: Time | None = None


class RowsResponse(msgspec.Struct):
    rows: list[dict[str, Any]]


class AdviseRequest(msgspec.Struct, forbid_unknown_fields=True):
    """Which gene to prefer for ``signals`` among ``genes`` (evolver's getAdvice query)."""

    signals: Annotated[list[str], msgspec.Meta(examples=[["log_error", "test_failure"]])]
    genes: Annotated[
        list[Any],
        msgspec.Meta(examples=[[{"type": "Gene", "id": "gene_retry", "category": "repair"}]]),
    ]
    policy: Literal["evolog", "evolver"] = "evolog"
    driftEnabled: bool = False
    now: Time | None = None
    as_of: Seq | None = None
    include_dead: bool | None = None


class AdviceResponse(msgspec.Struct):
    """evolver's getAdvice result first, then the evidence."""

    currentSignalKey: str
    preferredGeneId: Any
    bannedGeneIds: list[Any]
    explanation: list[str]
    policy: str
    status: str
    explore: list[str]
    scored: list[dict[str, Any]]
    candidateKeys: list[Any]
    as_of: int
    now: str
    warnings: list[str]


class RouteRequest(msgspec.Struct, forbid_unknown_fields=True):
    """Route a task over the dream-built memory graph."""

    task: Annotated[
        str,
        msgspec.Meta(min_length=1, max_length=MAX_TASK_CHARS, examples=["a test is flaky, fix it"]),
    ]
    top_k: Annotated[int, msgspec.Meta(ge=1, le=100)] = 5
    current: str | None = None
    include_dead: bool = False


class StatsResponse(msgspec.Struct):
    stats: dict[str, Any]


class Health(msgspec.Struct):
    status: Literal["ok"]
    head_seq: int
    durability: str
    uptime_s: float


class KgGene(msgspec.Struct):
    id: Any = None
    category: Any = None
    type: Any = None


class KgAdviceRequest(msgspec.Struct):
    """evolver's remote advice call (its fields are taken as sent; others are ignored)."""

    signals: list[Any] = []
    genes: list[Any] = []
    driftEnabled: Any = False
    now: Time | None = None
    as_of: Seq | None = None


class KgAdviceResponse(msgspec.Struct):
    currentSignalKey: str
    preferredGeneId: Any
    bannedGeneIds: list[Any]
    explanation: list[str]


class KgIngestRequest(msgspec.Struct):
    """One evolver memory-graph write: ``kind`` and the ``event`` as evolver sends it."""

    kind: str
    event: dict[str, Any]


class KgIngestResponse(msgspec.Struct):
    ok: bool
    stored: bool
    seq: int | None = None
    id: str | None = None
    duplicate: bool = False
    reason: str | None = None


class DreamRequest(msgspec.Struct, forbid_unknown_fields=True):
    """Dream the traces no cycle has consumed yet (the heuristic dreamer)."""

    max_traces: Annotated[int, msgspec.Meta(ge=1)] | None = None
    batch_size: Annotated[int, msgspec.Meta(ge=1)] | None = None
    compact: bool = False


class RememberRequest(msgspec.Struct, forbid_unknown_fields=True):
    """Write a note to a branch (deduplicated; ``backbone`` is permanent); ``kind`` lesson
    (or strategy) writes a lesson, credited and decayed like a dreamed strategy."""

    branch: Annotated[str, msgspec.Meta(min_length=1, examples=["deploy"])]
    text: Annotated[str, msgspec.Meta(examples=["run the blue-green script, then check /health"])]
    tags: list[str] = []
    kind: Literal["note", "lesson", "strategy"] = "note"
    author: Annotated[str, msgspec.Meta(max_length=64, examples=["agent"])] = ""


class RecallRequest(msgspec.Struct, forbid_unknown_fields=True):
    """The memory items to inject for ``query``, within ``budget_chars``; ``record`` appends
    the ``recall`` event that credits and decays them (it needs a write token)."""

    query: Annotated[
        str, msgspec.Meta(max_length=MAX_TASK_CHARS, examples=["deploy the web service"])
    ]
    budget_chars: Annotated[int, msgspec.Meta(ge=0)] | None = None
    top_n: Annotated[int, msgspec.Meta(ge=0)] | None = None
    threshold: float | None = None
    branches: list[str] | None = None
    include_dead: bool = False
    action_id: str = ""
    record: bool = True
    #: The task's signals: gene items tried for them compete with the other items.
    signals: Annotated[list[str], msgspec.Meta(examples=[["log_error"]])] = []


class FeedbackRequest(msgspec.Struct, forbid_unknown_fields=True):
    """A verdict on a memory item (ACE counters and a ledger credit)."""

    item: Annotated[str, msgspec.Meta(min_length=1)]
    verdict: Literal["helpful", "harmful", "neutral"]
    note: str | None = None
    #: The attempt the verdict is about: it replaces the verdict that attempt's outcome gave.
    action_id: str = ""
