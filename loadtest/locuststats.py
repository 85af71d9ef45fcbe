"""Final figures of a Locust run from its --json-file output.

Locust rewrites its CSV files once a second and not again at exit, so the last second of a run is missing there;
the JSON file is written after the runner quit, with every worker's last report in it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RunStats:
    requests: int
    failures: int
    rps: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    response_bytes: float  # mean body size per request


def percentile(histogram: dict[float, int], fraction: float) -> float:
    """Response time below which `fraction` of the requests fell (Locust keeps times in rounded buckets)."""
    total = sum(histogram.values())
    if not total:
        return 0.0
    seen = 0
    for ms in sorted(histogram):
        seen += histogram[ms]
        if seen >= fraction * total:
            return ms
    return max(histogram)


def read(path: Path) -> RunStats | None:
    """Totals over every request name in Locust's --json-file output (None when Locust wrote none)."""
    if not path.exists():
        return None
    entries = json.loads(path.read_text())
    histogram: dict[float, int] = {}
    for e in entries:
        for ms, count in e["response_times"].items():
            histogram[float(ms)] = histogram.get(float(ms), 0) + count
    requests = sum(e["num_requests"] for e in entries)
    starts = [e["start_time"] for e in entries]
    ends = [e["last_request_timestamp"] for e in entries if e["last_request_timestamp"]]
    seconds = max(ends) - min(starts) if starts and ends else 0
    return RunStats(
        requests=requests,
        failures=sum(e["num_failures"] for e in entries),
        rps=requests / seconds if seconds > 0 else 0.0,
        p50_ms=percentile(histogram, 0.50),
        p95_ms=percentile(histogram, 0.95),
        p99_ms=percentile(histogram, 0.99),
        response_bytes=sum(e.get("total_content_length", 0) for e in entries) / requests if requests else 0.0,
    )
