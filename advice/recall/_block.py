"""The ready-to-inject text block, within a character budget.

One entry per item, best first: a strategy with its ordered steps and its "do not"
constraints, a note with its branch and tags, a gene with the signals it was tried for and
its outcomes; then, when signals were given, the advised
gene and the banned ones. Entries are added while the whole block (header and footer
included) stays within the budget; the first entry that would push it past stops the block
(as the reference does), so what is injected is always a prefix of the ranking. A budget
too small for the frame and one entry gives the empty string: nothing is injected.
"""

from __future__ import annotations

from collections.abc import Sequence

from evolog.projections.memory import GENE, STRATEGY, MemoryItem

__all__ = ["FOOTER", "HEADER", "entry_text", "render"]

HEADER = "<evolog-memory>\nFrom this agent's memory (use what applies; ids in brackets):\n"
FOOTER = "</evolog-memory>"
_MAX_STEPS = 12


def entry_text(item: MemoryItem) -> str:
    """One item as lines of the block."""
    if item.kind == STRATEGY:
        lines = [f"- Strategy [{item.id}]: {_one_line(item.text)}"]
        steps = item.steps[:_MAX_STEPS]
        if steps:
            lines.append(
                "  Steps: " + " ".join(f"{n}) {_one_line(s)}" for n, s in enumerate(steps, 1))
            )
    elif item.kind == GENE:
        lines = [f"- Gene [{item.id}]: {_one_line(item.text)}"]
    else:
        tags = f" ({', '.join(item.tags)})" if item.tags else ""
        lines = [f"- Note [{item.id}] {item.branch}{tags}: {_one_line(item.text)}"]
    if item.constraints:
        lines.append("  Do not: " + "; ".join(_one_line(c) for c in item.constraints))
    return "\n".join(lines) + "\n"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def render(items: Sequence[MemoryItem], budget: int, extra: Sequence[str] = ()) -> tuple[str, int]:
    """The block for ``items`` (then the ``extra`` lines), and how many items it holds."""
    frame = len(HEADER) + len(FOOTER)
    body: list[str] = []
    used = frame
    kept = 0
    for item in items:
        text = entry_text(item)
        if used + len(text) > budget:
            break
        body.append(text)
        used += len(text)
        kept += 1
    for line in extra:
        text = _one_line(line) + "\n"
        if used + len(text) > budget:
            break
        body.append(text)
        used += len(text)
    if not body:
        return "", 0
    out = HEADER + "".join(body) + FOOTER
    assert len(out) <= budget
    return out, kept
