"""Where a load sweep stops paying: the knee, where RPS stops rising while latency grows.

Pure functions over measured steps, shared by the sweep (to stop early) and the report (to mark the capacity).
A step measured while the generator was saturated says nothing about the target, so it can never be the capacity.
"""
from __future__ import annotations

from dataclasses import dataclass

# RPS that grows by less than this share while the offered load grows is flat.
FLAT_RPS_GAIN = 0.05
# Latency that grows by more than this share between two steps is queueing, not noise.
LATENCY_GROWTH = 0.25


@dataclass(frozen=True)
class Step:
    index: int
    load: float  # what the sweep raised: users, workers or target CPUs
    rps: float
    p95_ms: float
    failure_ratio: float
    generator_saturated: bool


@dataclass(frozen=True)
class Knee:
    capacity_step: Step | None  # the last step before the knee: the most the target gave with sane latency
    knee_step: Step | None  # the first step where RPS stopped rising while latency grew
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


def find_knee(steps: list[Step]) -> Knee:
    """Scan steps in order; stop at the first generator-saturated step, whose figures are the generator's."""
    capacity, generator_bound = None, None
    for i, step in enumerate(steps):
        if step.generator_saturated:
            generator_bound = step
            break
        if i and is_knee(steps[i - 1], step):
            return Knee(capacity_step=steps[i - 1], knee_step=step, generator_bound_at=None)
        if capacity is None or step.rps > capacity.rps:
            capacity = step
    return Knee(capacity_step=capacity, knee_step=None, generator_bound_at=generator_bound)
