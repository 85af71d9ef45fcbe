"""Final figures of a Locust run from its --json-file output.

Locust rewrites its CSV files once a second and not again at exit, so the last second of a run is missing there;
the JSON file is written after the runner quit, with every worker's last report in it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from . import checks


@dataclass(frozen=True)
class RunStats:
    requests: int
    failures: int
    rps: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    response_bytes: float  # mean body size per request


def figures(path: Path) -> dict[str, checks.Figures]:
    """Figures per request name and all together from Locust's --json-file output ({} when Locust wrote none), with
    Locust's own percentiles (loadtest.checks reads them the way Locust does)."""
    return checks.from_entries(json.loads(path.read_text())) if path.exists() else {}


def per_second(entries: list[dict]) -> dict[int, tuple[int, int]]:
    """Requests and failures of every request name together, per second of their timestamps (unix seconds), from
    entries of Locust's --json-file format (the master merges each worker's per-second counts as its reports come)."""
    counts: dict[int, list[int]] = {}
    for entry in entries:
        for key, field in (("num_reqs_per_sec", 0), ("num_fail_per_sec", 1)):
            for second, n in (entry.get(key) or {}).items():
                counts.setdefault(int(second), [0, 0])[field] += n
    return {second: (requests, failures) for second, (requests, failures) in counts.items()}


def read(path: Path) -> RunStats | None:
    """Totals over every request name in Locust's --json-file output (None when Locust wrote none)."""
    if not path.exists():
        return None
    entries = json.loads(path.read_text())
    total = checks.from_entries(entries)[checks.AGGREGATED]
    return RunStats(
        requests=total.requests, failures=total.failures, rps=total.rps, p50_ms=total.percentiles_ms[0.5],
        p95_ms=total.percentiles_ms[0.95], p99_ms=total.percentiles_ms[0.99],
        response_bytes=sum(e.get("total_content_length", 0) for e in entries) / total.requests if total.requests
        else 0.0,
    )
