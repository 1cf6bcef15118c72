"""Does a stored memory apply to a task? Similarity alone says "shares words", not "applies".

A task close to a node in embedding space is not necessarily about it: with a static
embedder every software task is fairly close to every software node ("implement a trie for
fast prefix autocomplete" sits at 0.38 from "automate TestFlight uploads with fastlane").
So a node applies only when two pieces of evidence agree:

* **similarity**: the cosine similarity of the task to the node reaches ``min_similarity``;
* **margin over the null**: the task is closer to the node than to *any* generic task of
  :data:`~advice.routing._background.BACKGROUND_TASKS` by at least ``min_margin``. Those tasks are a
  fixed sample of "what tasks that are not about this memory look like"; a task that is as
  close to one of them as to the node is explained just as well by "some other job that
  merely shares vocabulary", and memory is not claimed. Generic tasks that are themselves
  within ``topic_radius`` of the node are *about* it (the sample has "add an index to speed
  up a query"; a node about a slow SQL query must not compete with it), so they are left
  out of that node's null.

Two refinements of the margin, per embedder (``summary_margin``, ``lexical_weight``): the
similarity it starts from may be the one to the node's goal-with-summary text (its method
as well as its problem: a task sharing only a tool name with the goal matches the goal
text best), and it may add ``lexical_weight`` times the lexical margin of
:mod:`advice.routing._lexical` (the task's rare terms the node covers, beyond what the best
generic task covers). Both cut the unrelated tasks that reached memory on held-out domains
by about a quarter at the same related rate.

The null is a search of ~160 fixed vectors per candidate, whatever the store's size, and it
works for a store of two nodes as well as for one of ten thousand. The rule and its
thresholds were chosen by cross-validation over held-out domains
(bench/bench_router_holdout.py, bench/RESULTS.md); :func:`judge` is the single place that
decides, so recall can ask the same question.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import struct
import threading
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import msgspec
from evolog.eventlog import note_damage, write_parts
from evolog.projections import Embedder
from evolog.projections.graph import Rows, embed_rows, floats

from ._background import BACKGROUND_TASKS
from ._lexical import lexical_evidence

__all__ = [
    "DEFAULT_RULES",
    "Applicability",
    "ApplicabilityRule",
    "NullSample",
    "applicability",
    "judge",
    "null_for",
    "null_sample",
    "rule_for",
]


@dataclass(frozen=True, slots=True)
class ApplicabilityRule:
    """Thresholds of :func:`judge`: both must be met for a memory to apply.

    ``summary_margin``: the margin starts from the similarity to the node's goal-with-summary
    text rather than its best text; ``lexical_weight``: the weight of the lexical margin.
    """

    min_similarity: float
    min_margin: float
    topic_radius: float = 0.4
    lexical_weight: float = 0.0
    summary_margin: bool = False


DEFAULT_RULES: Final[Mapping[str, ApplicabilityRule]] = {
    "hashing-1024": ApplicabilityRule(0.19, 0.01, 0.4),
    "wordllama-l2-256": ApplicabilityRule(0.20, 0.05, 0.4, 0.2, True),
    # Fitted on set A alone (bench_router_holdout.py fit --embedder minilm --splits 1), so
    # that set B measures it held out.
    "minilm-l6-int8-1.0.0": ApplicabilityRule(0.31, 0.01, 0.4, 0.1, True),
}
"""Per embedder name; see bench/RESULTS.md for how each was fitted and what it gives."""
_FALLBACK_RULE: Final = ApplicabilityRule(0.5, 0.05)


def rule_for(embedder_name: str) -> ApplicabilityRule:
    """The calibrated rule for an embedder (a strict fallback for unknown ones)."""
    return DEFAULT_RULES.get(embedder_name, _FALLBACK_RULE)


class Applicability(msgspec.Struct, frozen=True):
    """The verdict with its evidence, for explanations and for callers that rank."""

    applies: bool
    similarity: float
    null_similarity: float
    margin: float
    nearest_generic: str
    why: str
    lexical: float = 0.0


class NullSample:
    """The background tasks embedded once (per process) with one embedder.

    With a ``cache`` directory the vectors are kept there (keyed by the embedder's name and
    a digest of the texts), so a cold process loads them instead of embedding ~160 texts:
    raw float32 rows after a header with their count, dimension and CRC-32, read without
    numpy (:mod:`evolog.projections.graph._lean`).
    """

    def __init__(
        self,
        embedder: Embedder,
        texts: tuple[str, ...] = BACKGROUND_TASKS,
        cache: str | None = None,
    ) -> None:
        self.texts = texts
        self.dim = embedder.dim
        path = _cache_path(cache, embedder, texts) if cache is not None else None
        data = _load(path, len(texts), embedder.dim) if path is not None else None
        if data is None:
            data = embed_rows(embedder, list(texts)).data.tobytes()
            if path is not None:
                # A cache: a failure to write it costs the next cold process ~30 ms, no more.
                header = _HEADER.pack(_MAGIC, len(texts), embedder.dim, zlib.crc32(data))
                with contextlib.suppress(OSError):
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    write_parts(path, [header, data])
        self.rows = Rows(data, embedder.dim)

    @property
    def vectors(self) -> Any:
        """The sample's vectors as an ``(n, dim)`` float32 numpy array."""
        return self.rows.array()

    def nearest(self, vector: Any, node: Any = None, radius: float = 2.0) -> tuple[float, str]:
        """The best similarity of ``vector`` to a background task, and that task.

        With ``node`` (the node's text vectors, one per row, as :class:`Rows` or an array),
        background tasks within ``radius`` of any of them are about the node and left out.
        """
        query = floats(vector)
        if not len(self.texts) or not any(query):
            return 0.0, ""
        scores = self.rows.dots(query)
        own = node if isinstance(node, Rows) or node is None else Rows(node, self.dim)
        if own is not None and len(own):
            near = [-2.0] * len(scores)
            for j in range(len(own)):
                near = list(map(max, near, self.rows.dots(own.row(j))))
            scores = [s if m < radius else -2.0 for s, m in zip(scores, near, strict=True)]
        best = max(range(len(scores)), key=scores.__getitem__)  # the first best, as argmax
        if scores[best] <= -2.0:
            return 0.0, ""
        return scores[best], self.texts[best]


_MAGIC: Final = b"EVNULL1\0"
_HEADER: Final = struct.Struct("<8sQQI")  # magic, rows, dim, CRC-32 of the data


def _cache_path(directory: str, embedder: Embedder, texts: tuple[str, ...]) -> str:
    digest = hashlib.blake2b("\n".join(texts).encode(), digest_size=8).hexdigest()
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in embedder.name)
    return os.path.join(directory, f"null-{safe}-{digest}.f32")


def _load(path: str, rows: int, dim: int) -> bytes | None:
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError:
        return None
    if len(raw) != _HEADER.size + 4 * rows * dim:
        return None
    data = raw[_HEADER.size :]
    if _HEADER.unpack_from(raw) != (_MAGIC, rows, dim, zlib.crc32(data)):
        note_damage(path, "the generic sample's checksum or header does not match")
        return None
    return data


_SAMPLES: dict[str, NullSample] = {}
_SAMPLES_LOCK = threading.Lock()


def null_sample(embedder: Embedder, cache: str | None = None) -> NullSample:
    """The shared :class:`NullSample` of ``embedder`` (embedded on first use, or loaded from
    ``cache`` when an earlier process left it there)."""
    with _SAMPLES_LOCK:
        sample = _SAMPLES.get(embedder.name)
        if sample is None:
            sample = _SAMPLES[embedder.name] = NullSample(embedder, cache=cache)
        return sample


def null_for(
    embedder: Embedder,
    task: Any,
    node: Any,
    rule: ApplicabilityRule,
    cache: str | None = None,
) -> tuple[float, str]:
    """The task's null for one node: its nearest generic task not about that node.

    ``task`` is a float32 vector and ``node`` the node's text vectors (:class:`Rows` or an
    ``(n, dim)`` array), as :meth:`NullSample.nearest` takes them."""
    return null_sample(embedder, cache).nearest(task, node, rule.topic_radius)


def applicability(
    embedder: Embedder,
    task: Any,
    node: Any,
    similarity: float | None = None,
    *,
    rule: ApplicabilityRule | None = None,
    cache: str | None = None,
    task_text: str | None = None,
    node_texts: Sequence[str] = (),
) -> Applicability:
    """Does a memory whose texts embed to ``node`` (rows) apply to the task vector ``task``?

    The one call for callers outside the router (recall): ``similarity`` defaults to the
    best cosine of ``task`` to a row of ``node``; ``rule`` to the embedder's calibrated one.
    Rows are in :func:`~evolog.projections.graph._types.node_texts` order (the goal with its
    summary last), which a ``summary_margin`` rule relies on; the lexical margin needs the
    texts themselves (``task_text`` and ``node_texts``) and counts 0 without them.
    """
    rule = rule or rule_for(embedder.name)
    rows = node if isinstance(node, Rows) else Rows(node, embedder.dim)
    dots = rows.dots(task)
    if similarity is None:
        similarity = max(dots, default=0.0)
    lexical = 0.0
    if rule.lexical_weight and task_text is not None and node_texts:
        lexical = lexical_evidence().margin(task_text, node_texts)
    null = null_for(embedder, task, rows, rule, cache)
    return judge(similarity, null, rule, summary=dots[-1] if dots else None, lexical=lexical)


def judge(
    similarity: float,
    null: tuple[float, str],
    rule: ApplicabilityRule,
    *,
    summary: float | None = None,
    lexical: float = 0.0,
) -> Applicability:
    """Whether a memory at ``similarity`` to the task applies, given the task's ``null``.

    ``null`` is :meth:`NullSample.nearest` of the task's vector with the node's vectors and
    ``rule.topic_radius`` (see :func:`null_for`); ``summary`` the similarity to the node's
    goal-with-summary text (the margin's start under a ``summary_margin`` rule; None: the
    node has no summary) and ``lexical`` the lexical margin (:mod:`advice.routing._lexical`).
    """
    null_sim, generic = null
    start = summary if rule.summary_margin and summary is not None else similarity
    margin = start - null_sim + rule.lexical_weight * lexical
    words = f", lexical {lexical:+.3f}" if rule.lexical_weight else ""
    if similarity < rule.min_similarity:
        why = f"similarity {similarity:.3f} < floor {rule.min_similarity:.2f}"
        applies = False
    elif margin < rule.min_margin:
        why = (
            f"similarity {similarity:.3f} is only {margin:+.3f} over the generic task"
            f" {generic!r} ({null_sim:.3f}{words}; needs {rule.min_margin:+.2f})"
        )
        applies = False
    else:
        why = (
            f"similarity {similarity:.3f} (floor {rule.min_similarity:.2f}), {margin:+.3f}"
            f" over the nearest generic task{words} (needs {rule.min_margin:+.2f})"
        )
        applies = True
    return Applicability(
        applies, round(similarity, 6), round(null_sim, 6), round(margin, 6), generic, why,
        round(lexical, 6),
    )  # fmt: skip
