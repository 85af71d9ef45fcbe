"""Running a sweep: each step sets the load (users; workers; the target's CPUs, as NGINX measured its tables; or,
in the open model, the arrival rate), waits out a warm-up, then holds for a measured window, and reads the window
from Prometheus.

RPS, failures and latency percentiles come from the Locust metrics plugin's series (the percentiles from Locust's own
histogram at the window's edges, as Locust computes them), the workers' and the target's CPU from the saturation
rules, the workers lost and the target's silences from the master's fault counts, and the step's verdict is
loadtest.judging.verdict's over the window's steady samples, each side's saturation as the rules recorded it
(`loadtest:generator_saturated_steady:ratio`, `loadtest:target_saturated_steady:bool`). The sweep stops at the knee
(RPS stopped rising while p95 grew, or requests failed) or as soon as the generator saturates: from then on the RPS
is the generator's ceiling, never the target's capacity. An arrival-rate step also reads the offered rate and the
workers' slots, late starts and event-loop probes over its window (exact counts, like the requests'), and stops the
sweep at the first rate not held (achieved under verdict.ACHIEVED_SHARE of offered); late starts for want of worker
CPU make a step generator-bound, as in `loadtest local`.

A driver says where the load runs: the local stack (runtime.sweep_local) or a release (runtime.sweep_cluster).

Nothing measured is lost: the report is rewritten after every step, and a sweep that ends early (Ctrl-C, a lost
port-forward, a failed helm upgrade) leaves the steps so far in it, marked incomplete with the reason.
"""
from __future__ import annotations

import dataclasses
import datetime
import math
import threading
import time
from pathlib import Path
from typing import Protocol

from loadtest_shared import checks, verdict

from ..errors import RunFailed
from ..judging import sweepreport
from ..judging.knee import Step, knee_reason
from ..judging.locuststats import PerSecond
from ..judging.measured import Measured
from ..workload import arrival
from ..workload.sweep import KINDS, Spec, measured_window, measuring_s, window_end, window_range
from .locustweb import LocustWeb, LocustWebError, Silence, live_figures
from .prom import Prometheus

PROGRESS_EVERY_S = 5
# The kinds of the master's loadtest_faults_total (plugin/loadtest_faults.py) that the verdict weighs.
FAULT_LOSSES, FAULT_SILENCES = ("worker lost", "worker quit"), ("target silent",)
SPAWN_TIMEOUT_S = 120
PERCENTILES = (0.5, 0.95, 0.99)


class SweepFailed(RunFailed):
    pass


class Driver(Protocol):
    """What a sweep needs from where the load runs (the local stack, or a release in a cluster)."""

    release: str
    prometheus: Prometheus
    locust: LocustWeb
    workers: int
    target_cpus: int

    def conditions(self) -> dict[str, str]: ...

    def set_workers(self, count: int) -> None: ...

    def set_target_cpus(self, cpus: int) -> None: ...

    def set_arrival_rate(self, rate: int) -> None:
        """Open model: from now on the workers send `rate` requests/s together (the swarm is then started afresh)."""

    def sample(self) -> None:
        """Called about once a second during a measured window (the local stack samples process CPU)."""

    def window_target_cores(self) -> list[float]:
        """The cores the target used, a sample a second over the window just ended, measured outside Prometheus; []
        where Prometheus has the figure."""


def report_landings(prometheus: Prometheus, sel: str, end: float, span_s: float) -> tuple[list[float],
                                                                                         list[set[float]]]:
    """The master's scrapes over the `span_s` seconds up to `end` (ascending) and, per worker, the scrapes that first
    showed one of its reports: its request count changed since the scrape before (its series' raw samples)."""
    series = prometheus.query(f"locust_worker_requests_total{{{sel}}}[{window_range(span_s)}]", end)
    stamps = sorted({float(t) for s in series for t, _ in s["values"]})
    landings = []
    for s in series:
        samples = [(float(t), float(v)) for t, v in s["values"]]
        landings.append({t for (_, before), (t, v) in zip(samples, samples[1:]) if v != before})
    return stamps, landings


@dataclasses.dataclass(frozen=True)
class Edges:
    """A window's edge scrapes of the master: their timestamps and Locust's request and failure counters at each."""

    start: float
    end: float
    requests: float
    failures: float

    @property
    def seconds(self) -> float:
        return self.end - self.start


def window_edges(prometheus: Prometheus, release: str, end: float, hold_s: int, scrape_s: float) -> Edges:
    """The master's last scrape at or before `end` and the one `hold_s` before it, with the counts between them (none
    at the start where the master had no request counters yet); refused where Prometheus misses either scrape or the
    counters went back."""
    sel = f'release="{release}"'
    requests_now, failures_now = f"sum(locust_requests_total{{{sel}}})", f"sum(locust_request_failures_total{{{sel}}})"
    # locust_users comes with every scrape of the master; its request counters only once a worker reported a request
    # (one series per request name), up to a report interval (3 s) after the start.
    scraped = f"max(timestamp(locust_users{{{sel}}}))"

    def counters(at: float, first: bool) -> tuple[float, float, float] | None:
        stamp, requests = prometheus.scalar(scraped, at), prometheus.scalar(requests_now, at)
        if stamp is None or (requests is None and not first):
            return None
        # At the window's start a master scraped without request counters had counted none since its reset.
        return stamp, requests or 0.0, prometheus.scalar(failures_now, at) or 0.0

    if not (at_end := counters(end, first=False)):
        raise SweepFailed(f"Prometheus has no locust_requests_total of release {release!r}: is it scraping the "
                          "Locust master (monitoring.enabled) and is the release name right?")
    t_end, requests_end, failures_end = at_end
    # The scrape hold_s before: half an interval later than its nominal time, past its jitter.
    if not (at_start := counters(t_end - hold_s + scrape_s / 2, first=True)):
        raise SweepFailed(f"Prometheus has no scrape of the master of release {release!r} from the window's start, "
                          f"{hold_s} s before its last: it missed it (down or restarting) or lost it (killed before it "
                          "wrote it out); series.csv leaves such steps' figures empty")
    t_start, requests_start, failures_start = at_start
    if requests_end < requests_start or t_end - t_start < hold_s / 2:
        raise SweepFailed("Locust's request counters went back during the step (its statistics were reset): "
                          "measure again")
    return Edges(t_start, t_end, requests_end - requests_start, failures_end - failures_start)


def measure(prometheus: Prometheus, release: str, end: float, hold_s: int, scrape_s: float) -> Measured:
    """What Prometheus saw of one release over the `hold_s` seconds up to its last scrape at or before `end`: every
    figure a step record holds. The window's edges are scrape timestamps, so its counts are exact differences."""
    sel = f'release="{release}"'
    edges = window_edges(prometheus, release, end, hold_s, scrape_s)
    start_at = edges.end - hold_s + scrape_s / 2
    r = window_range(edges.seconds)

    def over(expr: str) -> float | None:
        return prometheus.scalar(expr, edges.end)

    counts = window_counts(prometheus, sel, start_at, end)
    percentiles = ({q: checks.percentile(counts, q) for q in PERCENTILES} if counts
                   else dict.fromkeys(PERCENTILES, 0.0))
    open_model = arrival_window(prometheus, sel, start_at, end)
    return Measured(
        start=edges.start, end=edges.end, requests=edges.requests, failures=edges.failures,
        rps=edges.requests / edges.seconds, p50_ms=percentiles[0.5], p95_ms=percentiles[0.95],
        p99_ms=percentiles[0.99], users=over(f"max(max_over_time(locust_users{{{sel}}}[{r}]))") or 0.0,
        worker_cpu=prometheus.values(f"avg_over_time(loadtest:worker_cpu_saturation:ratio{{{sel}}}[{r}])", edges.end),
        worker_cpu_cores=over(f"sum(avg_over_time(locust_worker_cpu_usage_cores{{{sel}}}[{r}]))") or 0.0,
        target_cpu_ratio=over(f"sum(avg_over_time(loadtest:target_cpu_saturation:ratio{{{sel}}}[{r}]))"),
        window=verdict_window(prometheus, release, edges, start_at, open_model), arrival=open_model,
        response_times=counts)


def verdict_window(prometheus: Prometheus, release: str, edges: Edges, start_at: float,
                   open_model: arrival.Figures | None) -> verdict.Window:
    """The verdict's window over the edges, as the rules recorded it: the steady evaluations' shares and means, the
    faults the master counted between the edges, and (open model) the rate held and the late starts."""
    sel = f'release="{release}"'
    r = window_range(edges.seconds)

    def over(expr: str) -> float | None:
        return prometheus.scalar(expr, edges.end)

    def faults(kinds: tuple[str, ...]) -> float:
        """The master's faults of these kinds between the window's edges (loadtest_faults_total: exact counts)."""
        count = f'sum(loadtest_faults_total{{{sel}, kind=~"{"|".join(kinds)}"}})'
        return (prometheus.scalar(count, edges.end) or 0.0) - (prometheus.scalar(count, start_at) or 0.0)

    steady = over(f"max(count_over_time(loadtest:generator_saturated_steady:ratio{{{sel}}}[{r}]))")
    if not steady:
        raise SweepFailed(f"Prometheus recorded no steady sample of release {release!r} over the window (every user "
                          "running): does it evaluate the chart's saturation rules, and did the swarm run?")
    lost, silent = faults(FAULT_LOSSES), faults(FAULT_SILENCES)
    window = verdict.Window(
        samples=round(steady),
        generator_share=over(f"max(avg_over_time(loadtest:generator_saturated_steady:ratio{{{sel}}}[{r}]))") or 0.0,
        target_share=over(f"max(avg_over_time(loadtest:target_saturated_steady:bool{{{sel}}}[{r}]))") or 0.0,
        busiest_worker=over(f"max(avg_over_time(loadtest:worker_cpu_saturation:ratio{{{sel}}}[{r}]))") or 0.0,
        target_cpu=over(f"max(avg_over_time(loadtest:target_cpu_saturation:ratio{{{sel}}}[{r}]))"),
        host_cpu=over(f"max(avg_over_time(loadtest:host_cpu_saturation:ratio{{{sel}}}[{r}]))"),
        worker_throttling=over(f"max(avg_over_time(loadtest:worker_cpu_throttling:ratio{{{sel}}}[{r}]))"),
        late_starts=open_model.late_share("cpu") if open_model else None,
        late_users=open_model.late_share("users") if open_model else None,
        loop_lagged=open_model.loop_lagged if open_model else None,
        losses=(f"{lost:g} worker(s) lost or quit (the master's loadtest_faults_total)",) if lost > 0 else (),
        silences=(f"{silent:g} spell(s) with no request answered (the master's loadtest_faults_total)",)
        if silent > 0 else (),
        failure_ratio=edges.failures / edges.requests if edges.requests else None)
    if open_model:  # the rate sent over the same scrapes: a rate not held is never healthy
        window = dataclasses.replace(
            window, achieved=edges.requests / edges.seconds / open_model.offered_rps,
            requests_per_slot=edges.requests / open_model.slots if open_model.slots else None)
    return window


def window_counts(prometheus: Prometheus, sel: str, start_at: float, end: float,
                  histogram: tuple[str, str] = ("locust_responses_total", "response_time_ms")) -> dict[float, float]:
    """The window's requests per response time in ms as Locust rounds it, from a histogram the master exports
    (`histogram`: its series and its bucket's label; every request's response time by default) at the scrapes at
    or before `start_at` and `end`: the window's own requests, from which its percentiles are Locust's
    (loadtest_shared.checks.percentile) and several regions' windows add up exactly."""
    series, bucket = histogram

    def counts(at: float) -> dict[float, float]:
        return {float(s["metric"][bucket]): float(s["value"][1])
                for s in prometheus.query(f"sum by ({bucket}) ({series}{{{sel}}})", at)}

    before = counts(start_at)
    return {ms: n - before.get(ms, 0.0) for ms, n in counts(end).items() if n > before.get(ms, 0.0)}


def arrival_window(prometheus: Prometheus, sel: str, start_at: float, end: float) -> arrival.Figures | None:
    """The open model's figures over the window whose edges are the scrapes at or before `start_at` and `end` (the
    same scrapes as the request counts, so the slots are whole worker reports too): the rate offered, the slots handed
    out and the shares started late by cause, and the service-time p99; None in the closed model (no offered rate)."""
    offered = prometheus.scalar(f"max(locust_arrival_rate_offered_rps{{{sel}}})", end)
    if offered is None:
        return None

    def counted(expr: str) -> float:
        return (prometheus.scalar(expr, end) or 0.0) - (prometheus.scalar(expr, start_at) or 0.0)

    slots = counted(f"sum(locust_worker_arrival_slots_total{{{sel}}})")
    late = {cause: counted(f'sum(locust_worker_late_starts_total{{{sel}, cause="{cause}"}})')
            for cause in ("users", "cpu")}
    service = window_counts(prometheus, sel, start_at, end, ("locust_service_times_total", "service_time_ms"))
    probes, lagged = (counted(f"sum(locust_arrival_loop_{kind}_total{{{sel}}})") for kind in ("probes", "lagged"))
    return arrival.Figures(offered, slots, late, {0.99: checks.percentile(service, 0.99)} if service else {},
                           lagged / probes if probes > 0 else None)


def interrupted_at(index: int, steps: int, e: BaseException, recorded: bool = False) -> str:
    """Why a sweep ended at a step: Ctrl-C or the step's failure, during the step, or Ctrl-C once it was `recorded`
    (while its report was written: the steps after it were never run)."""
    if isinstance(e, KeyboardInterrupt):
        return f"interrupted {'after' if recorded else 'during'} step {index + 1} of {steps}"
    return f"step {index + 1} of {steps} failed: {e}"


def stops_at(sweep: sweepreport.Sweep, progress) -> bool:
    """True, said, where the steps so far end the sweep: the generator saturated (more load would only measure it)
    or the knee was found."""
    knee, at = sweep.knee, len(sweep.records)
    if knee.generator_bound_at is not None:
        progress(f"stopping: the generator saturated at step {at}; more load would only measure the generator")
        return True
    if knee.found:
        progress(f"stopping: knee at step {at} ({knee_reason(knee.knee_step)})")
        return True
    return False


class MasterGone(SweepFailed):
    """The master of a step's swarm lost mid-step: silent, or running no swarm (restarted)."""


class StepStopped(RunFailed):
    """A step told to stop from outside (another region's step failed, or Ctrl-C reached the command)."""


class Sweeper:
    def __init__(self, driver: Driver, spec: Spec, progress=print, report_dir: Path | None = None):
        self.driver, self.spec, self.progress, self.report_dir = driver, spec, progress, report_dir
        self.rates = PerSecond()
        self.stopping = threading.Event()  # set from another thread: the step in progress ends (StepStopped)
        self.swarm_sent = self.swarm_answered = 0.0  # the last step's swarm request: sent, and answered (unix time)

    def save(self, sweep: sweepreport.Sweep) -> None:
        if self.report_dir is not None and (sweep.records or sweep.incomplete):
            sweepreport.write(sweep, self.report_dir)

    def conditions(self, scrape_s: float) -> dict[str, str]:
        """What a report says the sweep ran under: where, the steps, the model, the windows, Prometheus, the date."""
        d, spec = self.driver, self.spec
        model = ({"model": "open: each step sends its rate of requests (requests/s, all workers together) whatever "
                           "the target does; latency from each request's slot, service time from its send"}
                 if spec.open_model else {})
        if spec.p99_bound_ms is not None:
            model["latency bound"] = f"p99 at most {spec.p99_bound_ms:g} ms: a step above it is the knee"
        return {
            **d.conditions(), "sweep": f"{KINDS[spec.kind]} {', '.join(map(str, spec.loads))}", **model,
            "warm-up per step": f"{spec.warmup_s} s", "measured window per step": f"{spec.hold_s} s",
            "Prometheus": f"{d.prometheus.version()}, scrape every {scrape_s:g} s",
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        }

    def run(self) -> sweepreport.Sweep:
        d, spec = self.driver, self.spec
        scrape_s = d.prometheus.scrape_interval_s()
        measured_window(spec.hold_s, scrape_s)
        sweep = sweepreport.Sweep(conditions=self.conditions(scrape_s), sweep_of=KINDS[spec.kind])
        try:
            for index, load in enumerate(spec.loads):
                try:
                    sweep.records.append(self.step(index, load, scrape_s))
                    self.save(sweep)
                    if stops_at(sweep, self.progress):
                        break
                except (KeyboardInterrupt, RunFailed) as e:
                    sweep.incomplete = interrupted_at(index, len(spec.loads), e, len(sweep.records) > index)
                    self.save(sweep)
                    raise
        finally:
            self.stop_swarm()
        return sweep

    def stop_swarm(self) -> None:
        try:
            self.driver.locust.stop()
        except LocustWebError:
            pass

    def step(self, index: int, load: int, scrape_s: float) -> sweepreport.StepRecord:
        """One step: the load set and swarmed, warmed up, measured over its window, judged and recorded."""
        of = f"step {index + 1}/{len(self.spec.loads)}"
        self.start(of, load)
        f, target_cores = self.measure_window(of, scrape_s)
        return self.record(of, index, load, f, target_cores)[0]

    def start(self, of: str, load: int) -> None:
        """The step's load set where the sweep varies it (workers, the target's CPUs, the rate), and its users
        swarmed (the swarm request's times kept: swarm_sent, swarm_answered)."""
        d, spec = self.driver, self.spec
        if spec.kind == "workers":
            d.set_workers(load)
        elif spec.kind == "target-cpus":
            d.set_target_cpus(load)
        elif spec.open_model:
            d.set_arrival_rate(load)
        users = spec.users(load, d.workers)
        what = f"{load:,} requests/s from a pool of {users} users" if spec.open_model else f"{users} users"
        self.progress(f"{of}: {KINDS[spec.kind]} {load}: {what} on {d.workers} worker(s), target at "
                      f"{d.target_cpus} CPU(s); warm-up {spec.warmup_s} s, then {spec.hold_s} s measured")
        self.swarm_sent = time.time()
        d.locust.swarm(users, spec.spawn_rate or users)
        self.swarm_answered = time.time()
        d.locust.wait_users(users, SPAWN_TIMEOUT_S)

    def measure_window(self, of: str, scrape_s: float) -> tuple[Measured, float | None]:
        """The step's warm-up and measured window, what Prometheus saw of it, and the target's cores (the driver's
        own samples where Prometheus has none: the local stack's processes)."""
        d, spec = self.driver, self.spec
        self.watch(of, "warm-up", spec.warmup_s, sample=False)
        span_s = measuring_s(spec.hold_s, scrape_s)
        self.watch(of, "measuring", math.ceil(span_s), sample=True)
        end = time.time()
        target_samples = d.window_target_cores()
        # Once Prometheus holds a scrape of the master and an evaluation of the rules past `end`, every one up to it
        # is in (each series is appended in time order): about an interval; after three, measure() says what is missing.
        sel = f'release="{d.release}"'
        d.prometheus.wait_stamped_since(end, 3 * scrape_s, tuple(
            f"max(timestamp({series}{{{sel}}}))" for series in ("locust_requests_total",
                                                                "loadtest:generator_saturated_steady:ratio")))
        stamps, landings = report_landings(d.prometheus, sel, end, span_s)
        f = measure(d.prometheus, d.release, window_end(stamps, landings, spec.hold_s, scrape_s) or end, spec.hold_s,
                    scrape_s)
        if f.target_cpu_ratio is not None:
            return f, f.target_cpu_ratio * d.target_cpus
        if not target_samples:
            return f, None
        shares = [cores / d.target_cpus for cores in target_samples]
        window = dataclasses.replace(f.window, target_cpu=sum(shares) / len(shares), target_share=sum(
            share >= verdict.SATURATED_CPU for share in shares) / len(shares))
        return dataclasses.replace(f, window=window), sum(target_samples) / len(target_samples)

    def record(self, of: str, index: int, load: int, f: Measured, target_cores: float | None
               ) -> tuple[sweepreport.StepRecord, verdict.Verdict]:
        """The step judged (the knee's Step, the verdict), said in a line: its record for the report, and its
        verdict."""
        d, spec = self.driver, self.spec
        busiest = max(f.worker_cpu, default=0.0)
        v = verdict.judge(f.window)
        a = f.arrival if spec.open_model else None  # a closed sweep of an open-model release keeps its closed form
        if spec.open_model and (a is None or a.offered_rps != load):
            raise SweepFailed(f"the Locust master offered {a.offered_rps if a else 'no'} requests/s over the "
                              f"window, not the step's {load}: was it started with the step's rate?")
        step = Step(index, load, f.rps, round(f.p95_ms, 1),
                    f.failures / f.requests if f.requests else 1.0, v.kind == verdict.GENERATOR_BOUND,
                    offered_rps=a.offered_rps if a else None, p99_ms=round(f.p99_ms, 1),
                    p99_bound_ms=spec.p99_bound_ms)
        late = ""
        if a:
            late = (f" of {a.offered_rps:,g} offered ({f.rps / a.offered_rps:.1%}), late starts "
                    + verdict.describe_late_starts({cause: a.late_share(cause) for cause in ("users", "cpu")}))
        self.progress(f"{of} done: {f.rps:,.0f} RPS{late}, p95 {f.p95_ms:.1f} ms, p99 {f.p99_ms:.1f} ms, "
                      f"failures {step.failure_ratio:.2%}, busiest worker {busiest:.0%}"
                      + ("" if target_cores is None else f", target {target_cores:.2f} core(s)")
                      + f"; {v.kind}: {v.reason}")
        return sweepreport.StepRecord(
            step=step, start=f.start, end=f.end, p50_ms=round(f.p50_ms, 1), p99_ms=round(f.p99_ms, 1),
            requests=round(f.requests), failures=round(f.failures), users=round(f.users),
            worker_cpu_max=busiest, worker_cpu_cores=f.worker_cpu_cores, target_cpu_cores=target_cores,
            target_cpus=d.target_cpus, workers=d.workers, verdict=v.kind,
            **({"offered_rps": a.offered_rps, "late_users_share": a.late_share("users"),
                "late_cpu_share": a.late_share("cpu"),
                "service_p99_ms": None if (p99 := a.service_time_ms.get(0.99)) is None else round(p99, 1)}
               if a else {})), v

    def watch(self, of: str, phase: str, seconds: int, sample: bool) -> None:
        """Wait `seconds`, printing Locust's live figures every few seconds (and sampling CPU when measuring). A
        master lost meanwhile fails the step at once (MasterGone), not at its window's end."""
        started = time.monotonic()
        last_print, silence = started, Silence()
        while (elapsed := time.monotonic() - started) < seconds:
            if self.stopping.wait(min(1.0, seconds - elapsed)):
                raise StepStopped(f"{of} stopped during its {phase}")
            self.check_master(of, phase, silence)
            if sample:
                self.driver.sample()
            now = time.monotonic()
            if now - last_print >= PROGRESS_EVERY_S or now - started >= seconds:
                last_print = now
                self.progress(f"  {of} {phase} {now - started:4.0f}/{seconds} s  "
                              f"{live_line(self.driver.locust, self.rates)}")

    def check_master(self, of: str, phase: str, silence: Silence) -> None:
        """The master still running the step's swarm: silent for silence.patience_s, or no longer running it (ready
        for a new run: it restarted, its statistics and the step's swarm gone), it is lost."""
        try:
            state = self.driver.locust.state()["state"]
        except LocustWebError as e:
            if silence.missed():
                raise MasterGone(f"{of}: the Locust master has not answered for {silence.patience_s:g} s during the "
                                 f"{phase} ({e}): its pod gone, or the way to it (port-forward) lost") from None
            return
        silence.heard()
        if state not in ("spawning", "running"):
            why = ("a new master: the one that ran the step restarted, its statistics gone" if state == "ready" else
                   "its swarm was stopped: in its web UI, or its pod is shutting down")
            raise MasterGone(f"{of}: the Locust master is {state} during the {phase}, where it ran the step's swarm "
                             f"({why})")


def live_line(locust: LocustWeb, rates: PerSecond, seen=lambda entries: None) -> str:
    """Locust's live figures (locustweb.live_figures), the RPS from the per-second counts (`rates`, kept across calls)
    and each worker's CPU from its last report; `seen` gets the statistics read."""
    try:
        s = locust.status()
        entries = locust.stats_entries()
        rates.count(entries)
        seen(entries)
    except LocustWebError as e:
        return f"(no live figures: {e})"
    return live_figures(s, rates.live_rps(), [w.get("cpu_usage", 0) / 100 for w in s.get("workers", [])])
