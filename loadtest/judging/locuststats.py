"""Final figures of a Locust run from its --json-file output.

Locust rewrites its CSV files once a second and not again at exit, so the last second of a run is missing there;
the JSON file is written after the runner quit, with every worker's last report in it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from loadtest_shared import checks



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
    Locust's own percentiles (loadtest.judging.checks reads them the way Locust does)."""
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


# How far back the live RPS looks: Locust's own current_rps looks 12 s back too, but says 0 until 3 s have passed.
LIVE_RPS_S = 10


class PerSecond:
    """The requests and failures Locust counted per second of the run, as the master's statistics show them over
    time (per_second of each snapshot): the most seen of a second is kept, since Locust may reset its statistics
    (once every user runs) and a second counted before that keeps its count."""

    def __init__(self):
        self.counts: dict[int, tuple[int, int]] = {}

    def count(self, entries: list[dict]) -> None:
        for second, (requests, failures) in per_second(entries).items():
            seen = self.counts.get(second, (0, 0))
            self.counts[second] = (max(seen[0], requests), max(seen[1], failures))

    def live_rps(self) -> float | None:
        """Requests per second over the last seconds the workers have reported, the swarm's first second (it began
        in it) and the newest (still being counted) left out; None before the first report."""
        reported = [s for s, (requests, _) in self.counts.items() if requests]
        if not reported:
            return None
        first, last = min(reported), max(reported)
        seconds = range(max(first + 1, last - LIVE_RPS_S), last) or range(first, last + 1)
        return sum(self.counts.get(s, (0, 0))[0] for s in seconds) / len(seconds)


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
