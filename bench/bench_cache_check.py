"""What checking the vector cache on load costs a cold route (issue 26.5).

A vector index of N vectors (dimension 256, the default embedder's) is saved as rows only,
then opened and searched once, as a cold ``evolog route`` does, many times over: with the
checksums checked (the key map and every row, as shipped) and, in the same run, with a
header-only check in their place (what was trusted before). Prints the medians in ms. The
files stay in the page cache: the figures are the CPU cost of the check, not disk reads.

    .venv/bin/python bench/bench_cache_check.py --sizes 10000,100000 --repeat 15
"""

from __future__ import annotations

import argparse
import statistics
import struct
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evolog.projections.graph import _vecfiles
from evolog.projections.graph._embed import HashingEmbedder
from evolog.projections.graph._lean import embed_rows
from evolog.projections.graph._vectors import VectorIndex

_CHECKED = _vecfiles.checked_body
_HEAD = struct.Struct("<4sIQ")


def _header_only(raw: Any, path: str, what: str) -> memoryview | None:
    view = memoryview(raw)
    _, _, size = _HEAD.unpack_from(view)
    return view[_HEAD.size :] if size == len(view) - _HEAD.size else None


def _cold(directory: str, embedder: HashingEmbedder, query: memoryview) -> float:
    start = time.perf_counter()
    index = VectorIndex.open(embedder, directory)
    assert index._rows is not None
    index.search(query, 5)
    return (time.perf_counter() - start) * 1e3


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="10000,100000")
    p.add_argument("--repeat", type=int, default=15)
    args = p.parse_args()
    embedder = HashingEmbedder(256)
    query = embed_rows(embedder, ["fix the failing import"]).row(0)
    for n in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory() as directory:
            index = VectorIndex(embedder, directory)
            index.add_many((f"n{i}", [f"task {i} about {i % 97} things"]) for i in range(n))
            index.save()
            times: dict[str, list[float]] = {"checked": [], "header only": []}
            for _ in range(args.repeat):
                for name, check in (("checked", _CHECKED), ("header only", _header_only)):
                    _vecfiles.checked_body = check
                    times[name].append(_cold(directory, embedder, query))
            _vecfiles.checked_body = _CHECKED
            row = ", ".join(f"{k} {statistics.median(v):.2f} ms" for k, v in times.items())
            print(f"{n} vectors: open + first search, median of {args.repeat}: {row}")


if __name__ == "__main__":
    main()
