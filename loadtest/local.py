"""`loadtest local`: the whole load test on one machine, no cluster.

It renders the chart's configs (the backend's nginx.conf, and the target's: HAProxy's haproxy.cfg or the nginx.conf
the NGINX Ingress Controller generates for the chart's Ingress), runs them with the machine's nginx and haproxy on
127.0.0.1 (loadtest.targets), starts a Locust master and one worker per core with the project's locustfiles, runs
a bounded test, and prints RPS, failures, latency and which side was the bottleneck.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from . import locuststats, paths, targets, verdict
from .locustweb import LocustWeb, LocustWebError
from .targets import STARTUP_TIMEOUT_S, TLS_MODES, TargetError, free_port

LOCUST_SCHEMA = paths.CHART / "charts" / "locust" / "values.schema.json"
# Locust needs a moment after the run time to collect the workers' last reports and write its CSV files.
SHUTDOWN_GRACE_S = 30


class LocalRunError(RuntimeError):
    pass


def scenarios() -> list[str]:
    """The scenarios the chart accepts (locust.scenario's enum): the same list here."""
    return json.loads(LOCUST_SCHEMA.read_text())["properties"]["scenario"]["enum"]


@dataclass
class Result:
    scenario: str
    workers: int
    users: int
    run_time_s: int
    requests: int
    failures: int
    rps: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
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
        return verdict.judge(self.worker_cpu, self.target_cpu, self.target_cpus, self.host_cpu)


def process_tree(pid: int) -> list[psutil.Process]:
    """A process and its children (nginx's and HAProxy's workers, Locust's worker greenlets run in-process)."""
    root = psutil.Process(pid)
    return [root, *root.children(recursive=True)]


def cpu_seconds(procs: list[psutil.Process]) -> float:
    """User + system CPU time the processes used so far; ones that have exited count nothing."""
    total = 0.0
    for proc in procs:
        try:
            times = proc.cpu_times()
            total += times.user + times.system
        except psutil.NoSuchProcess:
            pass
    return total


class CpuMeter:
    """CPU of a process and its children, in cores, averaged over the samples taken while the swarm ran."""

    def __init__(self, pid: int):
        self.procs = process_tree(pid)
        for p in self.procs:
            p.cpu_percent(None)
        self.samples: list[float] = []

    def sample(self, keep: bool) -> float:
        total = 0.0
        for p in self.procs:
            try:
                total += p.cpu_percent(None) / 100
            except psutil.NoSuchProcess:
                pass
        if keep:
            self.samples.append(total)
        return total

    @property
    def mean(self) -> float | None:
        return sum(self.samples) / len(self.samples) if self.samples else None


def scenario_file(scenario: str) -> Path:
    if scenario not in scenarios():
        raise LocalRunError(f"unknown scenario {scenario!r}; scenarios: {', '.join(scenarios())}")
    return paths.LOCUSTFILES / f"{scenario}.py"


def default_tls_mode(scenario: str) -> str:
    """TLS terminated at the target for the handshake scenario, plain HTTP for the others."""
    return "edge" if scenario == "tls_handshake" else "none"


def check_tls_mode(scenario: str, target: str, tls_mode: str) -> None:
    if tls_mode not in TLS_MODES.get(target, ()):
        raise LocalRunError(f"target {target} takes --tls-mode {' / '.join(TLS_MODES.get(target, ()))}, "
                            f"not {tls_mode!r}")
    if scenario == "tls_handshake" and tls_mode == "none":
        raise LocalRunError("tls_handshake needs TLS: --tls-mode edge (or passthrough / reencrypt with haproxy)")
    if scenario == "http_close" and tls_mode != "none":
        raise LocalRunError("http_close is plain HTTP: --tls-mode none")


def run(scenario: str, users: int, spawn_rate: float, run_time_s: int, workers: int, workdir: Path,
        progress=print, target: str = "backend", tls_mode: str | None = None) -> Result:
    locustfile = scenario_file(scenario)
    tls_mode = tls_mode or default_tls_mode(scenario)
    check_tls_mode(scenario, target, tls_mode)
    workdir.mkdir(parents=True, exist_ok=True)
    master_port, web_port = free_port(), free_port()
    locust = [sys.executable, "-m", "locust", "-f", str(locustfile)]
    web = LocustWeb(f"http://127.0.0.1:{web_port}")
    with targets.Stack(workdir) as stack:
        procs = stack.procs
        try:
            _, server = stack.target(target, tls_mode)
        except TargetError as e:
            raise LocalRunError(str(e)) from None
        host = server.url(tls=tls_mode != "none")
        # --autostart rather than --headless: the run is the same, and the web UI's JSON gives live figures.
        master = procs.start("locust-master", locust + [
            "--master", "--master-bind-host", "127.0.0.1", "--master-bind-port", str(master_port),
            "--web-host", "127.0.0.1", "--web-port", str(web_port), "--autostart", "--autoquit", "0",
            "--expect-workers", str(workers), "--expect-workers-max-wait", str(STARTUP_TIMEOUT_S),
            "-u", str(users), "-r", str(spawn_rate), "-t", f"{run_time_s}s", "--host", host,
            "--csv", str(workdir / "stats"), "--json-file", str(workdir / "stats"), "--exit-code-on-error", "0",
        ])
        worker_meters = [
            CpuMeter(procs.start(f"locust-worker-{i}", locust + [
                "--worker", "--master-host", "127.0.0.1", "--master-port", str(master_port)]).pid)
            for i in range(workers)
        ]
        target_meter = CpuMeter(server.proc.pid)
        psutil.cpu_percent(None)
        host_samples: list[float] = []
        progress(f"loadtest local: {scenario} against {describe(target, tls_mode)} on {host}, "
                 f"{workers} worker(s), {users} users, {run_time_s} s")
        deadline = time.monotonic() + STARTUP_TIMEOUT_S + run_time_s + SHUTDOWN_GRACE_S
        started = time.monotonic()
        while master.poll() is None:
            if time.monotonic() > deadline:
                raise LocalRunError(f"the Locust master did not finish in time:\n{procs.log_tail('locust-master')}")
            time.sleep(1)
            try:
                status = web.status()
            except LocustWebError:
                status = None
            running = bool(status) and status.get("state") == "running"
            # Measured here rather than taken from Locust's worker reports, which lag by up to 5 s.
            target_cpu = target_meter.sample(keep=running)
            cpus = " ".join(f"{m.sample(keep=running):.0%}" for m in worker_meters)
            if not running:
                continue
            host_samples.append(psutil.cpu_percent(None) / 100)
            p95 = status.get("current_response_time_percentiles", {}).get("response_time_percentile_0.95")
            progress(
                f"  [{time.monotonic() - started:4.0f} s] users {status['user_count']:>5}  "
                f"RPS {status.get('current_rps', 0):>9,.0f}  failures {status.get('fail_ratio', 0):>6.2%}  "
                f"p95 {p95 or 0:>5.0f} ms  worker CPU {cpus}  {target} CPU {target_cpu:.0%}"
            )
        if master.returncode != 0:
            raise LocalRunError(f"the Locust master exited with {master.returncode}:\n{procs.log_tail('locust-master')}")
    final = locuststats.read(workdir / "stats.json")
    if final is None:
        raise LocalRunError(f"Locust wrote no stats; see {workdir}/locust-master.log")
    return Result(
        scenario=scenario, workers=workers, users=users, run_time_s=run_time_s,
        requests=final.requests, failures=final.failures, rps=final.rps,
        p50_ms=final.p50_ms, p95_ms=final.p95_ms, p99_ms=final.p99_ms,
        worker_cpu=[m.mean or 0.0 for m in worker_meters], target_cpu=target_meter.mean,
        target_cpus=server.cpus, target=target, tls_mode=tls_mode,
        host_cpu=sum(host_samples) / len(host_samples) if host_samples else None,
    )


def describe(target: str, tls_mode: str) -> str:
    what = {"backend": "the chart's nginx payload", "nginx": "the NGINX Ingress Controller's nginx.conf",
            "haproxy": "the chart's HAProxy"}[target]
    return what if tls_mode == "none" else f"{what} (TLS {tls_mode})"


def print_result(r: Result, out=print) -> None:
    v = r.verdict
    out("")
    out(f"Result ({r.scenario} against {r.target}{'' if r.tls_mode == 'none' else ' TLS ' + r.tls_mode}, "
        f"{r.workers} worker(s), {r.users} users, {r.run_time_s} s)")
    out(f"  requests         {r.requests:,} ({r.failures:,} failed, {r.failure_ratio:.2%})")
    out(f"  RPS              {r.rps:,.0f}")
    out(f"  p50 / p95 / p99  {r.p50_ms:g} / {r.p95_ms:g} / {r.p99_ms:g} ms")
    out(f"  worker CPU       {', '.join(f'{c:.0%}' for c in r.worker_cpu)} (of one core each)")
    if r.target_cpu is not None:
        out(f"  target CPU       {r.target_cpu:.2f} of {r.target_cpus} core(s) ({r.target})")
    if r.host_cpu is not None:
        out(f"  machine CPU      {r.host_cpu:.0%} of {psutil.cpu_count()} core(s) busy")
    out(f"  verdict          {v.kind}: {v.reason}")


def parse_duration_s(text: str) -> int:
    units = {"s": 1, "m": 60, "h": 3600}
    t = text.strip()
    try:
        return int(t[:-1]) * units[t[-1]] if t[-1] in units else int(t)
    except (ValueError, IndexError):
        raise ValueError(f"run time {text!r} is not like 20, 20s, 2m") from None


def cmd_local(args) -> int:
    from .cli import UsageError

    try:
        run_time_s = parse_duration_s(args.run_time)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if args.workers < 1:
        raise UsageError("--workers must be at least 1")
    if args.users < 0 or args.spawn_rate < 0:
        raise UsageError("--users and --spawn-rate cannot be negative")
    if not 1 <= run_time_s <= 3600:
        raise UsageError("--run-time must be between 1 s and 1 h")
    users = args.users or 50 * args.workers
    workdir = Path(args.output) if args.output else Path(tempfile.mkdtemp(prefix="loadtest-local-"))
    try:
        result = run(args.scenario, users, args.spawn_rate or users, run_time_s, args.workers, workdir,
                     target=args.target, tls_mode=args.tls_mode)
    except LocalRunError as e:
        print(f"loadtest local: {e}", file=sys.stderr)
        return 1
    finally:
        if not args.output:
            shutil.rmtree(workdir, ignore_errors=True)
    print_result(result)
    if args.output:
        print(f"  files            {workdir} (Locust CSV, process logs)")
    if result.requests == 0 or result.failure_ratio > args.max_failure_ratio:
        print(f"loadtest local: failure ratio {result.failure_ratio:.2%} above {args.max_failure_ratio:.2%}",
              file=sys.stderr)
        return 1
    return 0


def register(sub) -> None:
    p = sub.add_parser("local", help="run a bounded load test on this machine (target + payload + Locust), no cluster",
                       description=__doc__)
    p.add_argument("--scenario", default="keepalive_1kb", help=f"one of {', '.join(scenarios())} (default keepalive_1kb)")
    p.add_argument("--target", default="backend", choices=targets.TARGETS,
                   help="what Locust loads: the payload backend itself (default), nginx (the NGINX Ingress "
                        "Controller's config) or haproxy, both in front of the backend")
    p.add_argument("--tls-mode", choices=("none", "edge", "passthrough", "reencrypt"),
                   help="none: HTTP; edge: TLS terminated at the target; passthrough, reencrypt: haproxy only "
                        "(default: edge for tls_handshake, none otherwise)")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="Locust workers (default: one per core)")
    p.add_argument("--users", type=int, default=0, help="concurrent users (default 50 per worker)")
    p.add_argument("--spawn-rate", type=float, default=0, help="users started per second (default: all at once)")
    p.add_argument("--run-time", default="20s", help="how long to run, e.g. 20s, 2m (default 20s)")
    p.add_argument("--max-failure-ratio", type=float, default=0.01,
                   help="exit 1 when more than this share of requests failed (default 0.01)")
    p.add_argument("--output", help="keep Locust's CSV files and the process logs in this folder")
    p.set_defaults(func=cmd_local)
