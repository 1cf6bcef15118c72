"""usearch loaded before pyarrow makes pyarrow crash on time-zoned timestamps: evolog imports
usearch only through ``projections._usearch``, which loads pyarrow first (a route that
builds its index, then SQL in the same process, as a server does)."""

from __future__ import annotations

import subprocess
import sys

_SCRIPT = """
import datetime, threading
from evolog.projections._usearch import usearch_index_class
index = usearch_index_class()(ndim=8, metric="cos", dtype="f16")
import pyarrow as pa
when = datetime.datetime(2026, 11, 26, tzinfo=datetime.timezone.utc)
table = pa.table({"t": pa.array([when] * 3, pa.timestamp("us", tz="UTC"))})
out = []
worker = threading.Thread(target=lambda: out.append(table.to_pylist()))
worker.start()
worker.join()
print(len(out[0]))
"""


def test_usearch_then_pyarrow_timestamps_do_not_crash() -> None:
    done = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "3"
