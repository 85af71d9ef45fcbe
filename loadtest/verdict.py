"""Which side of a load test was the bottleneck, from CPU figures over the test's steady window.

The lesson behind it: RPS plateaued because the Locust workers sat at 100 % of their CPU while the nodes were far
from full, so the number measured was the generator's ceiling, not the target's. A result is only the target's
capacity when the target, not the generator, is saturated.

Only the steady window is judged: every user running, before the stop. A side was the limit over it when it was
saturated in at least SATURATED_SHARE of the window's samples (one a second locally, one a rule evaluation in
Prometheus): a share rather than a mean, since a short run's mean dips with the ramp-up or the stop around it while a
saturated worker's share of saturated samples does not. The saturation rules (loadtest.rules.yaml) define each
sample's signals and the same window (loadtest:*_saturated_steady:bool); this module reads its thresholds there.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import paths, rules

# A worker at this share of its core (or of its CPU limit) is saturated; Locust itself warns at 90 %. The value is the
# saturation rules' (the monitoring chart's), so this verdict, the dashboards' and the alerts' agree.
SATURATED_CPU = rules.threshold("loadtest:cpu_saturation:threshold")
# A worker throttled in this share of its CFS periods is held back by its CPU limit.
THROTTLED = rules.threshold("loadtest:cpu_throttling:threshold")
# A side saturated in at least this share of the steady window's samples was the limit over the window.
SATURATED_SHARE = rules.threshold("loadtest:saturated_share:threshold")
# On a full machine shared with the target, a worker at this share of a core or more competes for CPU.
CONTENDED = rules.threshold("loadtest:worker_contention:threshold")
# In the open model, a generator that started this share of its requests late (a user was waiting, the worker woke it
# late) was the limit when its CPU was saturated in at least one sample, the evidence that CPU was why (without it the
# lateness is the event loop's stalls, named, not the generator's limit: loadtest_results.generator_limit); and a
# target whose latency made this share of the slots find every user still waiting on it (the pool holds the rate up
# to 0.5 s a response) was.
LATE_STARTS = rules.threshold("loadtest:late_starts:threshold")

GENERATOR_BOUND = "generator-bound"
TARGET_BOUND = "target-bound"
HEALTHY = "healthy"


# One Verdict for a run judged here and one judged in the chart's master pod (it writes the same result.json), and
# one rule for when the generator was the limit.
_results = paths.pod_module("loadtest_results")
Verdict = _results.Verdict


@dataclass(frozen=True)
class Sample:
    """Both sides' CPU at one moment of the steady window, as the rules' signals read it."""

    worker_cpu: tuple[float, ...] = ()  # each worker's CPU as a share of its ceiling (its limit, one core at most)
    target_cpu: float | None = None  # the target's CPU as a share of its CPUs (None when not measured)
    host_cpu: float | None = None  # share of the machine's cores busy, where generator and target share one
    worker_throttling: float | None = None  # the most throttled worker's share of throttled CFS periods

    @property
    def target_saturated(self) -> bool:
        return self.target_cpu is not None and self.target_cpu >= SATURATED_CPU

    @property
    def generator_saturated(self) -> bool:
        """loadtest:generator_cpu_saturated:bool: a worker at its CPU ceiling or throttled, or a full machine shared
        with a target that has CPU left while a worker competes for it."""
        return (any(c >= SATURATED_CPU for c in self.worker_cpu)
                or (self.worker_throttling is not None and self.worker_throttling >= THROTTLED)
                or (self.host_cpu is not None and self.host_cpu >= SATURATED_CPU and not self.target_saturated
                    and max(self.worker_cpu, default=0.0) >= CONTENDED))


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


@dataclass(frozen=True)
class Window:
    """A steady window: how many samples it had, the share of them in which each side was saturated, and the mean
    figures that explain the verdict."""

    samples: int
    generator_share: float
    target_share: float
    busiest_worker: float  # the highest of the workers' mean CPU shares
    target_cpu: float | None = None
    host_cpu: float | None = None
    worker_throttling: float | None = None
    late_starts: float | None = None  # open model: the share of requests the workers started late for want of CPU
    late_users: float | None = None  # open model: the share of slots that found every user waiting on the target
    loop_lagged: float | None = None  # open model: the share of the workers' event-loop probes that woke late
    max_lag_ms: float | None = None  # open model: the longest of those lags
    achieved: float | None = None  # open model: the achieved rate as a share of the offered one

    @classmethod
    def of(cls, samples: list[Sample], late_starts: float | None = None, late_users: float | None = None,
           loop_lagged: float | None = None, max_lag_ms: float | None = None,
           achieved: float | None = None) -> Window:
        """The window of samples taken locally (one a second)."""
        n = len(samples)
        workers = max((len(s.worker_cpu) for s in samples), default=0)
        means = [_mean([s.worker_cpu[i] for s in samples if i < len(s.worker_cpu)]) or 0.0 for i in range(workers)]
        return cls(
            samples=n, generator_share=sum(s.generator_saturated for s in samples) / n if n else 0.0,
            target_share=sum(s.target_saturated for s in samples) / n if n else 0.0,
            busiest_worker=max(means, default=0.0),
            target_cpu=_mean([s.target_cpu for s in samples if s.target_cpu is not None]),
            host_cpu=_mean([s.host_cpu for s in samples if s.host_cpu is not None]),
            worker_throttling=_mean([s.worker_throttling for s in samples if s.worker_throttling is not None]),
            late_starts=late_starts, late_users=late_users, loop_lagged=loop_lagged, max_lag_ms=max_lag_ms,
            achieved=achieved)

    def figures(self) -> str:
        parts = [f"busiest worker {self.busiest_worker:.0%} of its CPU ceiling"]
        if self.worker_throttling is not None:
            parts.append(f"throttled in {self.worker_throttling:.0%} of CFS periods")
        if self.target_cpu is not None:
            parts.append(f"target {self.target_cpu:.0%} of its CPUs")
        if self.host_cpu is not None:
            parts.append(f"machine {self.host_cpu:.0%} busy")
        if self.late_starts is not None:
            parts.append(f"{self.late_starts:.2%} of requests started late by the workers")
        if self.late_users:
            parts.append(f"{self.late_users:.2%} of slots found no user free")
        if self.loop_lagged:
            parts.append(f"event loop lagging in {self.loop_lagged:.1%} of its probes")
        if self.achieved is not None:
            parts.append(f"{self.achieved:.1%} of the offered rate sent")
        return f"means over {self.samples} steady sample(s): {', '.join(parts)}"


def judge(window: Window) -> Verdict:
    """The window's verdict: generator-bound when the generator was the limit (loadtest_results.generator_limit:
    saturated in at least SATURATED_SHARE of its samples; in the open model also late starts with its CPU saturated
    in a sample, or its event loop lagging in most of its probes), since a saturated generator hides the target's
    capacity; else target-bound when the target was saturated, or (open model) its latency made slots find no user
    free, or the rate was not sent with the workers keeping up; else healthy. Late starts without evidence of CPU
    are named in the reason, not blamed on the generator."""
    cause = _results.generator_limit(window.generator_share, SATURATED_SHARE, window.late_starts, LATE_STARTS,
                                     window.loop_lagged)
    if cause == _results.LATE_STARTS:
        return Verdict(GENERATOR_BOUND, f"the workers started {window.late_starts:.2%} of their requests more than "
                                        f"10 ms after their slot with a user waiting, their CPU saturated in "
                                        f"{window.generator_share:.0%} of the steady window ({window.figures()}): the "
                                        "rate was the generator's to hold; add workers or cores")
    if cause == _results.CPU:
        if window.worker_throttling is not None and window.worker_throttling >= THROTTLED:
            advice = "their CPU limit holds the workers back; give each worker a whole core"
        elif window.host_cpu is not None and window.host_cpu >= SATURATED_CPU and window.busiest_worker < SATURATED_CPU:
            advice = ("the workers share the machine's cores with the target and cannot get more CPU; run generator "
                      "and target on separate machines or nodes to measure the target")
        else:
            advice = "add workers or cores before reading the target's capacity"
        return Verdict(GENERATOR_BOUND, f"the generator was saturated in {window.generator_share:.0%} of the steady "
                                        f"window ({window.figures()}): the RPS is the generator's ceiling; {advice}")
    if cause == _results.LOOP:
        return Verdict(GENERATOR_BOUND, f"the workers' event loop woke more than 10 ms late in "
                                        f"{window.loop_lagged:.0%} of its probes (at most {window.max_lag_ms or 0:.0f} "
                                        f"ms; {window.figures()}): it could not keep the schedule, so the rate and "
                                        "the latency are the generator's; add workers or cores, or give each "
                                        "worker a whole core")
    stalls = ""
    if window.late_starts is not None and window.late_starts >= LATE_STARTS:
        stalls = f"; {_results.loop_stalls(window.late_starts, window.loop_lagged, window.max_lag_ms)}"
    if window.late_users is not None and window.late_users >= LATE_STARTS:
        return Verdict(TARGET_BOUND, f"{window.late_users:.2%} of the slots found every user still waiting on the "
                                     f"target, with the workers on time ({window.figures()}): its latency at this "
                                     "rate outgrew the pool's half second a response; this rate is past what it "
                                     f"serves with that latency{stalls}")
    if window.target_share >= SATURATED_SHARE:
        return Verdict(TARGET_BOUND, f"the target was saturated in {window.target_share:.0%} of the steady window "
                                     f"while the workers had headroom ({window.figures()}): this RPS is its capacity "
                                     f"at this CPU count{stalls}")
    if window.achieved is not None and window.achieved < _results.checks.ACHIEVED_SHARE:
        return Verdict(TARGET_BOUND, f"only {window.achieved:.1%} of the offered rate was sent, under "
                                     f"{_results.checks.ACHIEVED_SHARE:.0%}, with the workers keeping up "
                                     f"({window.figures()}): the rate was not held{stalls}")
    more = "the rate" if window.late_starts is not None else "users"  # the open model's load is its rate
    return Verdict(HEALTHY, f"neither side was saturated in most of the steady window ({window.figures()}): raise "
                            f"{more} to find the limit{stalls}")
