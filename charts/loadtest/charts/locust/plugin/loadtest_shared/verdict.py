"""The verdict: which side of a load test was the limit over its steady window. Decided here only, for every path
that judges a run: `loadtest run --local` and `loadtest local` (a sample a second), the chart's judged master (a
sample per round of worker reports), and `loadtest run --release`, the sweep and `loadtest tune` (the saturation
rules' samples in Prometheus, one per rule evaluation). The rules file's thresholds are written from THRESHOLDS
(`loadtest dashboards`), so Prometheus, the dashboards and the alerts judge by the same numbers.

The lesson behind it: RPS plateaued because the Locust workers sat at 100 % of their CPU while the nodes were far
from full, so the number measured was the generator's ceiling, not the target's. A result is only the target's
capacity when the target, not the generator, is saturated.

Only the steady window is judged: every user running, before the stop. A side was the limit over it when it was
saturated in at least SATURATED_SHARE of the window's samples: a share rather than a mean, since a short run's mean
dips with the ramp-up or the stop around it while a saturated worker's share of saturated samples does not. The
generator's share is of worker-samples (each sample counts the share of its workers at the ceiling), so the same
load reads the same however it is split into workers.

Standard library only: the chart's pods load it beside the scenarios.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

# The thresholds, by the saturation rules' record names (the rules file's `vector(…)` constants are written from
# these). A worker at SATURATED_CPU of its core (or of its CPU limit) is saturated; Locust itself warns at 90 %.
THRESHOLDS = {
    "loadtest:cpu_saturation:threshold": 0.9,
    # A container throttled in this share of its CFS periods is held back by its CPU limit.
    "loadtest:cpu_throttling:threshold": 0.25,
    # More failed requests than this share: the target is not serving the load (the sweep's knee too).
    "loadtest:failure_ratio:threshold": 0.01,
    # A side saturated in at least this share of the steady window's samples was the limit over the window.
    "loadtest:saturated_share:threshold": 0.5,
    # On a machine the workers share with the target, a full machine holds back only a worker that wants CPU: one
    # using this share of a core or more competes for it; a lighter one (a test with think time) gets what it asks.
    "loadtest:worker_contention:threshold": 0.25,
    # A machine the workers share with the target is full from this share of its cores busy: while both want CPU it
    # never reads 100 %, each waiting on the other's answers now and then (a worker crowded to 52 % of a core by a
    # CPU hog read the machine 92 % busy on average, samples either side of 90 %, 2026-12-01).
    "loadtest:host_saturation:threshold": 0.85,
    # The open model: late starts (more than LATE_S after their slot) in at least this share of the slots.
    "loadtest:late_starts:threshold": 0.01,
    # The open model: a run that sent less than this share of its offered rate measured a smaller load than it was
    # asked to, and never passes.
    "loadtest:achieved_share:threshold": 0.99,
}
SATURATED_CPU = THRESHOLDS["loadtest:cpu_saturation:threshold"]
THROTTLED = THRESHOLDS["loadtest:cpu_throttling:threshold"]
FAILURE_RATIO = THRESHOLDS["loadtest:failure_ratio:threshold"]
SATURATED_SHARE = THRESHOLDS["loadtest:saturated_share:threshold"]
CONTENDED = THRESHOLDS["loadtest:worker_contention:threshold"]
HOST_FULL = THRESHOLDS["loadtest:host_saturation:threshold"]
LATE_STARTS = THRESHOLDS["loadtest:late_starts:threshold"]
ACHIEVED_SHARE = THRESHOLDS["loadtest:achieved_share:threshold"]
# The open model: a request started more than this after its slot is a late start (a wrk2-style generator holds
# ~1 ms; a Python worker's event loop routinely wakes a few ms late without being saturated).
LATE_S = 0.010
LATE_MS = round(LATE_S * 1000)

GENERATOR_BOUND = "generator-bound"
TARGET_BOUND = "target-bound"
HEALTHY = "healthy"
# Nothing says the generator was the limit, and the target's CPU was not measured (the chart's master judges its
# workers only; a target outside the release or the local stack, or a pod without a CPU limit, has no CPU figure):
# the target is unmeasured, never taken to have had headroom.
NOT_GENERATOR_BOUND = "not generator-bound"
KINDS = (GENERATOR_BOUND, TARGET_BOUND, HEALTHY, NOT_GENERATOR_BOUND)
# Where a target's CPU goes unmeasured, and how to measure it.
TARGET_UNMEASURED = ("the chart's judged master sees only its workers; a target outside the release or the local "
                     "stack, or a target pod without a CPU limit, has no CPU figure: load the release's own target, "
                     "or give the target's pod a CPU limit, and read the release's Prometheus")

# Why the generator was the limit (generator_limit).
CPU, LATE_STARTS_CAUSE, LOOP = "cpu", "late-starts", "loop"


@dataclass(frozen=True)
class Verdict:
    """Which side of a run was the limit (one of KINDS), and why: the reason in words, and the name of the cause
    (CAUSES) that decided."""

    kind: str
    reason: str
    cause: str


@dataclass(frozen=True)
class Sample:
    """Both sides' CPU at one moment of the steady window, as the rules' signals read it. `worker_cpu` holds each
    worker's CPU as a share of its ceiling (its limit, one core at most), and `worker_throttling` (where cgroups
    count it) each worker's share of throttled CFS periods: a tuple by worker number, or a mapping by worker id where
    workers come and go (the master's reports)."""

    worker_cpu: tuple[float, ...] | dict[str, float] = ()
    target_cpu: float | None = None  # the target's CPU as a share of its CPUs (None when not measured)
    host_cpu: float | None = None  # share of the machine's cores busy, where generator and target share one
    worker_throttling: tuple[float, ...] | dict[str, float] | None = None

    def workers(self) -> dict:
        return _by_worker(self.worker_cpu)

    def throttling(self) -> dict:
        return _by_worker(self.worker_throttling or ())

    @property
    def target_saturated(self) -> bool:
        return self.target_cpu is not None and self.target_cpu >= SATURATED_CPU

    def held_workers(self) -> int:
        """How many workers were held back at this moment: each at its CPU ceiling, throttled, or wanting CPU from a
        full machine it shares with a target that has some left."""
        cpu, throttled = self.workers(), self.throttling()
        machine_full = self.host_cpu is not None and self.host_cpu >= HOST_FULL and not self.target_saturated
        return sum(c >= SATURATED_CPU or throttled.get(w, 0.0) >= THROTTLED or (machine_full and c >= CONTENDED)
                   for w, c in cpu.items())

    @property
    def saturated_workers(self) -> float:
        """loadtest:generator_saturated:ratio: the share of the workers held back at this moment. A share of the
        workers, not "any worker": the same load split over more workers reads the same (a worker-second at the
        ceiling counts once whatever the split), where any-worker read ten workers each at the ceiling a tenth of
        the time as saturated throughout."""
        return self.held_workers() / len(self.workers()) if self.workers() else 0.0


def _by_worker(values: tuple[float, ...] | dict[str, float]) -> dict:
    return dict(values) if isinstance(values, dict) else dict(enumerate(values))


def failing(failure_ratio: float | None) -> bool:
    """More than FAILURE_RATIO of the requests failed: the target did not serve the load."""
    return failure_ratio is not None and failure_ratio > FAILURE_RATIO


def _share(count: int, of: int) -> float:
    return count / of if of else 0.0


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


@dataclass(frozen=True)
class Window:
    """A steady window: how many samples it had, the share of them in which each side was saturated, and the mean
    figures that explain the verdict."""

    samples: int
    generator_share: float  # the share of the window's worker-samples held back (Sample.held_workers)
    target_share: float
    busiest_worker: float  # the highest of the workers' mean CPU shares
    target_cpu: float | None = None
    host_cpu: float | None = None
    worker_throttling: float | None = None  # the most throttled worker's share of throttled CFS periods, mean
    late_starts: float | None = None  # open model: the share of requests the workers started late for want of CPU
    late_users: float | None = None  # open model: the share of slots that found every user waiting on the target
    loop_lagged: float | None = None  # open model: the share of the workers' event-loop probes that woke late
    max_lag_ms: float | None = None  # open model: the longest of those lags
    achieved: float | None = None  # open model: the achieved rate as a share of the offered one
    # Open model: requests answered per slot the workers handed out (short of 1: the task did not send a request in
    # every slot; at 1 with the rate short, the slots themselves fell short: a worker never got its share).
    requests_per_slot: float | None = None
    # Workers lost or quit in the window, in words (loadtest_faults): the load it measured was not the one asked for.
    losses: tuple[str, ...] = ()
    # The target silent in the window, in words (loadtest_faults): a spell with no request answered at all.
    silences: tuple[str, ...] = ()
    failure_ratio: float | None = None  # the window's failed requests as a share of its requests (None: not known)

    @classmethod
    def of(cls, samples: list[Sample], late_starts: float | None = None, late_users: float | None = None,
           loop_lagged: float | None = None, max_lag_ms: float | None = None, achieved: float | None = None,
           losses: tuple[str, ...] = (), silences: tuple[str, ...] = (), failure_ratio: float | None = None,
           requests_per_slot: float | None = None) -> Window:
        """The window of samples taken by the process that judges (locally, or the master from its reports)."""
        n = len(samples)
        by_worker: dict = {}
        for s in samples:
            for worker, cpu in s.workers().items():
                by_worker.setdefault(worker, []).append(cpu)
        return cls(
            samples=n, generator_share=_share(sum(s.held_workers() for s in samples),
                                              sum(len(s.workers()) for s in samples)),
            target_share=sum(s.target_saturated for s in samples) / n if n else 0.0,
            busiest_worker=max((_mean(c) for c in by_worker.values()), default=0.0),
            target_cpu=_mean([s.target_cpu for s in samples if s.target_cpu is not None]),
            host_cpu=_mean([s.host_cpu for s in samples if s.host_cpu is not None]),
            worker_throttling=_mean([max(s.throttling().values()) for s in samples if s.throttling()]),
            late_starts=late_starts, late_users=late_users, loop_lagged=loop_lagged, max_lag_ms=max_lag_ms,
            achieved=achieved, losses=tuple(losses), silences=tuple(silences), failure_ratio=failure_ratio,
            requests_per_slot=requests_per_slot)

    @property
    def measured(self) -> bool:
        """Whether the generator's CPU was sampled in the window: without a sample nothing is judged, on any path
        (its event loop's lag alone says nothing of the samples every share is of)."""
        return self.samples > 0

    @property
    def target_measured(self) -> bool:
        """Whether the target's CPU was measured in the window: where it was not, no verdict says it had headroom."""
        return self.target_cpu is not None

    @property
    def failing(self) -> bool:
        """More than FAILURE_RATIO of the window's requests failed (the one boundary: the knee, the rules, the exit
        codes and the dashboards use it too)."""
        return failing(self.failure_ratio)

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


def generator_limit(window: Window) -> str | None:
    """Why the generator was the limit, or None when nothing measured says it was. CPU: its workers were saturated
    (at their ceiling, throttled, or crowded out of a full machine) in at least SATURATED_SHARE of the window's
    worker-samples.
    LATE_STARTS_CAUSE (open model): its workers woke at least LATE_STARTS of their users late, with evidence that
    CPU was why: saturated in at least as large a share of the window's samples as the share of slots it started
    late, so that its saturated samples can hold them (a host stall and a second of catching up at the ceiling, or a
    lightly loaded worker that wakes late, stalled for another reason: its late starts are named, not blamed on
    CPU). LOOP (open model): the workers' event loop lagged in
    at least SATURATED_SHARE of its probes: it could not keep the schedule, whatever its CPU figure (a worker starved
    by its limit before it was measured, or by its neighbours). Lost workers are a cause of their own (CAUSES)."""
    if (window.late_starts is not None and window.late_starts >= LATE_STARTS and window.samples
            and window.generator_share >= window.late_starts):
        return LATE_STARTS_CAUSE
    if window.samples and window.generator_share >= SATURATED_SHARE:
        return CPU
    if window.loop_lagged is not None and window.loop_lagged >= SATURATED_SHARE:
        return LOOP
    return None


def loop_stalls(window: Window) -> str:
    """Late starts not blamed on CPU, in words."""
    probes = "" if window.loop_lagged is None else f"; the loop lagged in {window.loop_lagged:.1%} of its probes"
    if window.loop_lagged is not None and window.max_lag_ms is not None:
        probes += f", at most {window.max_lag_ms:.0f} ms"
    cpu = ("while no worker's CPU reached its ceiling" if not window.generator_share else
           f"more than the {window.generator_share:.0%} of the steady window with the generator's CPU saturated can "
           "hold")
    return (f"{window.late_starts:.2%} of the requests started late with a user free, {cpu}: the workers' event loop "
            f"stalled now and then{probes}, not for want of CPU (their latency counts from the slot)")


def _stalls(window: Window) -> str:
    """Late starts not blamed on CPU, as a clause for the reason of a verdict that follows them."""
    return f"; {loop_stalls(window)}" if window.late_starts is not None and window.late_starts >= LATE_STARTS else ""


def _no_sample(window: Window) -> str:
    return "no steady sample of the workers' CPU: the run was too short to measure it; whether the generator was the " \
           "limit is not known"


def _lost_workers(window: Window) -> str:
    return (f"the generator lost workers in the steady window: {'; '.join(window.losses)} ({window.figures()}): the "
            "window ran with less load than asked for, so its RPS and latency are not the target's at this load; run "
            "again")


def _silent(window: Window) -> str:
    # A hung target fails nothing until the requests' timeout: the window's few requests look served.
    return (f"the target stopped answering in the steady window: {'; '.join(window.silences)} ({window.figures()}): "
            "it did not serve this load the whole time, so the window's RPS and latency are not its capacity")


def _failing(window: Window) -> str:
    return (f"the target failed {window.failure_ratio:.2%} of the steady window's requests, over the "
            f"{FAILURE_RATIO:.0%} a served load allows ({window.figures()}): it did not serve this load (gone, refusing "
            "or erroring); its failures are in stats_failures.csv")


def _generator(window: Window) -> str:
    cause = generator_limit(window)
    if cause == LATE_STARTS_CAUSE:
        return (f"the workers started {window.late_starts:.2%} of their requests more than {LATE_MS} ms after their "
                f"slot with a user waiting, their CPU saturated in {window.generator_share:.0%} of the steady window "
                f"({window.figures()}): the rate was the generator's to hold; add workers or cores")
    if cause == LOOP:
        longest = "" if window.max_lag_ms is None else f"at most {window.max_lag_ms:.0f} ms; "
        return (f"the workers' event loop woke more than {LATE_MS} ms late in {window.loop_lagged:.0%} of its probes "
                f"({longest}{window.figures()}): it could not keep the schedule, so the rate and the latency are the "
                "generator's; add workers or cores, or give each worker a whole core")
    if window.worker_throttling is not None and window.worker_throttling >= THROTTLED:
        advice = "their CPU limit holds the workers back; give each worker a whole core"
    elif window.host_cpu is not None and window.host_cpu >= HOST_FULL and window.busiest_worker < SATURATED_CPU:
        advice = ("the workers share the machine's cores with the target and cannot get more CPU; run generator and "
                  "target on separate machines or nodes to measure the target")
    else:
        advice = "add workers or cores before reading the target's capacity"
    return (f"the generator was saturated in {window.generator_share:.0%} of the steady window ({window.figures()}): "
            f"the RPS is the generator's ceiling; {advice}")


def _target(window: Window) -> str:
    if window.late_users is not None and window.late_users >= LATE_STARTS:
        return (f"{window.late_users:.2%} of the slots found every user still waiting on the target, with the "
                f"workers on time ({window.figures()}): its latency at this rate outgrew the pool's half second a "
                f"response; this rate is past what it serves with that latency{_stalls(window)}")
    return (f"the target was saturated in {window.target_share:.0%} of the steady window while the workers had "
            f"headroom ({window.figures()}): this RPS is its capacity at this CPU count{_stalls(window)}")


def _not_offered(window: Window) -> str:
    # Every slot started on time and the target answered them, unsaturated: what fell short is what the generator
    # offered, not what the target served.
    if window.requests_per_slot is not None and window.requests_per_slot < ACHIEVED_SHARE:
        why = (f"the workers' task sent {window.requests_per_slot:.2f} request(s) a slot it was handed: it does not "
               "send one request in every slot (a task that waits, branches or sends none); make it send one request "
               "a slot")
    elif window.requests_per_slot is not None:
        why = ("the workers handed out fewer slots than the rate, each answered: a worker never got its share of the "
               "rate (fewer workers than the rate was split over, one that joined late or stalled)")
    else:
        why = "the slots handed out or the requests sent for them fell short"
    return (f"only {window.achieved:.1%} of the offered rate was sent, under {ACHIEVED_SHARE:.0%}, with the target "
            f"unsaturated and every slot on time ({window.figures()}): {why}; the load measured is not the one "
            f"offered, so it is not the target's at this rate{_stalls(window)}")


def _unmeasured(window: Window) -> str:
    return (f"the generator was not saturated in most of the steady window ({window.figures()}); the target's CPU was "
            "not measured, so whether it had headroom is unmeasured: the RPS is a floor of its capacity, not the "
            f"capacity ({TARGET_UNMEASURED}){_stalls(window)}")


def _healthy(window: Window) -> str:
    more = "the rate" if window.late_starts is not None else "users"  # the open model's load is its rate
    return (f"neither side was saturated in most of the steady window ({window.figures()}): raise {more} to find the "
            f"limit{_stalls(window)}")


@dataclass(frozen=True)
class Cause:
    """One cause of a verdict: the kind it gives, whether a window shows it, the reason in words, and the same
    condition in PromQL over the saturation rules' per-release records: `rule` at a steady evaluation, `window_rule`
    over the rules' window, the last minute's steady evaluations (the rules' `loadtest:verdict` and `loadtest:advice`
    are written from CAUSES by `loadtest values`)."""

    name: str
    kind: str
    shows: Callable[[Window], bool]
    reason: Callable[[Window], str]
    rule: str
    window_rule: str


_LIMIT = "scalar(loadtest:saturated_share:threshold)"
# The generator's share over the rules' window: present where the window had a steady sample of the workers' CPU.
_JUDGED = "loadtest:generator_limit_steady:share1m"
# The causes in the order the judge weighs them; the first a window shows decides. A window without a sample judges
# nothing; lost workers and a silent or failing target come before the generator's CPU (workers whose requests fail
# at once spin at their core); a saturated generator hides the target's capacity, so it comes before the target; a
# rate not offered (open model) is the generator's only once the target is not the reason; the rest is healthy
# where the target's CPU was measured, and unmeasured where it was not.
CAUSES = (
    Cause("no-sample", NOT_GENERATOR_BOUND, lambda w: not w.measured, _no_sample,
          "loadtest:steady:bool == 1 unless on (release) loadtest:generator_limit_steady:ratio",
          f"max_over_time(loadtest:steady:bool[1m]) == 1 unless on (release) {_JUDGED}"),
    # The faults' and failures' records count over the rules' window already.
    Cause("lost-workers", GENERATOR_BOUND, lambda w: bool(w.losses), _lost_workers,
          "loadtest:workers_lost_steady:bool == 1", "loadtest:workers_lost_steady:bool == 1"),
    Cause("target-silent", TARGET_BOUND, lambda w: bool(w.silences), _silent,
          "loadtest:target_silent_steady:bool == 1", "loadtest:target_silent_steady:bool == 1"),
    Cause("target-failing", TARGET_BOUND, lambda w: w.failing, _failing, "loadtest:target_failing_steady:bool == 1",
          "loadtest:target_failing_steady:bool == 1"),
    Cause("generator", GENERATOR_BOUND, lambda w: generator_limit(w) is not None, _generator,
          f"loadtest:generator_limit_steady:ratio >= {_LIMIT}", f"{_JUDGED} >= {_LIMIT}"),
    Cause("target", TARGET_BOUND,
          lambda w: (w.late_users is not None and w.late_users >= LATE_STARTS) or w.target_share >= SATURATED_SHARE,
          _target, "loadtest:target_saturated_steady:bool == 1",
          f"loadtest:target_saturated_steady:share1m >= {_LIMIT}"),
    Cause("rate-not-offered", GENERATOR_BOUND, lambda w: w.achieved is not None and w.achieved < ACHIEVED_SHARE,
          _not_offered, "loadtest:arrival_rate:short_steady:bool == 1",
          f"loadtest:arrival_rate:short_steady:share1m >= {_LIMIT}"),
    Cause("target-unmeasured", NOT_GENERATOR_BOUND, lambda w: not w.target_measured, _unmeasured,
          "loadtest:steady:bool == 1 unless on (release) loadtest:target_measured:bool",
          f"group by (release) ({_JUDGED}) unless on (release) loadtest:target_measured:bool"),
    Cause("healthy", HEALTHY, lambda w: True, _healthy, "loadtest:steady:bool == 1",
          f"group by (release) ({_JUDGED})"),
)


def judge(window: Window) -> Verdict:
    """The window's verdict: the first of CAUSES it shows (see there for the order and why)."""
    cause = next(c for c in CAUSES if c.shows(window))
    return Verdict(cause.kind, cause.reason(window), cause.name)


def late_shares(late_starts: dict[str, int], slots: int) -> dict[str, float]:
    """The open model's late starts by cause ("users": no user was free; "cpu": a user was free but its worker woke
    it late) as shares of the slots handed out."""
    return {cause: count / slots if slots else 0.0 for cause, count in late_starts.items()}


def describe_late_starts(shares: dict[str, float], slots: int | None = None) -> str:
    users, cpu = shares.get("users", 0.0), shares.get("cpu", 0.0)
    return (f"{users + cpu:.2%}{f' of {slots:,} slots' if slots else ''} (no user free {users:.2%}, worker woke late "
            f"{cpu:.2%})")


def gave_its_core(worker_cpu: float) -> bool:
    """A calibrating worker this busy (within a tenth of saturation) sent what its core sends; a less busy one was
    held back by the target, and its figure per core is a lower bound."""
    return worker_cpu >= SATURATED_CPU * 0.9
