"""One Locust master's ceiling: a real master with the chart's plugin (metrics, the judged run, the open model)
against N simulated workers (benchmarks/swarm.py) that send what a real worker sends, recorded from one first.

    ~/.cache/loadtest/venv/bin/python benchmarks/master.py [--workers 250,500,1000,2000,5000] [--runs 3]

The master runs on CPU 0 as the chart's judged Job runs it (headless, --expect-workers N, --enable-rebalancing,
LOADTEST_CHECKS, LOADTEST_METRICS_PORT, LOADTEST_ARRIVAL_RATE), ten users per worker; the swarm runs on CPU 1. Per
run it prints:
  connect   seconds from the swarm's start until the master acknowledged every worker
  dispatch  seconds from then until every worker got its users
  cpu       the master's CPU over --steady-s seconds with every worker running, as a share of one core
  rss       the master's resident memory then
  missed    heartbeats the master missed (its "failed to send heartbeat" log lines: a worker set missing)
  dropped   statistics reports sent and not counted by the master (its request count against the swarm's)
  scrape    seconds the master's /metrics took to answer (median of three), and its series (the last scrape's)
  swarm lag how late, at worst, the simulated workers sent (above a second, the swarm, not the master, was the limit)
then min / median / max over --runs runs per worker count. No assertions: the figures go to docs/sizing.md and
the master's sizing in loadtest/capacity/sizing.py.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, fields
from pathlib import Path

import psutil
import swarm  # a sibling script
from generators import GENERATOR_CPU, TARGET_CPU, Target, min_median_max

from loadtest_shared import checks, settings

from loadtest.errors import RunFailed
from loadtest.runtime.locust import Locust
from loadtest.runtime.processes import LOCAL_HOST, Processes, free_port, stop
from loadtest.workload import scenarios


MASTER_CPU, SWARM_CPU = TARGET_CPU, GENERATOR_CPU
USERS_PER_WORKER = 10
ARRIVAL_RATE = 200  # the recorded worker's open-model rate, requests/s: small, the payload's shape is what counts
RECORD_S = 8  # two statistics reports in the steady state, the last one recorded
CONNECT_TIMEOUT_S = 600
MISSED = re.compile(r"failed to send heartbeat, setting state to missing")
DEFAULT_WORKERS = "250,500,1000,2000,5000"


@dataclass
class Figures:
    workers: int
    connect_s: float
    dispatch_s: float
    cpu: float
    rss_mib: float
    missed: int
    dropped: int
    scrape_s: float
    series: int
    swarm_lag_s: float


def master_env(metrics_port: int) -> dict[str, str]:
    return {settings.METRICS_PORT.env: str(metrics_port), settings.CHECKS.env: "fail_ratio<1%",
            settings.ARRIVAL_RATE.env: str(ARRIVAL_RATE)}


def record(workdir: Path, seconds: int = RECORD_S) -> Path:
    """A real master and worker against the local nginx for `seconds`; the worker's messages to the master."""
    workdir.mkdir(parents=True, exist_ok=True)
    recorder = workdir / "recorder.py"
    recorder.write_text(swarm.RECORDER)
    recording = workdir / "messages.bin"
    target = Target(workdir / "nginx")
    try:
        with Processes(workdir / "record") as procs:
            locust = Locust(procs, [scenarios.get("keepalive_1kb").locustfile, recorder],
                            env={**master_env(free_port()), "LOADTEST_RECORDING": str(recording)})
            master = locust.start_master("-u", str(USERS_PER_WORKER), "-r", str(USERS_PER_WORKER), "-t",
                                         f"{seconds}s", "--host", target.url, web=False, expect_workers=1)
            locust.start_workers(1)
            try:
                master.wait(timeout=seconds + 60)
            except subprocess.TimeoutExpired:
                raise RunFailed(f"the recording master did not end:\n{procs.log_tail('locust-master')}") from None
            swarm.Recording(str(recording))  # it holds what the swarm sends, or says what it lacks
    except ValueError as e:
        raise RunFailed(f"{e}; see {workdir}/record") from None
    finally:
        stop(target.proc)
    return recording


class Master:
    """The master under test and its metrics endpoint."""

    def __init__(self, procs: Processes, workers: int):
        metrics_port = free_port()
        self.metrics_url = f"http://{LOCAL_HOST}:{metrics_port}/metrics"
        self.locust = Locust(procs, scenarios.get("keepalive_1kb").locustfile, env=master_env(metrics_port))
        self.locust.cmd = ["taskset", "-c", str(MASTER_CPU), *self.locust.cmd]
        users = workers * USERS_PER_WORKER
        self.proc = self.locust.start_master("-u", str(users), "-r", str(users), "--host", "http://127.0.0.1:9",
                                             "--enable-rebalancing", web=False, expect_workers=workers,
                                             expect_workers_wait_s=CONNECT_TIMEOUT_S)
        self.process = psutil.Process(self.proc.pid)
        procs.wait_http("locust-master", self.metrics_url)
        self.log = procs.logs / "locust-master.log"

    def scrape(self) -> tuple[float, str]:
        started = time.perf_counter()
        with urllib.request.urlopen(self.metrics_url, timeout=120) as response:
            text = response.read().decode()
        return time.perf_counter() - started, text

    def requests(self) -> int:
        _, text = self.scrape()
        return round(sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                         if line.startswith("locust_requests_total{")))

    def missed(self) -> int:
        return len(MISSED.findall(self.log.read_text(errors="replace")))


class Swarm:
    """The simulated workers' process: its events, read as they come."""

    def __init__(self, procs: Processes, master_port: int, workers: int, recording: Path):
        self.started = time.time()
        with open(procs.logs / "swarm.log", "wb") as log:
            self.proc = subprocess.Popen(
                ["taskset", "-c", str(SWARM_CPU), sys.executable, str(Path(__file__).with_name("swarm.py")),
                 "--master", f"{LOCAL_HOST}:{master_port}", "--workers", str(workers), "--recording", str(recording)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log)
        self.pending = b""

    def expect(self, event: str, timeout_s: float) -> dict:
        """The next event of that name (the ones before it are passed over), within `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while True:
            while b"\n" in self.pending:
                line, self.pending = self.pending.split(b"\n", 1)
                found = json.loads(line)
                if found["event"] == event:
                    return found
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RunFailed(f"the swarm did not say '{event}' within {timeout_s:.0f} s")
            if select.select([self.proc.stdout], [], [], remaining)[0]:
                data = os.read(self.proc.stdout.fileno(), 65536)
                if not data:
                    raise RunFailed(f"the swarm exited with {self.proc.wait()} before '{event}'")
                self.pending += data

    def tell(self, command: str) -> None:
        self.proc.stdin.write(command.encode() + b"\n")
        self.proc.stdin.flush()


def measure(workdir: Path, workers: int, recording: Path, steady_s: float) -> Figures:
    requests_per_report = swarm.Recording(str(recording)).requests_per_report
    with Processes(workdir) as procs:
        master = Master(procs, workers)
        simulated = Swarm(procs, master.locust.master_port, workers, recording)
        try:
            connected = simulated.expect("connected", CONNECT_TIMEOUT_S)
            spawned = simulated.expect("spawned", CONNECT_TIMEOUT_S)
            cpu_before, wall_before = master.process.cpu_times(), time.monotonic()
            scrapes = []
            for _ in range(3):
                time.sleep(steady_s / 3)
                scrapes.append(master.scrape())
            cpu_after, wall_after = master.process.cpu_times(), time.monotonic()
            rss = master.process.memory_info().rss
            simulated.tell("stop-reports")
            reports = simulated.expect("reports", 30)
            sent = reports["sent"]
            received = master.requests() // requests_per_report
            deadline = time.monotonic() + 2 * swarm.REPORT_S + 10  # the last reports on their way
            while received < sent and time.monotonic() < deadline:
                time.sleep(0.5)
                received = master.requests() // requests_per_report
            missed = master.missed()
            simulated.tell("quit")
            simulated.expect("counts", 60)
        finally:
            if simulated.proc.poll() is None:
                stop(simulated.proc)
    busy = (cpu_after.user + cpu_after.system) - (cpu_before.user + cpu_before.system)
    scrape_s = sorted(seconds for seconds, _ in scrapes)[1]
    text = scrapes[-1][1]  # the last: by then every worker has sent its first report, and has its series
    return Figures(workers=workers, connect_s=connected["t"] - simulated.started,
                   dispatch_s=spawned["t"] - connected["t"], cpu=busy / (wall_after - wall_before),
                   rss_mib=rss / 2**20, missed=missed, dropped=sent - received, scrape_s=scrape_s,
                   series=sum(1 for line in text.splitlines() if line and not line.startswith("#")),
                   swarm_lag_s=reports["max_lag_s"])


ROW = ("{workers:>7} {connect_s:>8} {dispatch_s:>9} {cpu:>6} {rss_mib:>7} {missed:>7} {dropped:>8} {scrape_s:>7} "
       "{series:>7} {swarm_lag_s:>10}")


def row(f: Figures) -> str:
    return ROW.format(workers=f"{f.workers:,}", connect_s=f"{f.connect_s:.1f}", dispatch_s=f"{f.dispatch_s:.1f}",
                      cpu=f"{f.cpu:.0%}", rss_mib=f"{f.rss_mib:.0f}", missed=f.missed, dropped=f.dropped,
                      scrape_s=f"{f.scrape_s:.2f}", series=f"{f.series:,}",
                      swarm_lag_s=f"{f.swarm_lag_s:.2f}")


def spread(runs: list[Figures]) -> list[str]:
    """min / median / max of each figure over the runs, one line each."""
    columns = {f.name: min_median_max(getattr(r, f.name) for r in runs) for f in fields(Figures)}
    return [f"{label:>6} " + row(Figures(**{name: column[i] for name, column in columns.items()}))[7:]
            for i, label in enumerate(("min", "median", "max"))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", default=DEFAULT_WORKERS, help=f"worker counts (default {DEFAULT_WORKERS})")
    parser.add_argument("--runs", type=int, default=3, help="runs per worker count (default 3)")
    parser.add_argument("--steady-s", type=float, default=15, help="seconds measured with every worker running")
    args = parser.parse_args(argv)
    try:
        counts = [int(n) for n in args.workers.split(",") if n.strip()]
    except ValueError:
        parser.error(f"--workers {args.workers!r}: whole numbers separated by commas, e.g. 250,500")
    if not counts or min(counts) < 1 or not 1 <= args.runs <= 10 or not 3 <= args.steady_s <= 300:
        parser.error("--workers must be positive, --runs 1..10 and --steady-s 3..300")
    if psutil.cpu_count() < 2:
        parser.error("needs two CPUs: the master on one, the simulated workers on the other")
    workdir = Path(tempfile.mkdtemp(prefix="loadtest-master-bench-"))
    try:
        recording = record(workdir)
        print(f"recorded a real worker: {swarm.Recording(str(recording)).requests_per_report} requests per report; "
              f"{USERS_PER_WORKER} users per worker, open model at {ARRIVAL_RATE}/s", flush=True)
        print(ROW.format(workers="workers", connect_s="connect", dispatch_s="dispatch", cpu="cpu", rss_mib="rss MiB",
                         missed="missed", dropped="dropped", scrape_s="scrape", series="series",
                         swarm_lag_s="swarm lag"), flush=True)
        for workers in counts:
            runs = []
            for run in range(args.runs):
                runs.append(measure(workdir / f"{workers}-{run}", workers, recording, args.steady_s))
                print(row(runs[-1]), flush=True)
            if len(runs) > 1:
                print("\n".join(spread(runs)), flush=True)
    except RunFailed as e:
        print(f"master benchmark: {e} (kept: {workdir})", file=sys.stderr)
        return checks.RUN_FAILED
    shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
