"""`loadtest local`: the whole load test on one machine, no cluster.

It renders the chart's backend payload config (the same nginx.conf the chart deploys), runs it with the machine's
nginx on 127.0.0.1, starts a Locust master and one worker per core with the project's locustfiles, runs a bounded
test, and prints RPS, failures, latency and which side was the bottleneck.
"""
from __future__ import annotations

import csv
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import yaml

from . import paths, verdict

BACKEND_CONFIGMAP = "charts/backend/templates/configmap.yaml"
STARTUP_TIMEOUT_S = 15
# Locust needs a moment after the run time to collect the workers' last reports and write its CSV files.
SHUTDOWN_GRACE_S = 30


class LocalRunError(RuntimeError):
    pass


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
    target_cpu: float | None = None  # mean cores used by nginx
    target_cpus: int = 1
    host_cpu: float | None = None  # mean share of all the machine's cores in use, whoever used them

    @property
    def failure_ratio(self) -> float:
        return self.failures / self.requests if self.requests else 1.0

    @property
    def verdict(self) -> verdict.Verdict:
        return verdict.judge(self.worker_cpu, self.target_cpu, self.target_cpus, self.host_cpu)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def render_backend(port: int) -> dict[str, str]:
    """nginx.conf and payload files exactly as the chart ships them, listening on 127.0.0.1:<port>."""
    helm = paths.tool("helm")
    if not shutil.which(helm):
        raise LocalRunError("helm not found: run scripts/setup (it installs helm into ~/.cache/loadtest/bin)")
    cmd = [
        helm, "template", "local", str(paths.CHART), "--show-only", BACKEND_CONFIGMAP,
        "--set", "backend.bindAddress=127.0.0.1:", "--set", f"backend.port={port}",
    ]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise LocalRunError(f"rendering the backend config failed:\n{out.stderr}")
    return yaml.safe_load(out.stdout)["data"]


class Processes:
    """Processes this run started; all of them are stopped by PID on exit."""

    def __init__(self, logs: Path):
        self.logs = logs
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self, name: str, cmd: list[str], env: dict | None = None) -> subprocess.Popen:
        log = open(self.logs / f"{name}.log", "wb")
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env={**os.environ, **(env or {})})
        log.close()
        self.procs[name] = proc
        return proc

    def log_tail(self, name: str, lines: int = 20) -> str:
        text = (self.logs / f"{name}.log").read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def stop_all(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()
        deadline = time.monotonic() + 10
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop_all()


def wait_http(url: str, proc: subprocess.Popen, procs: Processes, name: str) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise LocalRunError(f"{name} exited with {proc.returncode}:\n{procs.log_tail(name)}")
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise LocalRunError(f"{name} did not answer {url} within {STARTUP_TIMEOUT_S} s:\n{procs.log_tail(name)}")


class CpuMeter:
    """CPU of a process and its children, in cores, averaged over the samples taken while the swarm ran."""

    def __init__(self, pid: int):
        root = psutil.Process(pid)
        self.procs = [root, *root.children(recursive=True)]
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


def swarm_status(web: str) -> dict | None:
    """Locust's own live view (the web UI's JSON): state, users, current RPS, failures, workers' CPU."""
    try:
        with urllib.request.urlopen(f"{web}/stats/requests", timeout=2) as r:
            return json.load(r)
    except (OSError, ValueError):
        return None


def read_aggregated(csv_path: Path) -> dict[str, str] | None:
    if not csv_path.exists():
        return None
    with csv_path.open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r.get("Name") == "Aggregated"]
    return rows[-1] if rows else None


def scenario_file(scenario: str) -> Path:
    path = paths.LOCUSTFILES / f"{scenario}.py"
    known = sorted(p.stem for p in paths.LOCUSTFILES.glob("*.py") if p.stem != "loadtest_lib")
    if scenario == "loadtest_lib" or not path.exists():
        raise LocalRunError(f"unknown scenario {scenario!r}; scenarios: {', '.join(known)}")
    return path


def write_payload_server(runtime: Path, port: int) -> Path:
    """The chart's nginx.conf and payload files under `runtime`; returns the conf path."""
    files = render_backend(port)
    (runtime / "html").mkdir(parents=True, exist_ok=True)
    conf = runtime / "nginx.conf"
    conf.write_text(files.pop("nginx.conf"))
    for name, body in files.items():
        (runtime / "html" / name).write_text(body)
    # nginx started as root drops its workers to an unprivileged user, which must reach the payload: hence a
    # world-readable folder of its own under the system temp dir, whatever the permissions of the output folder.
    for d in (runtime, runtime / "html"):
        d.chmod(0o755)
    return conf


def run(scenario: str, users: int, spawn_rate: float, run_time_s: int, workers: int, workdir: Path,
        progress=print) -> Result:
    locustfile = scenario_file(scenario)
    workdir.mkdir(parents=True, exist_ok=True)
    port, master_port, web_port = free_port(), free_port(), free_port()
    host = f"http://127.0.0.1:{port}"
    locust = [sys.executable, "-m", "locust", "-f", str(locustfile)]
    web = f"http://127.0.0.1:{web_port}"
    with tempfile.TemporaryDirectory(prefix="loadtest-nginx-") as nginx_dir, Processes(workdir) as procs:
        runtime = Path(nginx_dir)
        conf = write_payload_server(runtime, port)
        nginx = procs.start("nginx", [paths.tool("nginx"), "-p", f"{runtime}/", "-e", "stderr", "-c", str(conf),
                                      "-g", "daemon off;"])
        wait_http(f"{host}/healthz", nginx, procs, "nginx")
        # --autostart rather than --headless: the run is the same, and the web UI's JSON gives live figures.
        master = procs.start("locust-master", locust + [
            "--master", "--master-bind-host", "127.0.0.1", "--master-bind-port", str(master_port),
            "--web-host", "127.0.0.1", "--web-port", str(web_port), "--autostart", "--autoquit", "0",
            "--expect-workers", str(workers), "--expect-workers-max-wait", str(STARTUP_TIMEOUT_S),
            "-u", str(users), "-r", str(spawn_rate), "-t", f"{run_time_s}s", "--host", host,
            "--csv", str(workdir / "stats"), "--exit-code-on-error", "0",
        ])
        worker_meters = [
            CpuMeter(procs.start(f"locust-worker-{i}", locust + [
                "--worker", "--master-host", "127.0.0.1", "--master-port", str(master_port)]).pid)
            for i in range(workers)
        ]
        target = CpuMeter(nginx.pid)
        psutil.cpu_percent(None)
        host_samples: list[float] = []
        progress(f"loadtest local: {scenario} against the chart's nginx payload on {host}, "
                 f"{workers} worker(s), {users} users, {run_time_s} s")
        deadline = time.monotonic() + STARTUP_TIMEOUT_S + run_time_s + SHUTDOWN_GRACE_S
        started = time.monotonic()
        while master.poll() is None:
            if time.monotonic() > deadline:
                raise LocalRunError(f"the Locust master did not finish in time:\n{procs.log_tail('locust-master')}")
            time.sleep(1)
            status = swarm_status(web)
            running = bool(status) and status.get("state") == "running"
            # Measured here rather than taken from Locust's worker reports, which lag by up to 5 s.
            nginx_cpu = target.sample(keep=running)
            cpus = " ".join(f"{m.sample(keep=running):.0%}" for m in worker_meters)
            if not running:
                continue
            host_samples.append(psutil.cpu_percent(None) / 100)
            p95 = status.get("current_response_time_percentiles", {}).get("response_time_percentile_0.95")
            progress(
                f"  [{time.monotonic() - started:4.0f} s] users {status['user_count']:>5}  "
                f"RPS {status.get('current_rps', 0):>9,.0f}  failures {status.get('fail_ratio', 0):>6.2%}  "
                f"p95 {p95 or 0:>5.0f} ms  worker CPU {cpus}  nginx CPU {nginx_cpu:.0%}"
            )
        if master.returncode != 0:
            raise LocalRunError(f"the Locust master exited with {master.returncode}:\n{procs.log_tail('locust-master')}")
    final = read_aggregated(workdir / "stats_stats.csv")
    if final is None:
        raise LocalRunError(f"Locust wrote no stats; see {workdir}/locust-master.log")
    return Result(
        scenario=scenario, workers=workers, users=users, run_time_s=run_time_s,
        requests=int(final["Request Count"]), failures=int(final["Failure Count"]),
        rps=float(final["Requests/s"]), p50_ms=float(final["50%"]), p95_ms=float(final["95%"]),
        p99_ms=float(final["99%"]),
        worker_cpu=[m.mean or 0.0 for m in worker_meters], target_cpu=target.mean,
        host_cpu=sum(host_samples) / len(host_samples) if host_samples else None,
    )


def print_result(r: Result, out=print) -> None:
    v = r.verdict
    out("")
    out(f"Result ({r.scenario}, {r.workers} worker(s), {r.users} users, {r.run_time_s} s)")
    out(f"  requests         {r.requests:,} ({r.failures:,} failed, {r.failure_ratio:.2%})")
    out(f"  RPS              {r.rps:,.0f}")
    out(f"  p50 / p95 / p99  {r.p50_ms:g} / {r.p95_ms:g} / {r.p99_ms:g} ms")
    out(f"  worker CPU       {', '.join(f'{c:.0%}' for c in r.worker_cpu)} (of one core each)")
    if r.target_cpu is not None:
        out(f"  target CPU       {r.target_cpu:.2f} of {r.target_cpus} core(s) (nginx)")
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
        result = run(args.scenario, users, args.spawn_rate or users, run_time_s, args.workers, workdir)
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
    p = sub.add_parser("local", help="run a bounded load test on this machine (nginx payload + Locust), no cluster",
                       description=__doc__)
    p.add_argument("--scenario", default="keepalive_1kb", help="locustfile in locustfiles/ (default keepalive_1kb)")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="Locust workers (default: one per core)")
    p.add_argument("--users", type=int, default=0, help="concurrent users (default 50 per worker)")
    p.add_argument("--spawn-rate", type=float, default=0, help="users started per second (default: all at once)")
    p.add_argument("--run-time", default="20s", help="how long to run, e.g. 20s, 2m (default 20s)")
    p.add_argument("--max-failure-ratio", type=float, default=0.01,
                   help="exit 1 when more than this share of requests failed (default 0.01)")
    p.add_argument("--output", help="keep Locust's CSV files and the process logs in this folder")
    p.set_defaults(func=cmd_local)
