"""One table of steady windows, judged by every path that judges a run (tests/unit/test_one_verdict.py: `loadtest run
--local` and the chart's judged master; tests/chart/test_one_verdict_rules.py: the saturation rules under promtool).
Each case is a window's samples: one a second locally, one per round of worker reports in the master, one per rule
evaluation in Prometheus. `kind` is the verdict of the local path and of the rules; `master_kind` the judged
master's, which sees only its workers (their CPU and throttling): where they were not the limit it says "not
generator-bound", never that the target had headroom, and a full shared machine (the local stack's signal) is not
its to see."""
from __future__ import annotations

from dataclasses import dataclass

from loadtest_shared.verdict import Sample
from loadtest_shared import verdict


@dataclass(frozen=True)
class Case:
    name: str
    samples: tuple[Sample, ...]
    kind: str
    master_kind: str
    # What the window holds beside its samples, as every path gets it: the failed share of its requests (Locust's
    # counts), workers lost and spells of target silence (the master's faults log; loadtest_faults_total).
    failure_ratio: float | None = None
    losses: tuple[str, ...] = ()
    silences: tuple[str, ...] = ()
    arrival: Arrival | None = None  # the open model's figures (None: the closed model)

    def window(self) -> verdict.Window:
        """The window as the local run builds it."""
        a = self.arrival
        arrival = {} if a is None else {"late_starts": a.late_cpu, "late_users": 0.0, "loop_lagged": a.loop_lagged,
                                        "achieved": a.sent, "requests_per_slot": a.per_slot}
        return verdict.Window.of(list(self.samples), failure_ratio=self.failure_ratio, losses=self.losses,
                                 silences=self.silences, **arrival)


@dataclass(frozen=True)
class Arrival:
    """The open model's window: `late_cpu` of the slots started late with a user free (none for want of a user),
    `sent` of the offered rate answered, `per_slot` requests answered for each slot the workers handed out, the
    workers' event loop lagging in `loop_lagged` of its probes."""

    late_cpu: float = 0.0
    loop_lagged: float = 0.0
    sent: float = 1.0
    per_slot: float = 1.0


OFFERED_RPS = 100.0


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
    # The spike's load split over four workers, each at the ceiling in one sample of four: a quarter of the
    # worker-samples, as one worker with the same load; "any worker" read it as saturated throughout.
    Case("split-turns", tuple(Sample(worker_cpu=tuple(0.95 if w == s else 0.5 for w in range(4)), target_cpu=0.3)
                              for s in range(4)), OK, NGB),
    Case("throttled", repeat(6, worker_cpu=(0.5,), target_cpu=0.3, worker_throttling=(0.5,)), GB, GB),
    Case("target", repeat(6, worker_cpu=(0.3,), target_cpu=0.95), TB, NGB),
    Case("healthy", repeat(6, worker_cpu=(0.5,), target_cpu=0.4), OK, NGB),
    Case("shared-machine", repeat(6, worker_cpu=(0.6,), target_cpu=0.3, host_cpu=0.98), GB, NGB),
    # A worker crowded to half a core beside a CPU hog: the machine is full short of 100 % (HOST_FULL), its two
    # sides waiting on each other's answers now and then; under that, the same worker had CPU left to take.
    Case("crowded-machine", repeat(6, worker_cpu=(0.52,), target_cpu=0.48, host_cpu=0.88), GB, NGB),
    Case("busy-machine", repeat(6, worker_cpu=(0.52,), target_cpu=0.48, host_cpu=0.8), OK, NGB),
    # The target's CPU not measured (`--host` elsewhere, a pod without a CPU limit, the master): its headroom is
    # unmeasured on every path, never healthy; a saturated generator still says so.
    Case("target-unmeasured", repeat(6, worker_cpu=(0.5,)), NGB, NGB),
    Case("target-unmeasured-starved", repeat(6, worker_cpu=(0.97,)), GB, GB),
    # A target refusing connections while the workers spin at their core: the failures are the target's.
    Case("refusing", repeat(6, worker_cpu=(0.98,), target_cpu=0.1), TB, TB, failure_ratio=0.6),
    # Exactly at the boundary (1 %) is served: failing means more than 1 %, on every path.
    Case("one-percent-failed", repeat(6, worker_cpu=(0.5,), target_cpu=0.4), OK, NGB, failure_ratio=0.01),
    Case("two-percent-failed", repeat(6, worker_cpu=(0.5,), target_cpu=0.4), TB, TB, failure_ratio=0.02),
    # A worker lost mid-window: never healthy, whatever the CPU read.
    Case("worker-lost", repeat(6, worker_cpu=(0.5,), target_cpu=0.4), GB, GB,
         losses=("worker lost at 12 s: lt-worker-1 (50 users)",)),
    # The target silent (a hang: few requests, none failed yet): the target's, though the workers idle.
    Case("target-silent", repeat(6, worker_cpu=(0.1,), target_cpu=0.05), TB, TB,
         silences=("target silent from 10 s for 6 s (100 users)",)),
    # The open model: a loop lagging in most of its probes cannot keep the schedule, whatever its CPU reads (a worker
    # starved by its neighbours); a few lagging probes are stalls, not the limit.
    Case("loop-lagging", repeat(6, worker_cpu=(0.6,), target_cpu=0.3), GB, GB, arrival=Arrival(loop_lagged=0.8)),
    Case("loop-stalls", repeat(6, worker_cpu=(0.6,), target_cpu=0.3), OK, NGB, arrival=Arrival(loop_lagged=0.05)),
    # The rate not sent with idle workers, the target at a fifth of its CPU and every slot on time: the generator did
    # not offer it (a worker never got its share of the slots; a task that skips slots), never the target's.
    # Late starts with a user free: the generator's when its CPU was saturated in at least as many of the window's
    # samples (two of six, a third, for 5 % late); a host stall and one second catching up at the ceiling (one of
    # eight, 12.5 %, for 15 % late) are the loop's stalls, named, not the generator's limit.
    Case("late-bursts", repeat(2, worker_cpu=(0.95,), target_cpu=0.3) + repeat(4, worker_cpu=(0.6,), target_cpu=0.3),
         GB, GB, arrival=Arrival(late_cpu=0.05)),
    Case("stall-catch-up", repeat(1, worker_cpu=(0.95,), target_cpu=0.3) + repeat(7, worker_cpu=(0.3,), target_cpu=0.3),
         OK, NGB, arrival=Arrival(late_cpu=0.15)),
    Case("slots-short", repeat(6, worker_cpu=(0.2,), target_cpu=0.2), GB, GB, arrival=Arrival(sent=0.5)),
    Case("task-skips-slots", repeat(6, worker_cpu=(0.2,), target_cpu=0.2), GB, GB,
         arrival=Arrival(sent=0.5, per_slot=0.5)),
)
