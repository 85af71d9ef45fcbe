"""What one window of a run measured, whatever measured it: Prometheus over a release (a sweep's step, `run
--release`, `loadtest tune`) or the local stack's Locust and processes (`run --local`, `loadtest local`,
calibrate). The figures every path reports and judges, and the verdict's window."""
from __future__ import annotations

import dataclasses

from loadtest_shared import verdict

from ..workload.arrival import Figures


@dataclasses.dataclass(frozen=True)
class Measured:
    start: float  # the window's edges (unix time)
    end: float
    requests: float
    failures: float
    rps: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    users: float  # the window's most
    worker_cpu: list[float]  # each worker's mean share of its ceiling (its CPU limit, at most one core)
    worker_cpu_cores: float  # all workers' mean cores
    target_cpu_ratio: float | None  # the target's mean share of its CPUs; None where not measured
    window: verdict.Window
    arrival: Figures | None  # the open model's; None in the closed model
    # The window's requests per response time in ms, as Locust rounds it, where Prometheus counted them (a window
    # of several releases merges them); a local run's percentiles are Locust's own statistics.
    response_times: dict[float, float] = dataclasses.field(default_factory=dict)

    @property
    def failure_ratio(self) -> float | None:
        return self.failures / self.requests if self.requests else None
