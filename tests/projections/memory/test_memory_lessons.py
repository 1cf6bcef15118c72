"""Lessons the agent writes are first-class: recalled with their evidence, born in the
survival ledger with their note, credited as deciders, charged the same upkeep as a dreamed
strategy, buried by failures (and then never recalled), never compressed; the fold and the
ledger are functions of the log (incremental == rebuild)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import msgspec
import pytest
from evolog.eventlog import Attempt, EventLog, Lifecycle, Node, Note, Outcome, Tick
from evolog.projections._errors import InvalidParameterError
from evolog.projections.memory._fold import MAPS
from hypothesis import HealthCheck, given, settings
from strategies import lesson_ops

from evolog import Memory

LESSON, LESSON_BRANCH = "lesson", "lessons"  # an item's kind, and a lesson's default branch
LESSON_TEXT = "Deploy the web service with the blue green script, then check the health endpoint"
TASK = "deploy the web service to production"


def attempt(mem: Memory, action_id: str, status: str, decided: list[str]) -> None:
    delta = {"success": 1.0, "failed": -1.0}.get(status)
    mem.append_many(
        [
            Attempt(action_id=action_id, decided_by=decided),
            Outcome(action_id=action_id, status=status, decided_by=decided, delta=delta),
        ]
    )


def test_a_lesson_is_born_recalled_with_its_evidence_and_dies_of_failures(tmp_path: Path) -> None:
    with Memory(tmp_path / "s") as mem:
        note = mem.remember("deploy", "Deploy notes live in the wiki of the web team")
        lesson = mem.remember("deploy", LESSON_TEXT, kind="lesson", author="agent")
        assert lesson.kind == "lesson" and note.kind == "note"
        born = [e for e in mem.log.replay() if isinstance(e, Lifecycle)]
        assert [(b.entry, b.op) for b in born] == [(lesson.item, "birth")]
        # In the ledger from its write on, as a dreamed node is from its node event.
        entry = mem.ledger().entry(lesson.item)
        assert entry is not None and entry.alive and entry.energy == 1.0
        assert mem.ledger().entry(note.item) is None
        got = mem.recall(TASK, record=False)
        assert f'(no recorded tries) by agent: "{LESSON_TEXT}"' in got.text
        assert next(i for i in got.items if i.id == lesson.item).kind == LESSON

        attempt(mem, "a1", "success", [lesson.item])
        assert "(worked 1 of 1 tries) by agent" in mem.recall(TASK, record=False).text
        before = mem.ledger().entry(lesson.item)
        assert before is not None and before.energy > 1.0
        for n in range(2, 6):
            attempt(mem, f"a{n}", "failed", [lesson.item])
        dead = mem.ledger().entry(lesson.item)
        assert dead is not None and not dead.alive and dead.cause == "executed"
        assert lesson.item not in [i.id for i in mem.recall(TASK, record=False).items]
        # Still there when the dead are asked for, with the evidence that buried it.
        shown = mem.recall(TASK, record=False, include_dead=True)
        assert "(worked 1 of 5 tries)" in shown.text


def test_a_lesson_pays_the_upkeep_of_a_dreamed_strategy(tmp_path: Path) -> None:
    with Memory(tmp_path / "s") as mem:
        mem.append(Node(cycle="c1", node="n-deploy", goal="deploy", summary="blue green"))
        lesson = mem.remember("deploy", LESSON_TEXT, kind="strategy")
        assert lesson.kind == "lesson"
        mem.append(Tick(ticks=7))
        view = mem.ledger()
        node, mine = view.entry("n-deploy"), view.entry(lesson.item)
        assert node is not None and mine is not None
        assert mine.energy == node.energy < 1.0
        mem.append(Tick(ticks=20))  # upkeep alone starves both, at the same tick
        view = mem.ledger()
        node, mine = view.entry("n-deploy"), view.entry(lesson.item)
        assert node is not None and mine is not None
        assert not node.alive and not mine.alive
        assert (mine.cause, mine.died_tick) == (node.cause, node.died_tick)


def test_lessons_dedup_among_lessons_and_are_never_compressed(tmp_path: Path) -> None:
    with Memory(tmp_path / "s") as mem:
        first = mem.remember("ops", LESSON_TEXT, kind="lesson")
        again = mem.remember("ops", LESSON_TEXT + ".", kind="lesson")
        assert again.superseded and again.item == first.item
        # A note of the same words is a note of its own: a lesson's credit is not a note's.
        plain = mem.remember("ops", LESSON_TEXT)
        assert not plain.superseded and plain.item != first.item
        births = [e for e in mem.log.replay() if isinstance(e, Lifecycle)]
        assert len(births) == 1  # the superseding write is the same entry, born once
        words = ["nginx", "postgres", "docker", "redis", "kafka", "celery", "grafana"]
        mem.remember("db", "the replica lags behind the primary at night")
        merged = []
        for w in words:
            r = mem.remember("ops", f"restart {w} with systemctl after its config changes")
            merged.extend(r.compressed_sources)
        # The branch outgrew the other and was compressed: its notes, never its lessons.
        assert plain.item in merged and first.item not in merged
        for w in words:
            mem.remember("ops", f"{w} logs are under /var/log/{w}", kind="lesson")
        archived = mem.compress().archived
        assert all(first.item not in sources for sources in archived.values())
        item = mem._items().fold.state.items[first.item]
        assert item.kind == LESSON and item.active and item.branch == "ops"


def test_remember_kind_and_author_are_checked(tmp_path: Path) -> None:
    with Memory(tmp_path / "s") as mem:
        with pytest.raises(InvalidParameterError, match="kind: expected one of note, lesson"):
            mem.remember("ops", "text", kind="rule")
        with pytest.raises(InvalidParameterError, match="author: expected at most 64"):
            mem.remember("ops", "text", kind="lesson", author="x" * 65)
        with pytest.raises(InvalidParameterError, match="author: expected text"):
            mem.remember("ops", "text", kind="lesson", author=3)  # type: ignore[arg-type]
        assert list(mem.log.replay()) == []  # refused writes leave the store as it was
        done = mem.remember(
            LESSON_BRANCH, "after pytest failed, uv run pytest worked", kind="lesson"
        )
        assert mem._items().fold.state.items[done.item].branch == LESSON_BRANCH


def test_a_lessons_kind_and_provenance_come_from_its_event(tmp_path: Path) -> None:
    """Kind, author and session are the event's; a plain note naming the item is ignored."""
    with EventLog(tmp_path / "s", create=True) as log:
        log.append(Note(id="l1", text=LESSON_TEXT, lesson=True, author="agent", session="s9"))
        log.append(Note(id="n1", item="l1", text="a note cannot overwrite a lesson"))
    with Memory(tmp_path / "s") as mem:
        assert "by agent in session s9" in mem.recall(TASK, record=False).text
        item = mem._items().fold.state.items["l1"]
        assert (item.kind, item.author, item.session, item.text) == (
            LESSON,
            "agent",
            "s9",
            LESSON_TEXT,
        )
        assert item.branch == LESSON_BRANCH


def test_evolog_forget_retires_a_lesson(tmp_path: Path) -> None:
    with Memory(tmp_path / "s") as mem:
        lesson = mem.remember("deploy", LESSON_TEXT, kind="lesson")
    forget = [sys.executable, "-m", "evolog", "--store", str(tmp_path / "s"), "forget"]
    done = subprocess.run([*forget, lesson.item], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["kind"] == LESSON
    with Memory(tmp_path / "s") as mem:
        assert mem.recall(TASK, record=False).items == []
    again = subprocess.run([*forget, lesson.item], capture_output=True, text=True, timeout=60)
    assert again.returncode == 2 and f"no live memory item {lesson.item!r}" in again.stderr


def _canonical(mem: Memory) -> Any:
    st = mem._items().fold.state
    state = msgspec.to_builtins(msgspec.structs.replace(st, **{m: {} for m in MAPS}))
    for m in MAPS:
        state[m] = msgspec.to_builtins(dict(sorted(getattr(st, m).items())))
    return state


def _ledger(mem: Memory) -> Any:
    return msgspec.to_builtins(mem.ledger().entries())


def _run(mem: Memory, ops: list[tuple[Any, ...]]) -> None:
    written: list[str] = []
    for op in ops:
        kind = op[0]
        if kind in ("remember", "lesson"):
            done = mem.remember(op[1], op[2], kind="lesson" if kind == "lesson" else "note")
            written.append(done.item)
        elif kind == "recall":
            mem.recall(op[1])
        elif kind == "decided" and written:
            attempt(mem, f"a{len(written)}-{op[1]}", op[2], [written[op[1] % len(written)]])
        elif kind == "feedback" and written:
            mem.feedback(written[op[1] % len(written)], op[2])
        elif kind == "tick":
            mem.append(Tick(ticks=op[1]))
        elif kind == "seal":
            mem.seal()
        elif kind == "refresh":
            mem.recall(TASK, record=False)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lesson_ops())
def test_lessons_fold_and_ledger_incremental_equals_rebuild(ops: list[Any]) -> None:
    root = tempfile.mkdtemp(prefix="evolog-lessons-")
    try:
        path = os.path.join(root, "s")
        with Memory(path) as mem:
            _run(mem, ops)
            answer = mem.recall(TASK, record=False, include_dead=True)
            live, ledger = _canonical(mem), _ledger(mem)
            with mem.log.snapshot() as snap:
                mem._items().save(snap)
        shutil.rmtree(os.path.join(path, "cache"), ignore_errors=True)
        with Memory(path) as rebuilt:
            assert rebuilt.recall(TASK, record=False, include_dead=True) == answer
            assert _canonical(rebuilt) == live
            assert _ledger(rebuilt) == ledger
    finally:
        shutil.rmtree(root, ignore_errors=True)
