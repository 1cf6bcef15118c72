"""evolver's remote memory graph: ``POST /kg/advice`` and ``POST /kg/ingest``.

Shapes are exactly what evolver's remote adapter sends and reads (bearer
``MEMORY_GRAPH_REMOTE_KEY``). Advice is the store's :class:`~evolog.advice.AdviceEngine`
with the configured policy (``evolver`` by default), so it is what ``evolog advise --policy
evolver`` answers on the same history. Ingest answers as soon as the event is acknowledged:
evolver fires and forgets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from anyio import to_thread
from starlette.responses import Response

from .._body import decode, read_body
from .._http import AppState, endpoint, json_response
from .._types import KgAdviceRequest, KgIngestRequest, KgIngestResponse
from ._map import derived_id, ingest_event

if TYPE_CHECKING:
    from starlette.requests import Request

KG_BODY_LIMIT = 4 << 20
_KNOWN_KINDS = frozenset(
    {"signal", "hypothesis", "attempt", "outcome", "external_candidate", "confidence_edge",
     "confidence_gene_outcome"}
)  # fmt: skip


def _advice(state: AppState, req: KgAdviceRequest) -> dict[str, Any]:
    def run(engine: Any) -> dict[str, Any]:
        advice = engine.advise(
            req.signals, req.genes, policy=state.config.kg_policy, drift=req.driftEnabled,
            now=req.now, as_of=req.as_of,
        )  # fmt: skip
        out: dict[str, Any] = advice.to_json()
        return out

    return state.store.with_advice(run)


@endpoint("kg", "kg_advice")
async def kg_advice(request: Request, state: AppState) -> Response:
    """evolver's getAdvice: ``{signals, genes, driftEnabled}`` -> ``{currentSignalKey,
    preferredGeneId, bannedGeneIds, explanation}`` (plus evolog's evidence)."""
    req = decode(await read_body(request, KG_BODY_LIMIT), KgAdviceRequest)
    return json_response(await to_thread.run_sync(_advice, state, req))


@endpoint("kg", "kg_ingest")
async def kg_ingest(request: Request, state: AppState) -> Response:
    """One evolver memory-graph write, ``{kind, event}``, appended losslessly."""
    req = decode(await read_body(request, KG_BODY_LIMIT), KgIngestRequest)
    state.metrics.kg_ingested[req.kind if req.kind in _KNOWN_KINDS else "other"] += 1
    event = ingest_event(req.kind, req.event)
    if event is None:
        out = KgIngestResponse(ok=True, stored=False, reason=f"kind {req.kind!r} is not stored")
        return json_response(out, 202)
    committer = state.store.committer
    (receipt,) = await committer.submit([event], "event")
    if receipt.duplicate:
        # evolver ids are not unique (two snapshots in one millisecond share one): the same
        # id with other content is stored under a derived id, never dropped.
        differs = await to_thread.run_sync(
            state.store.reader.stored_differs, [(event, receipt.seq)]
        )
        if differs[0]:
            again = ingest_event(req.kind, req.event, derived_id(event, req.event))
            assert again is not None  # the kind was stored a moment ago
            (receipt,) = await committer.submit([again], "event")
    state.metrics.appended(0 if receipt.duplicate else 1, 1 if receipt.duplicate else 0)
    out = KgIngestResponse(
        ok=True, stored=True, seq=receipt.seq, id=receipt.id, duplicate=receipt.duplicate
    )
    return json_response(out)
