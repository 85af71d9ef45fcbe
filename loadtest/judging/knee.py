"""Where a load sweep stops paying: the knee, where RPS stops rising while latency grows.

Pure functions over measured steps, shared by the sweep (to stop early) and the report (to mark the capacity).
A step measured while the generator was saturated says nothing about the target, so it can never be the capacity.

In the open model (an arrival-rate sweep: each step offers a rate) the knee is also the first step whose rate was not
held: fewer than verdict.ACHIEVED_SHARE of the offered requests per second answered over its window. Below it the RPS
follows the offered rate by construction, so "RPS stopped rising" comes later, if ever, than the rate slipping.
With a latency bound (`loadtest sweep --max-p99`, an SLO), the knee is also the first step whose p99 left it.
"""
from __future__ import annotations

from dataclasses import dataclass

from loadtest_shared import checks, verdict


# RPS that grows by less than this share while the offered load grows is flat.
FLAT_RPS_GAIN = 0.05
# Latency that grows by more than this share between two steps is queueing, not noise.
LATENCY_GROWTH = 0.25
# A step failing more requests than this share is past the target's capacity, whatever its RPS (failures count in
# it, and fast errors inflate it); the alerts' threshold.


@dataclass(frozen=True)
class Step:
    index: int
    load: float  # what the sweep raised: users, workers, target CPUs or the arrival rate (requests/s)
    rps: float
    p95_ms: float
    failure_ratio: float
    generator_saturated: bool
    offered_rps: float | None = None  # open model: the rate the step offered; None in the closed model
    p99_ms: float | None = None
    p99_bound_ms: float | None = None  # the sweep's latency bound (--max-p99); None: no bound


@dataclass(frozen=True)
class Knee:
    capacity_step: Step | None  # the last step before the knee: the most the target gave with sane latency
    knee_step: Step | None  # the first step where RPS stopped rising while latency grew, requests failed, p99 left
    # the sweep's bound, or (open model) the offered rate was not held
    generator_bound_at: Step | None  # the first step where the generator saturated (the sweep stops there)

    @property
    def found(self) -> bool:
        return self.knee_step is not None


def is_knee(previous: Step, step: Step) -> bool:
    if step.load <= previous.load or previous.rps <= 0:
        return False
    rps_gain = step.rps / previous.rps - 1
    latency_growth = step.p95_ms / previous.p95_ms - 1 if previous.p95_ms > 0 else 0.0
    return rps_gain < FLAT_RPS_GAIN and latency_growth > LATENCY_GROWTH


def failing(step: Step) -> bool:
    return step.failure_ratio > verdict.FAILURE_RATIO


def rate_slipped(step: Step) -> bool:
    """Open model: the step answered fewer than verdict.ACHIEVED_SHARE of the requests per second it offered."""
    return step.offered_rps is not None and not checks.held(step.offered_rps, step.rps)


def over_bound(step: Step) -> bool:
    """The step's p99 left the sweep's latency bound."""
    return step.p99_bound_ms is not None and step.p99_ms is not None and step.p99_ms > step.p99_bound_ms


def knee_reason(step: Step) -> str:
    """Why `step` is the knee, in a few words."""
    if failing(step):
        return f"{step.failure_ratio:.1%} of the requests failed"
    if over_bound(step):
        return f"p99 {step.p99_ms:g} ms, over the bound of {step.p99_bound_ms:g} ms"
    if rate_slipped(step):
        return (f"the rate was not held ({step.rps:,.0f} of {step.offered_rps:,g} requests/s offered, "
                f"{step.rps / step.offered_rps:.1%}, under {verdict.ACHIEVED_SHARE:.0%})")
    return "RPS stopped rising while p95 grew"


def find_knee(steps: list[Step]) -> Knee:
    """Scan steps in order; stop at the first generator-saturated step, whose figures are the generator's."""
    capacity, generator_bound = None, None
    for i, step in enumerate(steps):
        if step.generator_saturated:
            generator_bound = step
            break
        if failing(step) or over_bound(step) or rate_slipped(step) or (i and is_knee(steps[i - 1], step)):
            return Knee(capacity_step=steps[i - 1] if i else None, knee_step=step, generator_bound_at=None)
        if capacity is None or step.rps > capacity.rps:
            capacity = step
    return Knee(capacity_step=capacity, knee_step=None, generator_bound_at=generator_bound)
