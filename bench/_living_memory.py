"""Living Memory's rules (seed 004 and its reference code), reimplemented as a bench baseline.

Only what the closed-loop benchmark needs, written from the rules in
docs/reference/memory-items.md (the values of Living Memory's code where the
seed's README differs): tokens ``[a-z0-9]+`` longer than one character, raw TF node vectors,
dedup on write at TF cosine >= 0.85 within a branch (content replaced, one access, snapshot
reset, tags united), retrieval by TF-IDF query (``ln(N / df)``, unseen words ``ln 2``) x
raw-TF node cosine x decay ``exp(-0.5 * (S - snapshot) / max(S, 1))`` (backbone: no decay),
threshold 0.35, first 10, stop at the first node past 4000 characters; every injected node
counts two accesses (the reference's defect, kept: this is the baseline); branch OLS after
each non-backbone write: at least 3 nodes and more than 1.618 x the mean size of the
non-backbone branches (itself included) merges all the branch's nodes into one. No survival,
no feedback: the reference has neither.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

_TOKEN = re.compile(r"[a-z0-9]+")


def _tf(text: str) -> dict[str, float]:
    toks = [t for t in _TOKEN.findall(text.lower()) if len(t) > 1]
    out: dict[str, float] = {}
    for t in toks:
        out[t] = out.get(t, 0.0) + 1.0
    return {t: c / len(toks) for t, c in out.items()} if toks else {}


def _cos(a: dict[str, float], b: dict[str, float]) -> float:
    dot = sum(v * b.get(k, 0.0) for k, v in a.items())
    na = math.sqrt(sum(v * v for v in a.values()))
    nb = math.sqrt(sum(v * v for v in b.values()))
    return dot / (na * nb) if dot and na and nb else 0.0


@dataclass
class _Node:
    id: int
    branch: str
    content: str
    tf: dict[str, float]
    snapshot: int
    accesses: int = 0
    active: bool = True
    tags: list[str] = field(default_factory=list)


class LivingMemory:
    """In-memory Living Memory tree (the reference keeps it in SQLite; rules unchanged)."""

    def __init__(self, threshold: float = 0.35, top_n: int = 10, budget: int = 4000) -> None:
        self.nodes: list[_Node] = []
        self.system_accesses = 0
        self.threshold, self.top_n, self.budget = threshold, top_n, budget

    def remember(self, branch: str, content: str) -> None:
        tf = _tf(content)
        for node in self.nodes:
            if node.active and node.branch == branch and _cos(tf, node.tf) >= 0.85:
                node.content, node.tf = content, tf
                node.accesses += 1
                node.snapshot = self.system_accesses
                return
        self.nodes.append(_Node(len(self.nodes), branch, content, tf, self.system_accesses))
        if branch != "backbone":
            self._branch_ols(branch)

    def _branch_ols(self, branch: str) -> None:
        sizes: dict[str, int] = {}
        for n in self.nodes:
            if n.active and n.branch != "backbone":
                sizes[n.branch] = sizes.get(n.branch, 0) + 1
        size = sizes.get(branch, 0)
        if size < 3 or size <= 1.618 * (sum(sizes.values()) / len(sizes)):
            return
        members = [n for n in self.nodes if n.active and n.branch == branch]
        seen: list[str] = []
        for n in members:
            for s in n.content.split("."):
                s = " ".join(s.split())
                if len(s) > 5 and s.lower() not in (x.lower() for x in seen):
                    seen.append(s)
        merged = ". ".join(seen)
        for n in members:
            n.active = False
        node = _Node(
            len(self.nodes),
            branch,
            merged,
            _tf(merged),
            max(n.snapshot for n in members),
            sum(n.accesses for n in members),
        )
        self.nodes.append(node)

    def recall(self, query: str) -> list[str]:
        """The injected node contents, best first."""
        active = [n for n in self.nodes if n.active]
        if not active:
            return []
        df: dict[str, int] = {}
        for n in active:
            for t in n.tf:
                df[t] = df.get(t, 0) + 1
        qtf = _tf(query)
        q = {
            t: w * (math.log(len(active) / df[t]) if t in df else math.log(2))
            for t, w in qtf.items()
        }
        scored = []
        for n in active:
            base = _cos(q, n.tf)
            if n.branch == "backbone":
                rel = base
            else:
                ratio = (self.system_accesses - n.snapshot) / max(self.system_accesses, 1)
                rel = base * math.exp(-0.5 * ratio)
            rel = round(rel, 6)
            if rel >= self.threshold:
                scored.append((rel, n.id, n))
        scored.sort(key=lambda x: (-x[0], x[1]))
        out: list[str] = []
        used = 0
        for _, _, n in scored[: self.top_n]:
            text = f"[{n.branch}] {n.content}"
            if used + len(text) > self.budget:
                break
            out.append(text)
            used += len(text)
        for n in (x[2] for x in scored[: len(out)]):
            n.accesses += 2  # counted twice per retrieval, as the reference does
            n.snapshot = self.system_accesses
        self.system_accesses += len(out)
        return out
