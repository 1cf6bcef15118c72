"""Counters the server keeps, written out in Prometheus' text format (``/metrics``)."""

from __future__ import annotations

import bisect
from collections import defaultdict

#: Latency histogram bucket bounds (seconds).
BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class Metrics:
    """Requests by route and status, latency per route, events appended; single-threaded
    (updated on the event loop only)."""

    def __init__(self) -> None:
        self.requests: defaultdict[tuple[str, int], int] = defaultdict(int)
        self.latency: dict[str, list[int]] = {}
        self.latency_sum: defaultdict[str, float] = defaultdict(float)
        self.events_appended = 0
        self.events_duplicate = 0
        self.kg_ingested: defaultdict[str, int] = defaultdict(int)
        self.followers = 0

    def observe(self, route: str, status: int, seconds: float) -> None:
        self.requests[(route, status)] += 1
        counts = self.latency.get(route)
        if counts is None:
            counts = self.latency[route] = [0] * (len(BUCKETS) + 1)
        counts[bisect.bisect_left(BUCKETS, seconds)] += 1
        self.latency_sum[route] += seconds

    def appended(self, new: int, duplicates: int) -> None:
        self.events_appended += new
        self.events_duplicate += duplicates

    def render(self, head_seq: int, groups: int, uptime: float) -> str:
        out: list[str] = []

        def metric(name: str, kind: str, helptext: str) -> None:
            out.append(f"# HELP {name} {helptext}")
            out.append(f"# TYPE {name} {kind}")

        metric("evolog_http_requests_total", "counter", "HTTP requests by route and status.")
        for (route, status), n in sorted(self.requests.items()):
            out.append(f'evolog_http_requests_total{{route="{route}",status="{status}"}} {n}')
        metric("evolog_http_request_seconds", "histogram", "Time to answer, by route.")
        for route, counts in sorted(self.latency.items()):
            total = 0
            for bound, n in zip((*BUCKETS, float("inf")), counts, strict=True):
                total += n
                le = "+Inf" if bound == float("inf") else repr(bound)
                out.append(
                    f'evolog_http_request_seconds_bucket{{route="{route}",le="{le}"}} {total}'
                )
            out.append(
                f'evolog_http_request_seconds_sum{{route="{route}"}} {self.latency_sum[route]}'
            )
            out.append(f'evolog_http_request_seconds_count{{route="{route}"}} {total}')
        metric("evolog_events_appended_total", "counter", "Events appended (new ones).")
        out.append(f"evolog_events_appended_total {self.events_appended}")
        metric("evolog_events_duplicate_total", "counter", "Appends answered as duplicates.")
        out.append(f"evolog_events_duplicate_total {self.events_duplicate}")
        metric("evolog_commit_groups_total", "counter", "Group commits written.")
        out.append(f"evolog_commit_groups_total {groups}")
        metric("evolog_kg_ingest_total", "counter", "evolver ingests by kind.")
        for kind, n in sorted(self.kg_ingested.items()):
            out.append(f'evolog_kg_ingest_total{{kind="{_label(kind)}"}} {n}')
        metric("evolog_head_seq", "gauge", "The newest seq in the log.")
        out.append(f"evolog_head_seq {head_seq}")
        metric("evolog_sse_followers", "gauge", "Open event streams.")
        out.append(f"evolog_sse_followers {self.followers}")
        metric("evolog_uptime_seconds", "gauge", "Seconds since the server started.")
        out.append(f"evolog_uptime_seconds {uptime:.3f}")
        return "\n".join(out) + "\n"


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
