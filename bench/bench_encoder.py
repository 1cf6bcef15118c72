"""What an encoder costs a process: load time, CPU per query, per text indexed, resident set.

    .venv/bin/python bench/bench_encoder.py [--embedder minilm] [--queries 50]

Run once per encoder (each in a fresh process, so the load and the resident set are its own).
Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evolog.projections.graph._embed import get_embedder

_TASKS = (
    "Our payments API integration test keeps failing at random in CI; sometimes it times out",
    "sort the import statements at the top of the python file alphabetically",
    "ModuleNotFoundError: No module named requests when running the app",
    "rotate the expired TLS certificate on the staging load balancer",
    "the nightly export to S3 stopped after we upgraded boto3",
)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--embedder", default="minilm")
    p.add_argument("--queries", type=int, default=50)
    args = p.parse_args(argv)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    wall = time.perf_counter()
    embedder = get_embedder(args.embedder)
    embedder.embed(["load"])
    load_s = time.perf_counter() - wall
    queries = [_TASKS[i % len(_TASKS)] + f" ({i})" for i in range(args.queries)]
    cpu = time.process_time()
    wall = time.perf_counter()
    for q in queries:
        embedder.embed([q])
    query_cpu_ms = (time.process_time() - cpu) / len(queries) * 1000
    query_wall_ms = (time.perf_counter() - wall) / len(queries) * 1000
    cpu = time.process_time()
    embedder.embed(queries)
    index_cpu_ms = (time.process_time() - cpu) / len(queries) * 1000
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    report = {
        "embedder": embedder.name,
        "load_s": round(load_s, 3),
        "query_cpu_ms": round(query_cpu_ms, 2),
        "query_wall_ms": round(query_wall_ms, 2),
        "indexed_cpu_ms_per_text": round(index_cpu_ms, 2),
        "rss_mb": round(rss, 1),
        "rss_mb_before_load": round(rss0, 1),
    }
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
