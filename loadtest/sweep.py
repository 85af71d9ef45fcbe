"""`loadtest sweep`: raise the load step by step, read what each step gave from Prometheus, find the knee, report.

Each step sets the load (users; workers; or the target's CPUs, as NGINX measured its tables), waits out a warm-up,
then holds for a measured window. RPS, failures and latency percentiles of the window come from Prometheus (the
Locust metrics plugin's series), the workers' CPU from the saturation rules, the target's CPU from the rules where
they have it (cAdvisor in a cluster, HAProxy's own busy time) or, on the local stack, from the processes. The sweep
stops at the knee (RPS stopped rising while p95 grew) or as soon as the generator saturates: from then on the RPS is
the generator's ceiling, never the target's capacity. The report (CSV, JSON, HTML, Markdown table) follows.

Two ways to run: `--local` starts the whole stack on this machine (loadtest.sweep_local), `--release` drives an
installed release through `helm upgrade` and Locust's web API, reading the release's Prometheus
(loadtest.sweep_cluster).
"""
from __future__ import annotations

import datetime
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from . import paths, report, verdict
from .knee import Step, failing
from .locustweb import LocustWeb, LocustWebError
from .prom import Prometheus, PrometheusError

# What a sweep raises, and how the report names it.
KINDS = {"users": "users", "workers": "workers", "target-cpus": "target CPUs"}
# Locust's latency percentiles cover the last 10 s of responses: a shorter warm-up would mix the previous step's
# latencies into this step's p95.
MIN_WARMUP_S = 10
PROGRESS_EVERY_S = 5
# Locust workers send their request counts to the master in batches this far apart (locust.runners).
WORKER_REPORT_MS = 3000
SPAWN_TIMEOUT_S = 120


class SweepError(RuntimeError):
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

    def sample(self) -> None:
        """Called about once a second during a measured window (the local stack samples process CPU)."""

    def window_cpu(self) -> tuple[float | None, float | None]:
        """(target cores, share of the machine's cores busy) measured outside Prometheus over the window just
        ended, each None where the driver has no such figure."""


@dataclass(frozen=True)
class Spec:
    kind: str  # a key of KINDS
    loads: list[int]
    warmup_s: int
    hold_s: int
    users_per_worker: int  # users of a workers or target-cpus sweep: this times the workers
    spawn_rate: float  # users started per second; 0: all at once

    def __post_init__(self):
        if self.kind not in KINDS:
            raise SweepError(f"--sweep {self.kind!r}: one of {', '.join(KINDS)}")
        if not self.loads or any(n < 1 for n in self.loads):
            raise SweepError("--steps: positive whole numbers, e.g. 50,100,200")
        if any(b <= a for a, b in zip(self.loads, self.loads[1:])):
            raise SweepError(f"--steps {','.join(map(str, self.loads))}: each step must be above the one before")
        if self.warmup_s < MIN_WARMUP_S:
            raise SweepError(f"--warmup {self.warmup_s}s: at least {MIN_WARMUP_S}s, since Locust's latency percentiles "
                             f"cover the last {MIN_WARMUP_S} s and would mix in the previous step")
        if self.hold_s < 1 or self.users_per_worker < 1 or self.spawn_rate < 0:
            raise SweepError("--hold and --users-per-worker must be positive, --spawn-rate not negative")

    def users(self, load: int, workers: int) -> int:
        return load if self.kind == "users" else self.users_per_worker * workers


def parse_steps(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise SweepError(f"--steps {text!r}: whole numbers separated by commas, e.g. 50,100,200") from None


def window_range(seconds: float) -> str:
    return f"{max(1, round(seconds * 1000))}ms"


def measured_window(hold_s: int, scrape_s: float) -> int:
    """Check the hold against the two clocks a window must hold whole periods of: a worker's stats report (its
    requests reach the master in 3 s batches) and Prometheus' scrape. Then each edge of the window sits at the same
    point of both cycles, and the count over it is whole batches: exact, where a window cutting batches is off by
    up to one batch per edge (half the requests of a 6 s window)."""
    period_ms = math.lcm(WORKER_REPORT_MS, round(scrape_s * 1000))
    if (hold_s * 1000) % period_ms:
        whole = -(-hold_s * 1000 // period_ms) * period_ms // 1000
        raise SweepError(f"--hold {hold_s}s: use a multiple of {period_ms / 1000:g} s (Locust workers report every "
                         f"{WORKER_REPORT_MS / 1000:g} s and Prometheus scrapes every {scrape_s:g} s), e.g. "
                         f"--hold {whole}s")
    return hold_s


def measure(prometheus: Prometheus, release: str, end: float, hold_s: int, scrape_s: float) -> dict:
    """What Prometheus saw of one release over the `hold_s` seconds up to its last scrape at or before `end`: every
    figure a step record holds. The window's edges are scrape timestamps, so its counts are exact differences."""
    sel = f'release="{release}"'
    requests_now, failures_now = f"sum(locust_requests_total{{{sel}}})", f"sum(locust_request_failures_total{{{sel}}})"
    scraped = f"max(timestamp(locust_requests_total{{{sel}}}))"

    def counters(at: float) -> tuple[float, float, float]:
        stamp, requests = prometheus.scalar(scraped, at), prometheus.scalar(requests_now, at)
        if stamp is None or requests is None:
            raise SweepError(f"Prometheus has no locust_requests_total of release {release!r}: is it scraping the "
                             "Locust master (monitoring.enabled) and is the release name right?")
        return stamp, requests, prometheus.scalar(failures_now, at) or 0.0

    t_end, requests_end, failures_end = counters(end)
    # The scrape hold_s before: half an interval later than its nominal time, past its jitter.
    t_start, requests_start, failures_start = counters(t_end - hold_s + scrape_s / 2)
    if requests_end < requests_start or t_end - t_start < hold_s / 2:
        raise SweepError("Locust's request counters went back during the step (its statistics were reset): "
                         "measure again")
    r = window_range(t_end - t_start)

    def over(expr: str) -> float | None:
        return prometheus.scalar(expr, t_end)

    quantiles = {q: over(f'avg_over_time(locust_aggregated_response_time_seconds{{{sel}, quantile="{q}"}}[{r}])')
                 for q in ("0.5", "0.95", "0.99")}
    requests = requests_end - requests_start
    return {
        "start": t_start, "end": t_end, "requests": requests, "failures": failures_end - failures_start,
        "rps": requests / (t_end - t_start),
        "p50_ms": 1000 * (quantiles["0.5"] or 0.0), "p95_ms": 1000 * (quantiles["0.95"] or 0.0),
        "p99_ms": 1000 * (quantiles["0.99"] or 0.0),
        "users": over(f"max(max_over_time(locust_users{{{sel}}}[{r}]))") or 0.0,
        "worker_cpu": prometheus.values(f"avg_over_time(loadtest:worker_cpu_saturation:ratio{{{sel}}}[{r}])", t_end),
        "worker_cpu_cores": over(f"sum(avg_over_time(locust_worker_cpu_usage_cores{{{sel}}}[{r}]))") or 0.0,
        "worker_throttling": over(f"max(avg_over_time(loadtest:worker_cpu_throttling:ratio{{{sel}}}[{r}]))"),
        "target_cpu_ratio": over(f"sum(avg_over_time(loadtest:target_cpu_saturation:ratio{{{sel}}}[{r}]))"),
    }


class Sweeper:
    def __init__(self, driver: Driver, spec: Spec, progress=print):
        self.driver, self.spec, self.progress = driver, spec, progress

    def run(self) -> report.Sweep:
        d, spec = self.driver, self.spec
        scrape_s = d.prometheus.scrape_interval_s()
        measured_window(spec.hold_s, scrape_s)
        sweep = report.Sweep(conditions={
            **d.conditions(), "sweep": f"{KINDS[spec.kind]} {', '.join(map(str, spec.loads))}",
            "warm-up per step": f"{spec.warmup_s} s", "measured window per step": f"{spec.hold_s} s",
            "Prometheus": f"{d.prometheus.version()}, scrape every {scrape_s:g} s",
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        }, sweep_of=KINDS[spec.kind])
        try:
            for index, load in enumerate(spec.loads):
                record = self.step(index, load, scrape_s)
                sweep.records.append(record)
                knee = sweep.knee
                if knee.generator_bound_at is not None:
                    self.progress(f"stopping: the generator saturated at step {index + 1}; more load would only "
                                  "measure the generator")
                    break
                if knee.found:
                    why = ("requests failed" if failing(knee.knee_step)
                           else "RPS stopped rising while p95 grew")
                    self.progress(f"stopping: knee at step {index + 1} ({why})")
                    break
        finally:
            try:
                d.locust.stop()
            except LocustWebError:
                pass
        return sweep

    def step(self, index: int, load: int, scrape_s: float) -> report.StepRecord:
        d, spec = self.driver, self.spec
        of = f"step {index + 1}/{len(spec.loads)}"
        if spec.kind == "workers":
            d.set_workers(load)
        elif spec.kind == "target-cpus":
            d.set_target_cpus(load)
        users = spec.users(load, d.workers)
        self.progress(f"{of}: {KINDS[spec.kind]} {load}: {users} users on {d.workers} worker(s), target at "
                      f"{d.target_cpus} CPU(s); warm-up {spec.warmup_s} s, then {spec.hold_s} s measured")
        d.locust.swarm(users, spec.spawn_rate or users)
        d.locust.wait_users(users, SPAWN_TIMEOUT_S)
        self.watch(of, "warm-up", spec.warmup_s, sample=False)
        # One scrape interval more than the window: the window (whole scrapes up to the last one) fits inside.
        self.watch(of, "measuring", math.ceil(spec.hold_s + scrape_s), sample=True)
        end = time.time()
        target_cores_local, host_cpu = d.window_cpu()
        # The last scrape before `end` reaches the query API (and the rules evaluate it) within two intervals.
        time.sleep(2 * scrape_s)
        f = measure(d.prometheus, d.release, end, spec.hold_s, scrape_s)
        target_cores = target_cores_local
        if f["target_cpu_ratio"] is not None:
            target_cores = f["target_cpu_ratio"] * d.target_cpus
        v = verdict.judge(f["worker_cpu"], target_cores, d.target_cpus, host_cpu, f["worker_throttling"])
        step = Step(index, load, f["rps"], round(f["p95_ms"], 1),
                    f["failures"] / f["requests"] if f["requests"] else 1.0, v.kind == verdict.GENERATOR_BOUND)
        self.progress(f"{of} done: {f['rps']:,.0f} RPS, p95 {f['p95_ms']:.1f} ms, failures {step.failure_ratio:.2%}, "
                      f"busiest worker {max(f['worker_cpu'], default=0):.0%}"
                      + ("" if target_cores is None else f", target {target_cores:.2f} core(s)")
                      + f"; {v.kind}: {v.reason}")
        return report.StepRecord(
            step=step, start=f["start"], end=f["end"], p50_ms=round(f["p50_ms"], 1), p99_ms=round(f["p99_ms"], 1),
            requests=round(f["requests"]), failures=round(f["failures"]), users=round(f["users"]),
            worker_cpu_max=max(f["worker_cpu"], default=0.0), worker_cpu_cores=f["worker_cpu_cores"],
            target_cpu_cores=target_cores,
            target_cpus=d.target_cpus, workers=d.workers, verdict=v.kind)

    def watch(self, of: str, phase: str, seconds: int, sample: bool) -> None:
        """Wait `seconds`, printing Locust's live figures every few seconds (and sampling CPU when measuring)."""
        started = time.monotonic()
        last_print = started
        while (elapsed := time.monotonic() - started) < seconds:
            time.sleep(min(1.0, seconds - elapsed))
            if sample:
                self.driver.sample()
            now = time.monotonic()
            if now - last_print >= PROGRESS_EVERY_S or now - started >= seconds:
                last_print = now
                self.progress(f"  {of} {phase} {now - started:4.0f}/{seconds} s  {live_line(self.driver.locust)}")


def live_line(locust: LocustWeb) -> str:
    try:
        s = locust.status()
    except LocustWebError as e:
        return f"(no live figures: {e})"
    p95 = (s.get("current_response_time_percentiles") or {}).get("response_time_percentile_0.95")
    cpus = ", ".join(f"{w.get('cpu_usage', 0):.0f}%" for w in s.get("workers", []))
    return (f"users {s.get('user_count', 0):>5}  RPS {s.get('current_rps', 0):>9,.0f}  "
            f"failures {s.get('fail_ratio', 0):>6.2%}  p95 {p95 or 0:>5.0f} ms  worker CPU {cpus or '-'}")


def print_summary(sweep: report.Sweep, files: dict[str, Path], out=print) -> None:
    out("")
    out(report.sizing_table(sweep))
    out("")
    out(report.verdict_line(sweep))
    out("report: " + ", ".join(str(p) for p in files.values()))


def cmd_sweep(args) -> int:
    from .cli import UsageError
    from . import local, sweep_cluster, sweep_local

    try:
        spec = Spec(kind=args.sweep, loads=parse_steps(args.steps),
                    warmup_s=local.parse_duration_s(args.warmup), hold_s=local.parse_duration_s(args.hold),
                    users_per_worker=args.users_per_worker, spawn_rate=args.spawn_rate)
        if args.local == bool(args.release):
            raise SweepError("say where to sweep: --local (this machine) or --release NAME (an installed release)")
        if args.local:
            driver = sweep_local.LocalDriver(
                Path(args.output) / "stack", scenario=args.scenario, target=args.target, tls_mode=args.tls_mode,
                workers=args.workers, wait_s=args.wait, values=sweep_local.parse_set(args.set),
                spec=spec, progress=print)
        else:
            if not (args.prometheus and args.locust):
                raise SweepError("--release needs --prometheus URL and --locust URL (port-forwards; see NOTES.txt)")
            driver = sweep_cluster.ClusterDriver(
                args.release, args.namespace, Path(args.chart), args.locust, args.prometheus, spec=spec,
                kubeconfig=Path(args.kubeconfig) if args.kubeconfig else None, progress=print)
    except (SweepError, ValueError) as e:
        raise UsageError(str(e)) from None
    except sweep_cluster.ClusterError as e:
        print(f"loadtest sweep: {e}", file=sys.stderr)
        return 1
    try:
        with driver:
            sweep = Sweeper(driver, spec).run()
    except (SweepError, PrometheusError, LocustWebError, sweep_local.LocalStackError,
            sweep_cluster.ClusterError) as e:
        print(f"loadtest sweep: {e}", file=sys.stderr)
        return 1
    if not sweep.records:
        print("loadtest sweep: no step was measured", file=sys.stderr)
        return 1
    files = report.write(sweep, Path(args.output))
    print_summary(sweep, files)
    return 0


def register(sub) -> None:
    from . import planner, targets

    p = sub.add_parser("sweep", help="raise the load step by step, find the knee, write a sizing report",
                       description=__doc__)
    where = p.add_argument_group("where")
    where.add_argument("--local", action="store_true", help="start the whole stack on this machine (127.0.0.1)")
    where.add_argument("--release", help="drive this installed release (helm upgrade and Locust's web API)")
    where.add_argument("--namespace", default="default", help="the release's namespace (default: default)")
    where.add_argument("--prometheus", help="the release's Prometheus, e.g. http://127.0.0.1:9090 (port-forward)")
    where.add_argument("--locust", help="the release's Locust web UI, e.g. http://127.0.0.1:8089 (port-forward); "
                                        "http://user:password@… when locust.webAuth is on")
    where.add_argument("--chart", default=str(paths.CHART), help="chart to upgrade with (default: this repo's)")
    where.add_argument("--kubeconfig", help="kubeconfig for helm (default: helm's own)")
    steps = p.add_argument_group("steps")
    steps.add_argument("--sweep", default="users", choices=list(KINDS),
                       help="what each step raises (default users); target-cpus needs a release")
    steps.add_argument("--steps", required=True, help="the load of each step, rising, e.g. 50,100,200,400")
    steps.add_argument("--warmup", default="15s", help=f"unmeasured time at the start of each step (default 15s, "
                                                       f"at least {MIN_WARMUP_S}s)")
    steps.add_argument("--hold", default="180s", help="measured window of each step (default 180s, the seed's method)")
    steps.add_argument("--users-per-worker", type=int, default=50,
                       help="users per worker in workers and target-cpus sweeps (default 50)")
    steps.add_argument("--spawn-rate", type=float, default=0, help="users started per second (default: all at once)")
    loc = p.add_argument_group("local stack (--local)")
    loc.add_argument("--scenario", default="keepalive_1kb", choices=list(planner.SCENARIOS))
    loc.add_argument("--target", default="haproxy", choices=targets.TARGETS, help="what Locust loads (default haproxy)")
    loc.add_argument("--tls-mode", choices=("none", "edge", "passthrough", "reencrypt"),
                     help="as for `loadtest local` (default: edge for tls_handshake, none otherwise)")
    loc.add_argument("--workers", type=int, default=1, help="Locust workers of users sweeps (default 1)")
    loc.add_argument("--wait", type=float, default=0.0, help="seconds each user waits between requests (default 0)")
    loc.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                     help="chart value for the local target, as helm --set, e.g. haproxy.sessionRateLimit=2000")
    p.add_argument("--output", default="sweep-report", help="folder for the report (default ./sweep-report)")
    p.set_defaults(func=cmd_sweep)
