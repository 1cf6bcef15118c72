"""The id index's keys where CPython's private ``_blake2`` module cannot be imported.

PyPy and other interpreters have no ``_blake2``; the index then takes ``hashlib.blake2b``
and must give the same keys, or a store written by one interpreter reads as damaged in the
other. The child process binds hashlib's ``blake2b`` first (on CPython it comes from
``_blake2`` itself), then makes ``_blake2`` unimportable before the index loads.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

CHILD = """
import hashlib, sys
sys.modules["_blake2"] = None
from evolog.eventlog.index import _idindex, _idtable
assert _idtable.blake2b is hashlib.blake2b and _idindex.blake2b is hashlib.blake2b
from evolog.eventlog import EventLog, Note
with EventLog(sys.argv[1], create=True) as log:
    seqs = [log.append(Note(id=f"n-{i}", text="x")) for i in range(50)]
    assert [log.append(Note(id=f"n-{i}", text="x")) for i in range(50)] == seqs
print(_idtable.key_of("évènement-1").hex())
"""


def test_the_index_takes_hashlib_blake2b_when_blake2_is_missing(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path / "store")],
        capture_output=True,
        text=True,
        check=True,
    )
    want = hashlib.blake2b("évènement-1".encode(), digest_size=16).hexdigest()
    assert out.stdout.split() == [want]
