"""Memory's methods return the real types (so editors and mypy can help), and what they
return at run time is what they say."""

from __future__ import annotations

import typing
from pathlib import Path

from evolog.advice import Advice, RouteDecision
from evolog.dream import DreamReport
from evolog.projections import LedgerView, Projections

import evolog
import evolog._memory as memory_module
from evolog import Memory

EXPECTED = {
    "projections": Projections,
    "advise": Advice,
    "dream": DreamReport,
    "route": RouteDecision,
    "ledger": LedgerView,
}


def _return_type(name: str) -> object:
    from collections.abc import Sequence

    import evolog.advice as advice
    import evolog.dream as dream
    import evolog.projections as projections
    import pyarrow as pa
    from evolog.dream._cycle import Progress
    from evolog.projections.energy.rules._host import Similarity

    names = {n: getattr(p, n) for p in (advice, dream, projections) for n in p.__all__}
    names.update(vars(memory_module), Sequence=Sequence, pa=pa, Progress=Progress)
    names["Similarity"] = Similarity
    return typing.get_type_hints(getattr(Memory, name), globalns=names)["return"]


def test_declared_return_types_are_the_real_classes() -> None:
    assert {name: _return_type(name) for name in EXPECTED} == EXPECTED


def test_returned_values_match_the_declared_types(tmp_path: Path) -> None:
    with Memory(tmp_path / "s") as mem:
        mem.append(evolog.Signal(signals=["log_error"]))
        mem.append(evolog.Attempt(id="a1", gene="g1", task="fix the failing import"))
        mem.append(evolog.Step(action_id="a1", index=0, action="pin the dependency", ok=True))
        mem.append(evolog.Outcome(action_id="a1", status="success", delta=1.0))
        got = {
            "projections": mem.projections(),
            "advise": mem.advise(["log_error"], ["g1"]),
            "dream": mem.dream(),
            "route": mem.route("fix the failing import"),
            "ledger": mem.ledger(),
        }
    assert {name: type(value) for name, value in got.items()} == EXPECTED
