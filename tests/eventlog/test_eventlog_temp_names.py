"""Atomic replaces write through a temporary name no other writer shares.

With one name per file (``path + ".tmp"``) or per process (``.{pid}.tmp``), two writers
replacing the same file at once open the same temporary file: one renames it away under the
other, whose rename then fails, or renames the other's half-written bytes into place.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path

from _imports import library_files
from evolog.eventlog import temp_beside
from evolog.eventlog._files import atomic_write

#: A temporary name made from the target's name alone (or with only the pid added).
FIXED = re.compile(r"""\+\s*["']\.tmp["']|\}\.tmp["']|\.tmp\.\{os\.getpid\(\)\}["']""")


def test_no_library_module_names_a_temporary_file_after_its_target_alone() -> None:
    found = [
        f"{path.name}:{n}: {line.strip()}"
        for path in library_files().values()
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if FIXED.search(line)
    ]
    assert found == []


def test_temporary_names_differ_and_end_with_the_pid(tmp_path: Path) -> None:
    target = str(tmp_path / "state.json")
    names = {temp_beside(target) for _ in range(1000)}
    assert len(names) == 1000
    for name in names:
        assert os.path.dirname(name) == str(tmp_path)
        assert name.startswith(target + ".tmp.")
        assert name.rsplit(".", 1)[1] == str(os.getpid())


def test_threads_replacing_one_file_at_once_each_write_a_whole_file(tmp_path: Path) -> None:
    target = str(tmp_path / "shared.bin")
    payloads = [bytes([i]) * 65536 for i in range(8)]
    errors: list[BaseException] = []
    start = threading.Barrier(len(payloads))

    def write(data: bytes) -> None:
        start.wait()
        try:
            for _ in range(100):
                atomic_write(target, data)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(p,)) for p in payloads]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert Path(target).read_bytes() in payloads
    assert sorted(os.listdir(tmp_path)) == ["shared.bin"]
