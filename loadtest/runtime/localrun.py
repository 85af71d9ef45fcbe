"""A whole load test on one machine, no cluster: the chart's target and backend (runtime.stack), a Locust master
and workers (runtime.locust), a bounded run, and its figures: RPS, failures, latency, CPU of each side.

CPU comes from the processes (psutil), since no Prometheus runs here; the verdict is loadtest.judging.verdict's over the
steady window (every user running, before the stop), from the saturation rules' thresholds.
"""
from __future__ import annotations

import csv
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from loadtest_shared import checks, results, settings, verdict

from .. import paths
from ..errors import RunFailed, UsageError
from ..judging import locuststats
from ..judging.measured import Measured
from ..workload import arrival, scenarios, targets, usertest
from . import packages, tools
from .cpu import CpuMeter, cpu_model
from .locust import MASTER, RESET_STATS_ENV, Locust, user_classes, version as locust_version
from .locustweb import LocustWeb, LocustWebError, live_figures
from .processes import STARTUP_TIMEOUT_S
from .stack import Stack

# loadtest_arrival's settings: the rate for the whole run, and where the master writes its figures.
# Where the master writes loadtest_faults' record of its workers when it quits.
FAULTS_FILE = "faults.json"
# loadtest_abort's conditions, one a line.
# A worker that ends while the swarm runs is started again, as its Deployment would (the master, rebalancing, gives
# it users); one that keeps ending is a fault of the test, not of the run: past this many, the run fails.
MAX_WORKER_RESTARTS = 3
# Locust needs a moment after the run time to collect the workers' last reports and write its files.
SHUTDOWN_GRACE_S = 30


class LocalRunError(RunFailed):
    pass


@dataclass(frozen=True)
class Result(Measured):
    """A local run: what its steady window measured (Locust's final statistics, each process's CPU: the worker's
    ceiling is one core) and what was run."""

    scenario: str = ""
    workers: int = 0
    run_time_s: int = 0
    target: str = "backend"
    tls_mode: str = "none"
    target_cpus: int = 1
    host_cpu: float | None = None  # mean share of all the machine's cores in use, whoever used them
    phases: SteadyWindow | None = None  # what was judged, and the ramp-up and stop beside it
    p999_ms: float | None = None
    response_bytes: float = 0.0  # mean body size per request
    faults: dict | None = None  # loadtest_faults' record of the workers, and the target's own count of requests

    @property
    def target_cpu(self) -> float | None:
        """The cores the target's processes used, steady mean; None where not measured (another host)."""
        return None if self.target_cpu_ratio is None else self.target_cpu_ratio * self.target_cpus

    @property
    def verdict(self) -> verdict.Verdict | None:
        """Judged here from the processes' CPU over the steady window (`loadtest local` runs no Prometheus to record
        the rules' signals); None when every user never ran."""
        return verdict.judge(self.window) if self.window.samples else None


def describe(target: str, tls_mode: str) -> str:
    what = targets.get(target).description
    return what if tls_mode == "none" else f"{what} (TLS {tls_mode})"


@dataclass(frozen=True)
class OwnTest:
    """A user's locustfile, checked, with the folders its imports need."""

    locustfile: Path
    pythonpath: tuple[Path, ...]
    user_classes: list[str]

    @property
    def name(self) -> str:
        """The file's name, or its folder's for a file called locustfile.py (examples/shop/locustfile.py: shop)."""
        return self.locustfile.parent.name if self.locustfile.stem == "locustfile" else self.locustfile.stem


def own_test_env(locustfile: Path, pythonpath: tuple[Path, ...] = ()) -> dict[str, str]:
    """PYTHONPATH for a user's test: its folder (helpers imported late too), the project's modules it may import
    (leanhttp, loadtest_lib), its packages, then whatever the caller's environment had."""
    folders = [str(d) for d in (locustfile.parent, paths.PLUGIN, *pythonpath)]
    return {"PYTHONPATH": os.pathsep.join(filter(None, [*folders, os.environ.get("PYTHONPATH")]))}


def own_test(locustfile: str, requirements: str | None = None, progress=print) -> OwnTest:
    """The user's test, refused before anything starts when it could not run: the file (usertest), its packages
    (installed, hash-checked), and at least one User class as Locust's own loader finds them."""
    path = usertest.check_locustfile(Path(locustfile))
    pythonpath = (packages.install(Path(requirements), progress=progress),) if requirements else ()
    classes = user_classes(usertest.locustfiles(path), own_test_env(path, pythonpath))
    if not classes:
        raise UsageError(f"-f {locustfile}: no User class: Locust runs the classes derived from User, HttpUser, "
                         "FastHttpUser or LeanHttpUser that the file defines or imports; add one")
    return OwnTest(path, pythonpath, classes)


# A second's requests are all counted once every worker has sent its report after it: workers report every 3 s.
REPORT_LAG_S = 4


class Series:
    """The run's figures second by second, in series.csv of the run's folder, each second's phase (ramp-up, steady,
    stop) beside it. A second's line is written once its requests are all counted (REPORT_LAG_S later; the rest at
    the end), so a crash or an interrupt keeps what was seen until then. Its RPS is the requests Locust counted with
    a timestamp in that second, from the per-second counts of the master's statistics."""

    def __init__(self, path: Path):
        self.file = path.open("w", newline="")
        self.writer = csv.writer(self.file)
        self.writer.writerow(results.SERIES_COLUMNS)
        self.rates = locuststats.PerSecond()
        self.pending: list[tuple[int, list]] = []  # (second, the line's other cells) not yet counted in full
        self.last_second: int | None = None

    def add(self, second: int, phase: str, users: int, status: dict, worker_cpu: list[float],
            target_cpu: float | None, host_cpu: float) -> None:
        """A second's figures: `target_cpu` as a share of the target's CPUs (None when not measured). A sampling tick
        takes a little over a second (its sleep, then the master's queries), so now and then one skips a second: the
        seconds skipped since the last get their own requests and failures, and this tick's other figures."""
        percentiles = status.get("current_response_time_percentiles") or {}
        cells = [phase, users, percentiles.get("response_time_percentile_0.5"),
                 percentiles.get("response_time_percentile_0.95"), None, round(max(worker_cpu, default=0.0), 3), None,
                 None if target_cpu is None else round(target_cpu, 3), round(host_cpu, 3), None]
        first = second if self.last_second is None or second <= self.last_second else self.last_second + 1
        self.pending += [(skipped, cells) for skipped in range(first, second + 1)]
        self.last_second = second

    def flush(self, now: float | None = None) -> None:
        """Write the lines whose second is counted in full by `now` (all of them without it)."""
        while self.pending and (now is None or self.pending[0][0] <= now - REPORT_LAG_S):
            second, (phase, users, *figures) = self.pending.pop(0)
            requests, failures = self.rates.counts.get(second, (0, 0))
            self.writer.writerow([second, phase, users, requests, round(failures / requests, 5) if requests else 0.0,
                                  *figures])
        self.file.flush()

    def close(self) -> None:
        self.flush()
        self.file.close()


# A second of the run is in one phase: users being spawned, every user running (the steady window, the only one
# judged), or after the stop.


@dataclass(frozen=True)
class SteadyWindow:
    """The part of the run that was judged: every user running, before the stop."""

    start: float | None = None  # unix time of its first and last sample; None when it never came
    end: float | None = None
    samples: int = 0
    ramp_up_s: float = 0.0  # from the swarm's start until every user ran
    stop_s: float = 0.0  # from the stop until Locust ended

    def to_json(self) -> dict:
        return {"start": self.start, "end": self.end, "seconds": round(self.end - self.start, 1) if self.samples
                else 0.0, "samples": self.samples, "ramp_up_s": round(self.ramp_up_s, 1),
                "stop_s": round(self.stop_s, 1)}

    def describe(self) -> str:
        if not self.samples:
            return f"no steady window: users were still being spawned after {self.ramp_up_s:.0f} s"
        return (f"steady window {self.end - self.start:.0f} s ({self.samples} one-second samples, every user "
                f"running); ramp-up {self.ramp_up_s:.0f} s and stop {self.stop_s:.0f} s reported, not judged")


class Phases:
    """The run's phases tick by tick, as the master reports its state, and the steady samples the verdict judges: a
    tick is steady when every user ran at both its ends (the previous tick's state was running too)."""

    def __init__(self):
        self.samples: list[verdict.Sample] = []
        self.swarm_start = self.steady_start = self.steady_end = self.stopped = None
        self.steady_before = False

    def tick(self, now: float, state: str, sample: verdict.Sample) -> str | None:
        """The phase of the tick ending at `now` (None while the workers are awaited); a steady tick keeps `sample`."""
        steady_now = state == "running"
        if state not in ("spawning", "running") and self.swarm_start is None:
            return None
        self.swarm_start = self.swarm_start or now
        if steady_now and self.steady_before:
            phase = results.STEADY
            self.samples.append(sample)
            self.steady_end = now
        elif steady_now or state == "spawning":
            phase = results.RAMP_UP
        else:
            phase = results.STOP
            self.stopped = self.stopped or now
        if steady_now and self.steady_start is None:
            self.steady_start = now
        self.steady_before = steady_now
        return phase

    def window(self, ended: float) -> SteadyWindow:
        return SteadyWindow(
            start=self.steady_start if self.samples else None, end=self.steady_end, samples=len(self.samples),
            ramp_up_s=((self.steady_start or ended) - self.swarm_start) if self.swarm_start else 0.0,
            stop_s=ended - self.stopped if self.stopped else 0.0)


def _locustfiles(scenario: str, test: OwnTest | None, target: str, tls_mode: str | None,
                 wait_s: float) -> tuple[list[str] | str, dict, str]:
    """(the locustfiles, their environment, the TLS mode) of a built-in scenario or of the user's test."""
    if test is not None:
        return usertest.locustfiles(test.locustfile), own_test_env(test.locustfile, test.pythonpath), \
            tls_mode or "none"
    chosen = scenarios.get(scenario)
    tls_mode = tls_mode or chosen.default_tls_mode
    targets.check_tls_mode(chosen, targets.get(target), tls_mode)
    return chosen.locustfile, {settings.WAIT.env: f"{wait_s:g}"}, tls_mode


def _live_line(seconds: float, phase: str, users: int, rps: float | None, status: dict, worker_cpu: list[float],
               target: str, target_cpu: float | None) -> str:
    return (f"  [{seconds:4.0f} s] {phase:<7}  {live_figures(status, rps, worker_cpu, users)}"
            + (f"  {target} CPU {target_cpu:.0%}" if target_cpu is not None else ""))


class Workers:
    """A run's worker processes and their CPU meters. One that ends while the swarm runs is started again
    (MAX_WORKER_RESTARTS at most; the master records the loss, the result says what it cost); one that ends before
    the swarm started, or past the restarts, fails the run."""

    def __init__(self, stack: Stack, locust: Locust, progress):
        self.stack, self.locust, self.progress = stack, locust, progress
        self.meters = [CpuMeter(w.pid) for w in locust.workers]
        self.restarts = 0

    def ended(self) -> list[int]:
        """The workers that exited other than with 0 (a worker ends with 0 on the master's quit)."""
        return [i for i, worker in enumerate(self.locust.workers) if worker.poll() not in (None, 0)]

    def keep(self, ended: list[int], state: str, swarm_start: float | None) -> None:
        if ended and state in ("spawning", "running") and self.restarts < MAX_WORKER_RESTARTS:
            for i in ended:
                code = self.locust.workers[i].returncode
                self.restarts += 1
                self.meters[i] = CpuMeter(self.locust.restart_worker(i).pid)
                self.progress(f"  worker {i} ended ({f'signal {-code}' if code < 0 else f'exit {code}'}) "
                              f"{time.time() - (swarm_start or time.time()):.0f} s into the run: started again "
                              "(the result says what the loss cost)")
        elif ended and state not in ("cleanup", "stopping", "stopped"):
            i = ended[0]
            raise LocalRunError(f"Locust worker {i} exited with {self.locust.workers[i].returncode} during the run"
                                + (f" (the {MAX_WORKER_RESTARTS + 1}th worker to end)" if self.restarts else "")
                                + f":\n{self.stack.procs.log_tail(f'locust-worker-{i}', lines=3)}")

    def cpu(self) -> list[float]:
        """Each worker's cores since the last reading."""
        return [m.sample(keep=False) for m in self.meters]


def _watch(stack: Stack, master, web: LocustWeb, locust: Locust, server, target: str, series: Series,
           deadline: float, progress) -> Phases:
    """Every second until the master ends: the workers' and the target's CPU over that second (measured here,
    rather than from Locust's worker reports, which lag by up to 5 s), the master's state and figures, a line of
    series.csv and a live line; the workers kept (Workers)."""
    workers = Workers(stack, locust, progress)
    target_meter = CpuMeter(server.proc.pid) if server else None
    psutil.cpu_percent(None)
    phases = Phases()
    while master.poll() is None:
        if time.monotonic() > deadline:
            raise LocalRunError(f"the Locust master did not finish in time:\n{stack.procs.log_tail(MASTER)}")
        time.sleep(1)
        # Read before the master's state: a worker that had died while the master still ran the test (its
        # locustfile refused at start, say) left it sending less, or nothing.
        ended = workers.ended()
        try:
            runner, status = web.state(), web.status()
            series.rates.count(web.stats_entries())
        except LocustWebError:
            continue
        workers.keep(ended, runner["state"], phases.swarm_start)
        now = time.time()
        target_cpu = target_meter.sample(keep=False) if target_meter else None
        target_share = None if target_cpu is None else target_cpu / server.cpus
        worker_cpu, host_cpu = workers.cpu(), psutil.cpu_percent(None) / 100
        phase = phases.tick(now, runner["state"], verdict.Sample(worker_cpu=tuple(worker_cpu), host_cpu=host_cpu,
                                                                 target_cpu=target_share))
        if phase is None:
            continue  # waiting for the workers
        # The second the tick's interval (the last second) mostly lies in.
        series.add(int(now - 0.5), phase, runner["user_count"], status, worker_cpu, target_share, host_cpu)
        series.flush(now)
        progress(_live_line(now - phases.swarm_start, phase, runner["user_count"], series.rates.live_rps(), status,
                            worker_cpu, target, target_cpu))
    return phases


def run(scenario: str, users: int, spawn_rate: float, run_time_s: int, workers: int, workdir: Path,
        progress=print, target: str = "backend", tls_mode: str | None = None, test: OwnTest | None = None,
        host: str | None = None, wait_s: float = 0.0, arrival_rate: float | None = None,
        abort_on: list[str] = ()) -> Result:
    """A bounded run of a built-in `scenario`, or of the user's `test` (named `scenario` then), against the local
    stack's `target`, or against `host` when given. Locust's files (stats.json, stats*.csv, report.html), the
    process logs and the run's series.csv go to `workdir`. Locust's statistics, and so its files and the checks,
    cover the steady window: it resets them once every user runs (--reset-stats); series.csv has the ramp-up.
    With `arrival_rate` the users are the open model's pool: requests go out at that rate (loadtest_arrival), the
    latencies are from each request's slot, and the master writes the service times and late starts to arrival.json.
    `abort_on`: conditions that stop the run early (loadtest_abort), in the checks' language."""
    files, env, tls_mode = _locustfiles(scenario, test, target, tls_mode, wait_s)
    env.update(_plugin_env(workdir, arrival_rate, abort_on))
    workdir.mkdir(parents=True, exist_ok=True)
    with Stack(workdir) as stack:
        if host is None:
            _, server = stack.target(target, tls_mode)
            host = server.url(tls=tls_mode != "none")
            where = describe(target, tls_mode)
        else:
            server, target, where = None, targets.URL, "your host"
        locust = Locust(stack.procs, files, env=env)
        # --autostart rather than --headless: the run is the same, and the web UI's JSON gives live figures.
        master = locust.start_master(
            "--autostart", "--autoquit", "0", "-u", str(users), "-r", str(spawn_rate), "-t", f"{run_time_s}s",
            "--host", host, "--csv", str(workdir / "stats"), "--json-file", str(workdir / "stats"),
            "--html", str(workdir / "report.html"), "--exit-code-on-error", "0", "--enable-rebalancing",
            expect_workers=workers, expect_workers_wait_s=STARTUP_TIMEOUT_S)
        counted_before = server.requests_counted() if server else None
        locust.start_workers(workers)
        load = f"{arrival_rate:,g} requests/s from {users} users" if arrival_rate else f"{users} users"
        progress(f"loadtest local: {scenario} against {where} on {host}, "
                 f"{workers} worker(s), {load}, {run_time_s} s")
        series = Series(workdir / "series.csv")
        try:
            phases = _watch(stack, master, LocustWeb(locust.web_url, locust.web_credentials), locust, server,
                            target, series, time.monotonic() + STARTUP_TIMEOUT_S + run_time_s + SHUTDOWN_GRACE_S,
                            progress)
        finally:
            final = workdir / "stats.json"
            if final.exists():  # the counts of the last seconds, every worker's last report in them
                series.rates.count(json.loads(final.read_text()))
            series.close()
        if master.returncode != 0:
            raise LocalRunError(f"the Locust master exited with {master.returncode}:\n{stack.procs.log_tail(MASTER)}")
        counted_after = server.requests_counted() if server else None
    return _result(workdir, phases, scenario, workers, users, run_time_s, server, target, tls_mode, arrival_rate,
                   _faults(workdir, counted_before, counted_after))


def _plugin_env(workdir: Path, arrival_rate: float | None, abort_on: list[str]) -> dict[str, str]:
    """What the plugin's modules read in master and workers: the statistics reset once every user runs (as Locust
    asks), the open model's rate and figures file, the faults file, the early stop's conditions."""
    env = {RESET_STATS_ENV: "true", settings.FAULTS_FILE.env: str(workdir / FAULTS_FILE)}
    if arrival_rate:
        env[settings.ARRIVAL_RATE.env] = repr(float(arrival_rate))
        env[settings.ARRIVAL_FILE.env] = str(workdir / arrival.FILE)
    if abort_on:
        env[settings.ABORT_ON.env] = "\n".join(abort_on)
    return env


def _faults(workdir: Path, counted_before: int | None, counted_after: int | None) -> dict | None:
    """The master's record of its workers (loadtest_faults), with the target's own count of the run's requests
    beside the workers' (less the two reads of it); None when the master wrote none."""
    path = workdir / FAULTS_FILE
    if not path.exists():
        return None
    faults = json.loads(path.read_text())
    faults["target_requests"] = (counted_after - counted_before - 1
                                 if None not in (counted_before, counted_after) else None)
    return faults


def _result(workdir: Path, phases: Phases, scenario: str, workers: int, users: int, run_time_s: int, server,
            target: str, tls_mode: str, arrival_rate: float | None, faults: dict | None) -> Result:
    """The run's Result: Locust's final figures, and the steady window's CPU means and verdict window."""
    ended = time.time()
    final = locuststats.read(workdir / "stats.json")
    if final is None:
        raise LocalRunError(f"Locust wrote no stats; see {workdir}/{MASTER}.log")
    samples = phases.samples
    figures = arrival.Figures.read(workdir / arrival.FILE) if arrival_rate else None
    steady = verdict.Window.of(samples, late_starts=figures.late_share("cpu") if figures else None,
                               late_users=figures.late_share("users") if figures else None,
                               loop_lagged=figures.loop_lagged if figures else None,
                               max_lag_ms=figures.max_lag_ms if figures else None,
                               achieved=final.rps / figures.offered_rps if figures else None,
                               requests_per_slot=final.requests / figures.slots if figures and figures.slots else None,
                               losses=tuple(faults["steady_losses"]) if faults else (),
                               silences=tuple(faults["steady_silences"]) if faults else (),
                               failure_ratio=final.failures / final.requests if final.requests else None)
    phased = phases.window(ended)
    worker_cpu = [sum(s.worker_cpu[i] for s in samples) / len(samples) for i in range(workers)] if samples else []
    return Result(
        start=phased.start or ended, end=phased.end or ended, requests=final.requests, failures=final.failures,
        rps=final.rps, p50_ms=final.p50_ms, p95_ms=final.p95_ms, p99_ms=final.p99_ms, users=users,
        worker_cpu=worker_cpu, worker_cpu_cores=sum(worker_cpu), target_cpu_ratio=steady.target_cpu if server else None,
        window=steady, arrival=figures, scenario=scenario, workers=workers, run_time_s=run_time_s, target=target,
        tls_mode=tls_mode, target_cpus=server.cpus if server else 1, host_cpu=steady.host_cpu, phases=phased,
        p999_ms=locuststats.figures(workdir / "stats.json")[checks.AGGREGATED].percentiles_ms[0.999],
        response_bytes=final.response_bytes, faults=faults)


def conditions(result: Result, spawn_rate: float, wait_s: float, host: str | None) -> dict[str, str]:
    """What a local run was, for its results folder: enough to run it again and to compare like with like."""
    facts = {
        "scenario": result.scenario, "target": host or describe(result.target, result.tls_mode),
        "where": f"this machine: {cpu_model()}, {os.cpu_count()} cores shared by generator and target",
        "workers": str(result.workers), "users": str(result.users), "spawn rate": f"{spawn_rate:g}/s",
        "run time": f"{result.run_time_s} s", "think time per user": f"{wait_s:g} s",
        "versions": f"chart {paths.chart_version()}, {versions(result.target, host)}",
    }
    if result.arrival:
        facts["model"] = f"open: {result.arrival.offered_rps:g} requests/s, latency from each request's slot"
    return facts


def versions(target: str, host: str | None) -> str:
    """Locust's version and those of the programs the run started: nginx (the backend) and HAProxy when it was the
    target; none for the user's --host. A program the run did not use need not be installed."""
    used = [] if host else [("nginx", "nginx")] + ([("HAProxy", "haproxy")] if target == "haproxy" else [])
    return ", ".join([f"Locust {locust_version()}", *(f"{name} {tools.version(tool)}" for name, tool in used)])
