"""One table of steady windows, judged by every path that judges a run (tests/unit/test_one_verdict.py: `loadtest run
--local` and the chart's judged master; tests/chart/test_one_verdict_rules.py: the saturation rules under promtool).
Each case is a window's samples: one a second locally, one per round of worker reports in the master, one per rule
evaluation in Prometheus. `kind` is the verdict of the local path and of the rules; `master_kind` the judged
master's, which sees only its workers (their CPU and throttling): where they were not the limit it says "not
generator-bound", never that the target had headroom, and a full shared machine (the local stack's signal) is not
its to see."""
from __future__ import annotations

from dataclasses import dataclass

from loadtest.judging import verdict
from loadtest.judging.verdict import Sample


@dataclass(frozen=True)
class Case:
    name: str
    samples: tuple[Sample, ...]
    kind: str
    master_kind: str


def repeat(n: int, **sample) -> tuple[Sample, ...]:
    return (Sample(**sample),) * n


GB, TB, OK, NGB = verdict.GENERATOR_BOUND, verdict.TARGET_BOUND, verdict.HEALTHY, verdict.NOT_GENERATOR_BOUND
CASES = (
    Case("starved", repeat(6, worker_cpu=(0.99,), target_cpu=0.3), GB, GB),
    Case("one-of-two", repeat(6, worker_cpu=(0.97, 0.4), target_cpu=0.3), GB, GB),
    # At exactly the share the generator wins: an undecided window is not the target's capacity.
    Case("half", repeat(3, worker_cpu=(0.95,), target_cpu=0.3) + repeat(3, worker_cpu=(0.5,), target_cpu=0.3), GB, GB),
    # Two workers saturated at different moments: in every sample one of them was.
    Case("taking-turns", repeat(3, worker_cpu=(0.95, 0.3), target_cpu=0.3)
         + repeat(3, worker_cpu=(0.3, 0.95), target_cpu=0.3), GB, GB),
    Case("spike", repeat(1, worker_cpu=(0.95,), target_cpu=0.3) + repeat(5, worker_cpu=(0.5,), target_cpu=0.3), OK,
         NGB),
    Case("throttled", repeat(6, worker_cpu=(0.5,), target_cpu=0.3, worker_throttling=0.5), GB, GB),
    Case("target", repeat(6, worker_cpu=(0.3,), target_cpu=0.95), TB, NGB),
    Case("healthy", repeat(6, worker_cpu=(0.5,), target_cpu=0.4), OK, NGB),
    Case("shared-machine", repeat(6, worker_cpu=(0.6,), target_cpu=0.3, host_cpu=0.98), GB, NGB),
)
