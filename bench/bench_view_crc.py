"""What checking the graph checkpoint's stored views costs: the kernels' check_views (zlib's
crc32_z from C) against zlib.crc32 called from Python, per 64 MiB of views.

    .venv/bin/python bench/bench_view_crc.py [--mib 64] [--rows 100000] [--repeat 7] [--so FILE]

``--so`` loads another build of the kernels (to compare one built from an older source).
Prints one JSON line: the best of ``--repeat`` runs of each, in ms.
"""

from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import itertools
import json
import os
import struct
import time
import zlib

from evolog.projections.graph import _kernels


def _load(path: str) -> object:
    name = "evolog.projections.graph._kernels"
    loader = importlib.machinery.ExtensionFileLoader(name, path)
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=64)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--so", default=None)
    args = ap.parse_args()
    kernels = _kernels if args.so is None else _load(args.so)
    data = os.urandom(args.mib << 20)
    step = len(data) // args.rows
    offsets = [r * step for r in range(args.rows)] + [len(data)]
    crcs = [zlib.crc32(data[a:b]) for a, b in itertools.pairwise(offsets)]
    packed_offsets = struct.pack(f"<{len(offsets)}q", *offsets)
    packed_crcs = struct.pack(f"<{len(crcs)}I", *crcs)
    view = memoryview(data)

    def kernel() -> None:
        assert kernels.check_views(data, packed_offsets, packed_crcs, None) == -1

    def python() -> None:
        for a, b, crc in zip(offsets, offsets[1:], crcs, strict=False):
            assert zlib.crc32(view[a:b]) == crc

    best = {}
    for name, run in (("check_views_ms", kernel), ("python_zlib_ms", python)):
        times = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            run()
            times.append(time.perf_counter() - t)
        best[name] = round(min(times) * 1e3, 1)
    print(json.dumps({"mib": args.mib, "rows": args.rows, "so": args.so or "installed", **best}))


if __name__ == "__main__":
    main()
