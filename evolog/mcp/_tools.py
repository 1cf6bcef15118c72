"""The MCP tools: what an agent may ask of its memory, each with a schema and examples.

Every tool calls the same code the HTTP routes call, on the same store object (the server's
group-committed writer and snapshot readers), so an answer over MCP is the answer over
``/v1``. Failures the caller can fix come back as tool errors with the one-line message the
HTTP API gives; nothing raw leaks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from anyio import to_thread
from pydantic import Field

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from evolog.server import AppState


def _fail(exc: BaseException) -> Exception:
    from mcp.server.mcpserver.exceptions import ToolError

    from evolog.server import problem_of

    problem = problem_of(exc)
    where = f" (field: {problem.field})" if problem.field else ""
    return ToolError(f"{problem.message}{where}")


def register(server: MCPServer, state: AppState) -> None:
    """Add the tools to ``server``, all acting on ``state``'s store."""
    from mcp_types import ToolAnnotations

    from evolog.server import (
        AdviseRequest,
        RecallRequest,
        RememberRequest,
        RouteRequest,
        SqlRequest,
    )
    from evolog.server.routes import advise_json, route_json, sql_result

    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)

    @server.tool(
        annotations=read_only,
        description=(
            "Which gene (strategy) to use for a set of signals, and which to avoid, from "
            "the outcomes recorded so far. Example: advise(signals=['test_failure', "
            "'errsig:AssertionError'], genes=[{'type': 'Gene', 'id': 'gene_retry'}, "
            "{'type': 'Gene', 'id': 'gene_fix_root_cause'}]) -> {'preferredGeneId': ..., "
            "'bannedGeneIds': [...], 'explanation': [...], 'status': 'prefer'|'explore'|...}"
        ),
    )
    async def advise(
        signals: Annotated[list[str], Field(description="what was observed, e.g. error signals")],
        genes: Annotated[
            list[dict[str, Any]],
            Field(description="candidate genes, each {'type': 'Gene', 'id': ..., 'category': ...}"),
        ],
        policy: Annotated[
            Literal["evolog", "evolver"], Field(description="decision rule")
        ] = "evolog",
    ) -> dict[str, Any]:
        req = AdviseRequest(signals=signals, genes=genes, policy=policy)
        try:
            return await to_thread.run_sync(advise_json, state, req)
        except Exception as exc:
            raise _fail(exc) from None

    @server.tool(
        annotations=read_only,
        description=(
            "Route a task to memory: zero_shot (nothing applies), memory_traversal (a "
            "strategy node with its steps and 'do not' constraints) or context_jump. "
            "Example: route(task='the CI test suite is flaky, fix it') -> {'path': "
            "'memory_traversal', 'entry': {...}, 'plan': {'steps': [...]}}"
        ),
    )
    async def route(
        task: Annotated[str, Field(min_length=1, description="the task, in words")],
        top_k: Annotated[int, Field(ge=1, le=100, description="candidates considered")] = 5,
    ) -> dict[str, Any]:
        try:
            from evolog import shown_route

            return shown_route(
                await to_thread.run_sync(route_json, state, RouteRequest(task, top_k))
            )
        except Exception as exc:
            raise _fail(exc) from None

    @server.tool(
        annotations=read_only,
        description=(
            "Run one read-only SQL query (DuckDB) over the memory: views events, signals, "
            "attempts, steps, outcomes, notes, feedback, ..., traces, edges, gene_priors. "
            'Anything that is not a single SELECT is refused. Example: sql(query="SELECT '
            'gene, count(*) AS n FROM attempts GROUP BY gene ORDER BY n DESC") -> '
            "{'columns': ['gene', 'n'], 'rows': [{'gene': 'gene_retry', 'n': 3}], ...}"
        ),
    )
    async def sql(
        query: Annotated[str, Field(min_length=1, description="one read-only SQL statement")],
        max_rows: Annotated[int, Field(ge=1, le=10_000, description="rows returned")] = 200,
    ) -> dict[str, Any]:
        import msgspec

        req = SqlRequest(query=query, max_rows=max_rows)
        try:
            body, _ = await sql_result(state, req)
        except Exception as exc:
            raise _fail(exc) from None
        out: dict[str, Any] = msgspec.json.decode(body)
        return out

    @server.tool(
        annotations=read_only,
        description=(
            "Find recorded events whose text contains a phrase (case-insensitive), newest "
            "first, optionally of some kinds. Example: search_events(text='timeout', "
            "kinds=['outcome', 'step'], limit=5) -> {'events': [{'seq': 41, 'kind': "
            "'step', ...}], 'count': 1}"
        ),
    )
    async def search_events(
        text: Annotated[str, Field(description="phrase to look for ('' matches all)")] = "",
        kinds: Annotated[
            list[str] | None, Field(description="event kinds, e.g. ['attempt', 'outcome']")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=500, description="events returned")] = 20,
    ) -> dict[str, Any]:
        from evolog.server.routes import search_events as run

        try:
            found = await to_thread.run_sync(run, state.store.paths, text, kinds, limit)
        except Exception as exc:
            raise _fail(exc) from None
        return {"events": found, "count": len(found)}

    @server.tool(
        description=(
            "Remember a lesson for later tasks, in a branch (a topic; 'backbone' is "
            "permanent). A near-copy of a note in the branch supersedes it. kind='lesson' "
            "(or 'strategy'): recalled with how often it worked, credited by the outcomes of "
            "the tasks it is injected into, and dropped once it keeps failing. Example: "
            "remember(branch='deploy', text='run the blue-green script, then check /health', "
            "kind='lesson') -> {'item': '01J...', 'superseded': False, 'kind': 'lesson', ...}"
        ),
    )
    async def remember(
        branch: Annotated[str, Field(min_length=1, description="topic, e.g. 'deploy'")],
        text: Annotated[str, Field(min_length=1, description="the lesson, in a sentence or two")],
        tags: Annotated[list[str], Field(description="labels")] = [],  # noqa: B006
        kind: Annotated[
            Literal["note", "lesson", "strategy"],
            Field(description="'lesson' (or 'strategy'): credited and can die; 'note': kept"),
        ] = "note",
    ) -> dict[str, Any]:
        from evolog.server.routes import remember_json

        # Written over MCP: the agent is the author.
        req = RememberRequest(branch=branch, text=text, tags=list(tags), kind=kind, author="agent")
        try:
            return await to_thread.run_sync(remember_json, state, req)
        except Exception as exc:
            raise _fail(exc) from None

    @server.tool(
        description=(
            "Recall what memory holds for a task: strategies with their steps and 'do not' "
            "constraints, and notes, best first, within a character budget. Read 'text' (an "
            "index: memory_get gives the details of the ids you use); after the task call "
            "record_outcome with the same action_id so the items are credited. Example: "
            "recall(query='deploy the web service', action_id='task-7') "
            "-> {'text': '...block to read...', 'items': [{'id': '01J...', 'score': 0.62, "
            "'why': '...'}], ...}"
        ),
    )
    async def recall(
        query: Annotated[str, Field(min_length=1, description="the task or question")],
        budget_chars: Annotated[int, Field(ge=0, description="most characters of text")] = 4000,
        top_n: Annotated[int, Field(ge=0, description="most items")] = 10,
        action_id: Annotated[str, Field(description="the task this recall serves")] = "",
        signals: Annotated[
            list[str], Field(description="the task's signals: genes tried for them compete")
        ] = [],  # noqa: B006
    ) -> dict[str, Any]:
        from evolog import shown_json
        from evolog.server.routes import recall_json

        req = RecallRequest(
            query=query,
            budget_chars=budget_chars,
            top_n=top_n,
            action_id=action_id,
            signals=list(signals),
        )
        try:
            return shown_json(await to_thread.run_sync(recall_json, state, req))
        except Exception as exc:
            raise _fail(exc) from None

    @server.tool(
        description=(
            "The details of memory items by the ids the recall block shows in brackets: "
            "whole text, ordered steps, 'do not' constraints, evidence. Fetch the items you "
            "use: a fetched item is credited as used when the task's outcome arrives, the "
            "others shown as passed over. Example: memory_get(ids=['m3f2a1']) -> {'text': "
            "'...details to read...', 'items': [{'id': '01J...', 'steps': [...], ...}]}"
        ),
    )
    async def memory_get(
        ids: Annotated[
            list[str],
            Field(min_length=1, max_length=32, description="ids from the block, e.g. ['m3f2a1']"),
        ],
        action_id: Annotated[
            str, Field(description="the task this serves ('' in Claude Code: the open one)")
        ] = "",
    ) -> dict[str, Any]:
        from evolog.server.routes import fetch_json

        try:
            return await to_thread.run_sync(fetch_json, state, list(ids), action_id, "mcp")
        except Exception as exc:
            raise _fail(exc) from None

    @server.tool(
        description=(
            "Record how a task ended, crediting the memories used: the items recalled for "
            "its action_id (unless supported_by names others), and decided_by. A success "
            "credits them (+1), a failure debits them (-1), in the survival ledger, edges "
            "and advice. In Claude Code, pass the attempt id the memory block names (or none): "
            "the hook then records the task's one outcome at the turn's end, with this report "
            "in it. Example: record_outcome(action_id='task-7', status='success', "
            "score=0.9, note='deployed') -> {'seq': 57, 'id': '...', 'credited': ['01J...']}"
        ),
    )
    async def record_outcome(
        status: Annotated[
            Literal["success", "failed", "partial", "interrupted", "abandoned", "unknown"],
            Field(description="how it ended"),
        ],
        action_id: Annotated[str, Field(description="the task's action id ('' if none)")] = "",
        score: Annotated[float | None, Field(ge=0, le=1, description="quality 0..1")] = None,
        note: Annotated[str | None, Field(description="what happened, briefly")] = None,
        decided_by: Annotated[
            list[str], Field(description="ids of the memories that decided the action")
        ] = [],  # noqa: B006 - pydantic copies defaults
        supported_by: Annotated[
            list[str], Field(description="ids of memories that supported it (default: recalled)")
        ] = [],  # noqa: B006
        signals: Annotated[list[str], Field(description="signals it was about")] = [],  # noqa: B006
        gene: Annotated[str | None, Field(description="the gene/strategy used")] = None,
    ) -> dict[str, Any]:
        import os

        from evolog.eventlog import Outcome
        from evolog.hook import HOOK_PREFIX, Report, join_report, outcome_id
        from evolog.server.routes import recalled_items

        try:
            supported = list(supported_by)
            if not supported and action_id:
                supported = await to_thread.run_sync(recalled_items, state, action_id)
            # A task the Claude Code hook holds open gets one outcome, written by the hook at
            # the turn's end with this report in it (see evolog.hook._credit).
            report = Report(
                status=status, score=score, note=note, decided_by=list(decided_by),
                supported_by=supported, signals=list(signals), gene=gene,
            )  # fmt: skip
            root = state.store.paths.root
            joined = await to_thread.run_sync(join_report, root, action_id, os.getcwd(), report)
            if joined is not None:
                return {"seq": None, "id": outcome_id(joined), "credited": [], "joined": joined}
            credited = [*decided_by, *supported]
            # As the hook's Stop does: a verdict moves the credited entries by one.
            delta = {"success": 1.0, "failed": -1.0}.get(status) if credited else None
            event = Outcome(
                id=outcome_id(action_id) if action_id.startswith(HOOK_PREFIX) else "",
                action_id=action_id, status=status, score=score, note=note, delta=delta,
                decided_by=list(decided_by), supported_by=supported, signals=list(signals),
                gene=gene, agent="mcp",
            )  # fmt: skip
            (receipt,) = await state.store.committer.submit([event], "outcome")
        except Exception as exc:
            raise _fail(exc) from None
        if receipt.duplicate:  # that hook attempt was closed and credited already
            return {"seq": receipt.seq, "id": receipt.id, "credited": [], "duplicate": True}
        return {"seq": receipt.seq, "id": receipt.id, "credited": credited}
