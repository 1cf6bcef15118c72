"""Following a strategy: its steps in order, with drift checks that can jump elsewhere.

A :class:`Traversal` starts from a MEMORY_TRAVERSAL (or CONTEXT_JUMP) decision. The agent
takes steps with :meth:`Traversal.next_step` and reports what it is working on with
:meth:`Traversal.observe`; when that context drifts below the router's anomaly threshold the
traversal jumps to the new entry point (CONTEXT_JUMP) or is abandoned (ZERO_SHOT).
"""

from __future__ import annotations

from ._router import InvalidTaskError, Plan, PlanStep, RouteDecision, Router, RouterPath

__all__ = ["Traversal"]


class Traversal:
    """A walk through one strategy's steps; see the module docstring."""

    def __init__(self, router: Router, decision: RouteDecision) -> None:
        if decision.entry is None or decision.path is RouterPath.ZERO_SHOT:
            raise InvalidTaskError(
                f"a traversal starts from a memory decision; got {decision.path.value}"
            )
        self.router = router
        self.plan: Plan = router.plan(decision.entry.node)
        self.position = 0
        self.abandoned = False
        self.jumps: list[str] = []

    @classmethod
    def start(cls, router: Router, task: str) -> Traversal | None:
        """Route ``task`` and start a traversal, or None when the router says ZERO_SHOT."""
        decision = router.route(task)
        return None if decision.entry is None else cls(router, decision)

    @property
    def node(self) -> str:
        """The node being followed."""
        return self.plan.node

    def next_step(self) -> PlanStep | None:
        """The next step in order, or None when the strategy is done (or abandoned)."""
        if self.abandoned or self.position >= len(self.plan.steps):
            return None
        step = self.plan.steps[self.position]
        self.position += 1
        return step

    def remaining(self) -> tuple[PlanStep, ...]:
        """Steps not taken yet."""
        return () if self.abandoned else self.plan.steps[self.position :]

    def observe(self, context: str) -> RouteDecision:
        """Check ``context`` for drift; on CONTEXT_JUMP continue from the new entry point."""
        decision = self.router.route(context, current=self.node)
        if decision.path is RouterPath.CONTEXT_JUMP and decision.entry is not None:
            self.jumps.append(self.node)
            self.plan = self.router.plan(decision.entry.node)
            self.position = 0
        elif decision.path is RouterPath.ZERO_SHOT:
            self.abandoned = True
        return decision
