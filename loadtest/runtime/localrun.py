"""A whole load test on one machine, no cluster: the chart's target and backend (runtime.stack), a Locust master
and workers (runtime.locust), a bounded run, and its figures: RPS, failures, latency, CPU of each side.

CPU comes from the processes (psutil), since no Prometheus runs here; the verdict is loadtest.verdict's, from the
saturation rules' thresholds.
"""
from __future__ import annotations

import csv
import dataclasses
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import locust
import psutil

from .. import locuststats, paths, scenarios, targets, usertest, verdict
from ..errors import RunFailed, UsageError
from . import packages, tools
from .cpu import CpuMeter, cpu_model
from .locust import MASTER, Locust, user_classes
from .locustweb import LocustWeb, LocustWebError
from .processes import STARTUP_TIMEOUT_S
from .stack import Stack

# Locust needs a moment after the run time to collect the workers' last reports and write its files.
SHUTDOWN_GRACE_S = 30


class LocalRunError(RunFailed):
    pass


@dataclass(frozen=True)
class Result(locuststats.RunStats):
    """The run's final figures (Locust's), what was run, and the CPU each side used."""

    scenario: str
    workers: int
    users: int
    run_time_s: int
    worker_cpu: list[float] = field(default_factory=list)  # mean fraction of one core per worker
    target_cpu: float | None = None  # mean cores used by the target's processes
    target_cpus: int = 1
    target: str = "backend"
    tls_mode: str = "none"
    host_cpu: float | None = None  # mean share of all the machine's cores in use, whoever used them

    @property
    def failure_ratio(self) -> float:
        return self.failures / self.requests if self.requests else 1.0

    @property
    def verdict(self) -> verdict.Verdict:
        """Judged here from the processes' CPU: `loadtest local` runs no Prometheus to record the rules' verdict."""
        return verdict.judge(self.worker_cpu, self.target_cpu, self.target_cpus, self.host_cpu)


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
    folders = [str(d) for d in (locustfile.parent, paths.LOCUSTFILES, *pythonpath)]
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


class Series:
    """The run's figures second by second, in series.csv of the run's folder: each line is written as it is
    measured, so a crash or an interrupt keeps what was seen until then."""

    COLUMNS = ("time", "users", "rps", "fail_ratio", "p50_ms", "p95_ms", "worker_cpu_max", "target_cpu_cores",
               "host_cpu")

    def __init__(self, path: Path):
        self.file = path.open("w", newline="")
        self.writer = csv.writer(self.file)
        self.writer.writerow(self.COLUMNS)

    def add(self, status: dict, worker_cpu: list[float], target_cpu: float | None, host_cpu: float) -> None:
        percentiles = status.get("current_response_time_percentiles", {})
        self.writer.writerow([
            f"{time.time():.3f}", status.get("user_count", 0), round(status.get("current_rps", 0.0), 1),
            round(status.get("fail_ratio", 0.0), 5), percentiles.get("response_time_percentile_0.5"),
            percentiles.get("response_time_percentile_0.95"), round(max(worker_cpu, default=0.0), 3),
            None if target_cpu is None else round(target_cpu, 3), round(host_cpu, 3)])
        self.file.flush()

    def close(self) -> None:
        self.file.close()


def run(scenario: str, users: int, spawn_rate: float, run_time_s: int, workers: int, workdir: Path,
        progress=print, target: str = "backend", tls_mode: str | None = None, test: OwnTest | None = None,
        host: str | None = None, wait_s: float = 0.0) -> Result:
    """A bounded run of a built-in `scenario`, or of the user's `test` (named `scenario` then), against the local
    stack's `target`, or against `host` when given. Locust's files (stats.json, stats*.csv, report.html), the
    process logs and the run's series.csv go to `workdir`."""
    if test is None:
        chosen = scenarios.get(scenario)
        tls_mode = tls_mode or chosen.default_tls_mode
        targets.check_tls_mode(chosen, targets.get(target), tls_mode)
        files, env = chosen.locustfile, {"LOADTEST_WAIT": f"{wait_s:g}"}
    else:
        tls_mode = tls_mode or "none"
        files, env = usertest.locustfiles(test.locustfile), own_test_env(test.locustfile, test.pythonpath)
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
            "--html", str(workdir / "report.html"), "--exit-code-on-error", "0",
            expect_workers=workers, expect_workers_wait_s=STARTUP_TIMEOUT_S)
        web = LocustWeb(locust.web_url, locust.web_credentials)
        worker_meters = [CpuMeter(w.pid) for w in locust.start_workers(workers)]
        target_meter = CpuMeter(server.proc.pid) if server else None
        psutil.cpu_percent(None)
        host_samples: list[float] = []
        progress(f"loadtest local: {scenario} against {where} on {host}, "
                 f"{workers} worker(s), {users} users, {run_time_s} s")
        deadline = time.monotonic() + STARTUP_TIMEOUT_S + run_time_s + SHUTDOWN_GRACE_S
        started = time.monotonic()
        series = Series(workdir / "series.csv")
        try:
            while master.poll() is None:
                if time.monotonic() > deadline:
                    raise LocalRunError(f"the Locust master did not finish in time:\n{stack.procs.log_tail(MASTER)}")
                time.sleep(1)
                try:
                    status = web.status()
                except LocustWebError:
                    status = None
                running = bool(status) and status.get("state") == "running"
                # Measured here rather than taken from Locust's worker reports, which lag by up to 5 s.
                target_cpu = target_meter.sample(keep=running) if target_meter else None
                worker_cpu = [m.sample(keep=running) for m in worker_meters]
                if not running:
                    continue
                host_samples.append(psutil.cpu_percent(None) / 100)
                series.add(status, worker_cpu, target_cpu, host_samples[-1])
                p95 = status.get("current_response_time_percentiles", {}).get("response_time_percentile_0.95")
                progress(
                    f"  [{time.monotonic() - started:4.0f} s] users {status['user_count']:>5}  "
                    f"RPS {status.get('current_rps', 0):>9,.0f}  failures {status.get('fail_ratio', 0):>6.2%}  "
                    f"p95 {p95 or 0:>5.0f} ms  worker CPU {' '.join(f'{c:.0%}' for c in worker_cpu)}"
                    + (f"  {target} CPU {target_cpu:.0%}" if target_cpu is not None else "")
                )
        finally:
            series.close()
        if master.returncode != 0:
            raise LocalRunError(f"the Locust master exited with {master.returncode}:\n{stack.procs.log_tail(MASTER)}")
    final = locuststats.read(workdir / "stats.json")
    if final is None:
        raise LocalRunError(f"Locust wrote no stats; see {workdir}/{MASTER}.log")
    return Result(
        **dataclasses.asdict(final), scenario=scenario, workers=workers, users=users, run_time_s=run_time_s,
        worker_cpu=[m.mean or 0.0 for m in worker_meters], target_cpu=target_meter.mean if target_meter else None,
        target_cpus=server.cpus if server else 1, target=target, tls_mode=tls_mode,
        host_cpu=sum(host_samples) / len(host_samples) if host_samples else None,
    )


def conditions(result: Result, spawn_rate: float, wait_s: float, host: str | None) -> dict[str, str]:
    """What a local run was, for its results folder: enough to run it again and to compare like with like."""
    return {
        "scenario": result.scenario, "target": host or describe(result.target, result.tls_mode),
        "where": f"this machine: {cpu_model()}, {os.cpu_count()} cores shared by generator and target",
        "workers": str(result.workers), "users": str(result.users), "spawn rate": f"{spawn_rate:g}/s",
        "run time": f"{result.run_time_s} s", "think time per user": f"{wait_s:g} s",
        "versions": f"chart {paths.chart_version()}, Locust {locust.__version__}, nginx {tools.version('nginx')}, "
                    f"HAProxy {tools.version('haproxy')}",
    }
