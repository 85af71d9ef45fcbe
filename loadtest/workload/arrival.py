"""The open model's arithmetic: the pool of users that holds an arrival rate, and the figures a run in that mode
reports (plugin/loadtest_arrival.py sends the requests and writes arrival.json).

Closed model: N users, each sending once its answer came; the offered load falls when the target stalls, and the
percentiles leave out the requests that would have waited. Open model: requests due at a fixed rate whatever the
target does, latency measured from when each was due. The first answers "how many RPS at most" (the NGINX method);
the second "does p99 hold at this rate" and "where does latency bend as the rate grows".
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from loadtest_shared import verdict

# The pool holds the rate while answers take up to this long (Little's law: users = rate x time in the system).
# Slower answers leave slots waiting for a free user: late starts of cause "users", latency still measured from the
# slot. The chart sizes its pool with the same number (common/templates/_locust.tpl, common.locust.arrivalPool).
POOL_S = 0.5
FILE = "arrival.json"
# What a worker core holds in the open model, as a share of what it sends in the closed one (the planner's per-core
# figure in the open model): benchmarks/arrival.py, which measures both on the same core in each run, gave 0.61 /
# 0.69 / 0.69 / 0.75 / 0.77 / 0.78 / 0.79 / 0.80 / 0.80 / 0.81 / 0.81 / 0.81 / 0.85 / 0.86 / 0.86 / 0.86 / 0.90 / 0.92
# (keepalive_1kb, fewer than 1 % late starts; 47,200-79,000/s held against 68,780-89,207/s closed), charts 0.7.12 and
# 0.7.13 on 2026-12-07 19:17-22:30 UTC, six sets of three, the project's 2-core Intel Xeon VM with its idle CPUs
# polling for the benchmark (docs/open-model.md, "Per core"). The median of the eighteen, 0.805, rounded down. (0.78
# before, from six runs of 0.7.11; 0.65 from chart 0.7.6 on a VM whose idle CPUs halted at once, which charged the
# target's wake-ups to the generator.)
CLOSED_SHARE = 0.80


def pool_size(rate: float, workers: int) -> int:
    """Users that hold `rate` requests/s while answers take up to POOL_S: at least one per worker."""
    return max(workers, math.ceil(rate * POOL_S))


@dataclass(frozen=True)
class Figures:
    """A run's open-model figures over its steady window (what the master's totals held when it quit)."""

    offered_rps: float
    slots: int
    late_starts: dict[str, int]  # by cause: "users" (no user free), "cpu" (a user woke late)
    service_time_ms: dict[float, float | None]  # service-time percentiles, from the actual send
    loop_lagged: float | None = None  # share of the workers' event-loop probes that woke late (None: not probed)
    max_lag_ms: float | None = None  # the longest of those lags

    def late_share(self, cause: str) -> float:
        return verdict.late_shares(self.late_starts, self.slots).get(cause, 0.0)

    @classmethod
    def read(cls, path: Path) -> Figures | None:
        """The master's arrival.json, None when it wrote none (a closed-model run, or a master that died)."""
        if not path.exists():
            return None
        data = json.loads(path.read_text())
        loop = data.get("loop") or {}
        return cls(offered_rps=data["offered_rps"], slots=data["slots"], late_starts=data["late_starts"],
                   service_time_ms={float(q): ms for q, ms in data["service_time_ms"].items()},
                   loop_lagged=loop.get("lagged_share"), max_lag_ms=loop.get("max_lag_ms"))

    def to_json(self) -> dict:
        return {"offered_rps": self.offered_rps, "slots": self.slots, "late_starts": self.late_starts,
                "late_share": {cause: round(self.late_share(cause), 5) for cause in self.late_starts},
                "service_time_ms": {f"{q:g}": ms for q, ms in self.service_time_ms.items()},
                "loop": {"lagged_share": self.loop_lagged, "max_lag_ms": self.max_lag_ms}}

    def describe_late(self) -> str:
        return verdict.describe_late_starts(verdict.late_shares(self.late_starts, self.slots), self.slots)

