"""A write and the branch compression it triggers are one atomic append: a process killed
(SIGKILL) right after its first append leaves both or neither, never the note alone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import Any

from evolog.eventlog import Note

from evolog import Memory

CHILD = """
import os, signal, sys
from evolog import Memory
from evolog.eventlog import EventLog

def killing(original):
    def call(self, *args, **kwargs):
        out = original(self, *args, **kwargs)
        os.kill(os.getpid(), signal.SIGKILL)  # the crash: right after the first append
        return out
    return call

EventLog.append = killing(EventLog.append)
EventLog.append_many = killing(EventLog.append_many)
with Memory(sys.argv[1]) as mem:
    mem.remember("big", sys.argv[2])
"""


def note_text(i: int) -> str:
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india"]
    return f"{words[i % 9]}{i} {words[(i + 3) % 9]}{i} {words[(i + 7) % 9]}{i} procedure"


def test_a_kill_after_the_first_append_leaves_no_note_without_its_compression(
    tmp_path: Any,
) -> None:
    root = os.path.join(str(tmp_path), "store")
    with Memory(root) as mem:
        mem.remember("small", note_text(100))
        for i in range(4):  # big=4, small=1: the next write to big compresses it
            assert mem.remember("big", note_text(i)).compressed is None
    child = subprocess.run(
        [sys.executable, "-c", CHILD, root, note_text(5)], capture_output=True, text=True
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    with Memory(root) as mem:
        notes = [e for e in mem.replay(kinds=["note"]) if isinstance(e, Note)]
        written = [n for n in notes if n.text == note_text(5)]
        merges = [n for n in notes if n.reason == "compress"]
        assert len(written) == 1, "the write itself was acknowledged before the kill"
        assert len(merges) == 1 and written[0].id in merges[0].sources
        assert merges[0].seq == written[0].seq + 1
        # The store answers as if the process had finished: one merged item for the branch.
        res = mem.recall(note_text(3), record=False)
        assert [i.id for i in res.items] == [merges[0].id]


def test_a_retried_write_appends_neither_twice(tmp_path: Any) -> None:
    root = os.path.join(str(tmp_path), "store")
    with Memory(root) as mem:
        mem.remember("small", note_text(100))
        for i in range(4):
            mem.remember("big", note_text(i))
        first = mem.remember("big", note_text(5), envelope={"id": "write-5"})
        again = mem.remember("big", note_text(5), envelope={"id": "write-5"})
        assert first.compressed is not None and again.seq == first.seq
        notes = [e for e in mem.replay(kinds=["note"]) if isinstance(e, Note)]
        assert sum(n.reason == "compress" for n in notes) == 1
        assert sum(n.id == "write-5" for n in notes) == 1
