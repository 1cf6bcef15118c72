"""The item index is a cache: incremental == rebuild, deleting it changes no answer, and a
recall is a function of the log (replayed into another store it gives the same answer)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import msgspec
from evolog.advice.recall import render
from evolog.advice.recall._block import entry_text, index_line, short_id
from evolog.eventlog import Attempt, ChildStep, Constraint, Merge, Node, Note, Outcome, Prune
from evolog.projections.memory import ItemIndex, MemoryConfig, MemoryItem
from evolog.projections.memory._fold import MAPS
from evolog.projections.memory._steps import same_steps
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import MEMORY_WORDS, memory_ops, texts

from evolog import Memory

QUERIES = (
    "deploy service nginx",
    "flaky test retry fixture",
    "postgres migration lock",
    "docker image build cache",
)


def canonical(index: ItemIndex) -> Any:
    """The fold state as plain data, whether its maps are dicts or checkpoint views."""
    st = index.fold.state
    state = msgspec.to_builtins(msgspec.structs.replace(st, **{m: {} for m in MAPS}))
    for m in MAPS:
        state[m] = msgspec.to_builtins(dict(sorted(getattr(st, m).items())))
    state["postings"] = {t: dict(sorted(ids.items())) for t, ids in state["postings"].items()}
    return state


def by_signals(mem: Memory) -> Any:
    """Recalls with signals (gene items compete), without the gene advice lines."""
    from evolog._recall import recall

    return [recall(mem.log, mem._items(), "x", signals=q.split(), record=False) for q in QUERIES]


def strategy_event(what: str, a: int, b: int, text: str) -> Any:
    node = f"s{a}"
    if what == "node":
        return Node(node=node, goal=text, summary=f"summary {text}", trigger_goals=[text])
    if what == "step":
        return ChildStep(node=node, index=b, action=text)
    if what == "constraint":
        return Constraint(node=node, trace="t", description=text)
    if what == "merge":
        return Merge(node=node, merged=f"s{b}")
    return Prune(node=node)


def run(mem: Memory, ops: list[tuple[Any, ...]]) -> None:
    written: list[str] = []
    merges: list[str] = []
    for op in ops:
        kind = op[0]
        if kind == "remember":
            r = mem.remember(op[1], op[2])
            written.append(r.item)
            if r.compressed:
                merges.append(r.compressed)
        elif kind == "recall":
            mem.recall(op[1])
        elif kind in ("feedback", "outcome", "constraint") and written:
            item = written[op[1] % len(written)]
            if kind == "feedback":
                # Some about an attempt (the outcome op's ids), whose verdict they replace.
                mem.feedback(item, op[2], action_id=f"a{len(written)}" if op[1] % 2 else "")
            elif kind == "outcome":
                mem.append(Outcome(action_id=f"a{len(written)}", status=op[2], supported_by=[item]))
            else:
                mem.append(Constraint(node=item, trace="t", description=op[2]))
        elif kind == "compress":
            merges.extend(mem.compress().archived)
        elif kind == "undo" and merges:
            # Already undone through an earlier retraction, or superseded away: refused.
            with contextlib.suppress(ValueError):
                mem.compress(undo=merges.pop())
        elif kind == "strategy":
            mem.append(strategy_event(*op[1:]))
        elif kind == "gene":
            mem.append_many(
                [
                    Attempt(gene=op[1], signals=op[2]),
                    Outcome(gene=op[1], status=op[3], signals=op[2]),
                ]
            )
        elif kind == "seal":
            mem.seal()
        elif kind == "refresh":
            mem.recall(QUERIES[0], record=False)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(memory_ops())
def test_incremental_equals_rebuild_and_the_cache_changes_no_answer(ops: list[Any]) -> None:
    root = tempfile.mkdtemp(prefix="evolog-mem-")
    try:
        with Memory(os.path.join(root, "s")) as mem:
            run(mem, ops)
            answers = [mem.recall(q, record=False) for q in QUERIES]
            genes = by_signals(mem)
            live = canonical(mem._items())
            with mem.log.snapshot() as snap:
                mem._items().save(snap)
        with Memory(os.path.join(root, "s")) as fresh:  # loads the checkpoint
            assert [fresh.recall(q, record=False) for q in QUERIES] == answers
            assert by_signals(fresh) == genes
            assert canonical(fresh._items()) == live
            # More events on the loaded checkpoint, then a rewrite of it (values spliced
            # into its tables, or new keys merged in) that a third process reads back.
            for q in QUERIES:
                fresh.recall(q)
            with fresh.log.snapshot() as snap:
                fresh._items().refresh(snap, fresh.log)
                fresh._items().save(snap)
            answers = [fresh.recall(q, record=False) for q in QUERIES]
            live = canonical(fresh._items())
        with Memory(os.path.join(root, "s")) as reread:
            assert [reread.recall(q, record=False) for q in QUERIES] == answers
            assert canonical(reread._items()) == live
        shutil.rmtree(os.path.join(root, "s", "cache"), ignore_errors=True)
        with Memory(os.path.join(root, "s")) as rebuilt:
            assert [rebuilt.recall(q, record=False) for q in QUERIES] == answers
            assert by_signals(rebuilt) == genes
            assert canonical(rebuilt._items()) == live
    finally:
        shutil.rmtree(root, ignore_errors=True)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(memory_ops(max_size=20))
def test_recall_is_deterministic_under_replay(ops: list[Any]) -> None:
    root = tempfile.mkdtemp(prefix="evolog-mem-")
    try:
        with Memory(os.path.join(root, "a")) as mem:
            run(mem, ops)
            answers = [mem.recall(q, record=False) for q in QUERIES]
            events = list(mem.replay())
        with Memory(os.path.join(root, "b")) as copy:
            copy.append_many(events)
            assert [copy.recall(q, record=False) for q in QUERIES] == answers
    finally:
        shutil.rmtree(root, ignore_errors=True)


items = st.builds(
    MemoryItem,
    id=st.text(min_size=1, max_size=30),
    kind=st.sampled_from(["note", "strategy"]),
    branch=texts(max_size=20),
    text=texts(max_size=400),
    tags=st.lists(texts(max_size=10), max_size=3),
    steps=st.lists(texts(max_size=60), max_size=15),
    constraints=st.lists(texts(max_size=80), max_size=4),
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(items, max_size=12, unique_by=lambda i: short_id(i.id)),
    st.integers(0, 3000),
    st.lists(texts(max_size=90), max_size=3),
)
def test_the_block_never_exceeds_the_budget(
    chosen: list[MemoryItem], budget: int, extra: list[str]
) -> None:
    text, kept = render(chosen, budget, extra)
    assert len(text) <= budget
    assert 0 <= kept <= len(chosen)
    # What is injected is a prefix of the ranking, whole index lines only (the top item's
    # may carry its details); an item repeating the steps of one before it is left out.
    for n, item in enumerate(chosen[:kept]):
        if item.steps and any(same_steps(item.steps, c.steps) for c in chosen[:n]):
            continue
        assert index_line(item) in text or (n == 0 and entry_text(item) in text)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 1500), st.integers(0, 12))
def test_recall_respects_budget_and_top_n(budget: int, top_n: int) -> None:
    root = tempfile.mkdtemp(prefix="evolog-mem-")
    try:
        with Memory(os.path.join(root, "s")) as mem:
            for i, w in enumerate(MEMORY_WORDS):
                mem.remember(f"b{i % 5}", f"{w} deploy service note {i} " * (1 + i % 4))
            res = mem.recall(
                "deploy service",
                budget_chars=budget,
                top_n=top_n,
                config=MemoryConfig(min_margin=-1.0),
            )
            assert len(res.text) <= budget and res.chars == len(res.text)
            assert len(res.items) <= top_n
            assert bool(res.items) == bool(res.text)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_a_checkpoint_of_a_sealed_log_is_trusted_without_reading_segments(tmp_path: Any) -> None:
    """The checkpoint names the segment holding its last event; a cold reader checks the
    manifest, not the segment (no pyarrow), when nothing new was appended."""
    root = os.path.join(str(tmp_path), "s")
    with Memory(root) as mem:
        notes = [
            Note(text=f"{w} note number {i}", branch=f"b{i % 3}")
            for i, w in enumerate(MEMORY_WORDS)
        ]
        mem.append_many(notes)
        mem.seal()  # the index's first refresh reads these from the segment
        mem.recall("deploy", record=False)
        with mem.log.snapshot() as snap:
            mem._items().save(snap)
    code = (
        "import sys; from evolog import Memory; m = Memory(sys.argv[1]);"
        "r = m.recall('deploy service note', record=False); print(len(r.items));"
        "print([x for x in sys.modules if x.split('.')[0] in ('pyarrow', 'numpy')])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, root], capture_output=True, text=True, check=True
    )
    lines = out.stdout.splitlines()
    assert int(lines[0]) > 0 and lines[1] == "[]"


def test_a_damaged_checkpoint_costs_a_refold_never_an_answer(tmp_path: Any) -> None:
    """A bit flipped anywhere in the item checkpoint (its head, a table's offsets or keys, a
    value) is caught by a CRC and the fold redone from the log: recall, remember, feedback
    and compress answer as with no cache, and the damaged file is replaced."""
    root = os.path.join(str(tmp_path), "s")
    with Memory(root) as mem:
        for i, w in enumerate(MEMORY_WORDS):
            mem.remember(f"b{i % 3}", f"{w} deploy service note number {i}", tags=[w])
        answers = [mem.recall(q, record=False) for q in QUERIES]
        with mem.log.snapshot() as snap:
            mem._items().save(snap)
        path = mem._items().file
    pristine = Path(path).read_bytes()
    size = len(pristine)
    for at in sorted({30, size // 5, size // 3, size // 2, (2 * size) // 3, size - 3}):
        damaged = bytearray(pristine)
        damaged[at] ^= 0x10
        with open(path, "wb") as f:
            f.write(damaged)
        with Memory(root) as mem:
            assert [mem.recall(q, record=False) for q in QUERIES] == answers, at
            first = answers[0].items[0].id
            mem.feedback(first, "helpful")  # a read of the fold, then an append
        # The answers move with the feedback; compare with a store without any cache.
        with Memory(root) as mem:
            again = [mem.recall(q, record=False) for q in QUERIES]
        shutil.rmtree(os.path.join(root, "cache"), ignore_errors=True)
        with Memory(root) as mem:
            assert [mem.recall(q, record=False) for q in QUERIES] == again, at
            answers = again
            with mem.log.snapshot() as snap:
                mem._items().save(snap)
        pristine = Path(path).read_bytes()
        size = len(pristine)


def test_a_cold_index_of_a_sealed_log_reads_only_the_kinds_it_folds(tmp_path: Any) -> None:
    """Built from nothing on a sealed store, the index streams the kinds it folds: the
    events it never reads (signals here) are not all made into Python objects at once (that
    held the whole log in memory, about 1 GiB at 1e6 events)."""
    import tracemalloc

    from evolog.eventlog import EventLog, Signal

    root = os.path.join(str(tmp_path), "s")
    with Memory(root) as mem:
        mem.append_many([Note(text=f"{w} note {i}") for i, w in enumerate(MEMORY_WORDS)])
    with EventLog(root, durability="none") as log:
        for start in range(0, 60_000, 20_000):
            log.append_many(Signal(id=f"s{i}", signals=["x"]) for i in range(start, start + 20_000))
        log.seal()
        index = ItemIndex(log.paths, cache=False)
        want = ItemIndex(log.paths, cache=False)
        with log.snapshot() as snap:
            want._rebuild(snap, log, snap.head_seq)  # also imports what a read of segments needs
            tracemalloc.start()
            try:
                index.refresh(snap, log)
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
    assert canonical(index) == canonical(want)
    assert len(index.fold.state.items) == len(MEMORY_WORDS)
    assert peak < 8 << 20, f"{peak / 2**20:.1f} MiB traced during a cold refresh"
