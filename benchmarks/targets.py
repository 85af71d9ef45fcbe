"""Requests per core on this machine, for each scenario and each target.

    ~/.cache/loadtest/venv/bin/python benchmarks/targets.py [--duration 8] [--connections 50]

1. Generators. Each scenario loads the chart's payload backend (loadtest.runtime.stack), once with Locust (one standalone
   process: one core at most) and once with wrk (one thread), with the same number of connections and the same
   connection behaviour: keep-alive for keepalive_1kb, a new connection per request (`Connection: close`) for
   http_close, a new TLS connection per request for tls_handshake. The backend counts the requests (stub_status) over
   --duration seconds after a warm-up; a generator's cores are its CPU time over that window. RPS per core holds
   whichever side was the limit. The ratio is how many Locust cores one wrk core is worth. wrk has no TLS figure:
   it resumes TLS sessions on its new connections (HAProxy reports 100 % reuse), so its handshakes are abbreviated
   ones, not the full handshakes tls_handshake measures.
2. Targets. The NGINX Ingress Controller's config and HAProxy, with 1 and then 2 worker processes / threads, in front
   of the backend, loaded by wrk over keep-alive (/1kb): the requests they forwarded per CPU second they used.

Generators, targets and the backend share the machine's cores, so the figures are a cost per request, not a
capacity. The "other" column is the CPU used by processes this script did not start (other work on the machine):
above a few tenths of a core it disturbed the figures. Prints figures only; nothing here asserts a time.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psutil

from loadtest.runtime import tools
from loadtest.runtime.cpu import cpu_seconds, process_tree
from loadtest.runtime.locust import command as locust_command
from loadtest.runtime.processes import Processes, stop
from loadtest.runtime.stack import Stack
from loadtest.workload import scenarios

WARMUP_S = 3.0
STARTUP_TIMEOUT_S = 30
SCENARIOS = {  # scenario: (path, TLS, wrk's arguments for the same load, or None when wrk cannot make it)
    "keepalive_1kb": ("/1kb", False, []),
    "http_close": ("/1kb", False, ["-H", "Connection: close"]),
    "tls_handshake": ("/0kb", True, None),
}


def busy_seconds() -> float:
    """CPU seconds the whole machine has spent not idle."""
    times = psutil.cpu_times()
    return sum(times) - times.idle - getattr(times, "iowait", 0.0)


@dataclass
class Window:
    requests: float
    seconds: float
    measured_cpu: float  # CPU seconds of the processes under measurement
    other_cpu: float  # cores used by processes this script did not start

    @property
    def rps(self) -> float:
        return self.requests / self.seconds

    @property
    def per_core(self) -> float:
        return self.requests / self.measured_cpu if self.measured_cpu else 0.0


def measure(count_requests, measured: list[psutil.Process], ours: list[psutil.Process], duration: float) -> Window:
    """Requests counted and CPU used over `duration` seconds, after a warm-up."""
    time.sleep(WARMUP_S)
    requests, cpu, all_ours, busy, start = (count_requests(), cpu_seconds(measured), cpu_seconds(ours),
                                            busy_seconds(), time.monotonic())
    time.sleep(duration)
    seconds = time.monotonic() - start
    other = (busy_seconds() - busy) - (cpu_seconds(ours) - all_ours)
    return Window(count_requests() - requests, seconds, cpu_seconds(measured) - cpu, max(0.0, other) / seconds)


def stub_status_requests(url: str) -> int:
    with urllib.request.urlopen(url, timeout=5) as response:
        return int(response.read().decode().splitlines()[2].split()[2])


def haproxy_forwarded(url: str) -> float:
    with urllib.request.urlopen(url, timeout=5) as response:
        for line in response.read().decode().splitlines():
            if line.startswith('haproxy_frontend_http_requests_total{proxy="http"}'):
                return float(line.split()[-1])
    raise RuntimeError("HAProxy exposes no request counter for its http frontend")


@contextmanager
def generator(procs: Processes, name: str, cmd: list[str]):
    """A generator process, started now and stopped when the block ends (its own time limit is a safety net)."""
    proc = procs.start(name, cmd)
    try:
        yield proc
    finally:
        stop(proc, STARTUP_TIMEOUT_S)


def wait_serving(count_requests) -> None:
    first, deadline = count_requests(), time.monotonic() + STARTUP_TIMEOUT_S
    while count_requests() < first + 100:
        if time.monotonic() > deadline:
            raise RuntimeError("the generator sent nothing")
        time.sleep(0.2)


def bench_generators(logs: Path, duration: float, connections: int) -> None:
    print(f"Generators: requests per generator core against the payload backend, {connections} connections, "
          f"{duration:g} s after {WARMUP_S:g} s of warm-up")
    print(f"{'scenario':<16}{'generator':<10}{'RPS':>9}{'cores':>7}{'RPS/core':>10}{'other':>7}")
    run_s = WARMUP_S + duration + 5
    with Stack(logs) as stack:
        backend = stack.backend(tls=True)
        count = lambda: stub_status_requests(backend.status_url)  # noqa: E731
        ours = process_tree(backend.proc.pid)
        for scenario, (path, tls, wrk_args) in SCENARIOS.items():
            url = backend.url(tls)
            generators = {"locust": [
                *locust_command(scenarios.get(scenario).locustfile), "--headless", "--only-summary", "-u", str(connections), "-r", str(connections), "-t", f"{run_s:.0f}s",
                "--host", url, "--exit-code-on-error", "0"]}
            if wrk_args is not None:
                generators["wrk"] = [tools.find("wrk"), "-t1", f"-c{connections}", f"-d{run_s:.0f}s", *wrk_args,
                                     url + path]
            per_core = {}
            for name, cmd in generators.items():
                with generator(stack.procs, f"{scenario}-{name}", cmd) as proc:
                    wait_serving(count)
                    gen = process_tree(proc.pid)
                    window = measure(count, gen, ours + gen, duration)
                per_core[name] = window.per_core
                print(f"{scenario:<16}{name:<10}{window.rps:>9,.0f}{window.measured_cpu / window.seconds:>7.2f}"
                      f"{window.per_core:>10,.0f}{window.other_cpu:>7.2f}", flush=True)
            if "wrk" in per_core and per_core["locust"]:
                print(f"{'':<16}one wrk core does the work of {per_core['wrk'] / per_core['locust']:.1f} Locust cores",
                      flush=True)


def bench_targets(logs: Path, duration: float, connections: int) -> None:
    print(f"\nTargets: requests forwarded per target CPU second, wrk keep-alive /1kb, {connections} connections")
    print(f"{'target':<10}{'CPUs':>5}{'RPS':>9}{'target cores':>14}{'RPS/core':>10}{'other':>7}")
    run_s = WARMUP_S + duration + 5
    for name in ("nginx", "haproxy"):
        for cpus in (1, 2):
            with Stack(logs / f"{name}-{cpus}") as stack:
                backend = stack.backend()
                server = stack.nginx(backend, cpus=cpus) if name == "nginx" else stack.haproxy(backend, cpus=cpus)
                if name == "nginx":
                    count = lambda: stub_status_requests(server.status_url)  # noqa: E731
                else:
                    count = lambda: haproxy_forwarded(server.status_url)  # noqa: E731
                wrk = [tools.find("wrk"), "-t2", f"-c{connections}", f"-d{run_s:.0f}s", server.http_url + "/1kb"]
                with generator(stack.procs, "wrk", wrk) as proc:
                    wait_serving(count)
                    measured = process_tree(server.proc.pid)
                    window = measure(count, measured, measured + process_tree(backend.proc.pid) + process_tree(proc.pid),
                                     duration)
                print(f"{name:<10}{cpus:>5}{window.rps:>9,.0f}{window.measured_cpu / window.seconds:>14.2f}"
                      f"{window.per_core:>10,.0f}{window.other_cpu:>7.2f}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=8, help="measured seconds per figure (default 8)")
    parser.add_argument("--connections", type=int, default=50, help="concurrent connections (default 50)")
    args = parser.parse_args()
    print(f"{psutil.cpu_count()} cores, load average {' '.join(f'{x:.1f}' for x in psutil.getloadavg())} at start\n")
    with tempfile.TemporaryDirectory(prefix="loadtest-bench-") as logs:
        bench_generators(Path(logs) / "generators", args.duration, args.connections)
        bench_targets(Path(logs) / "targets", args.duration, args.connections)
    return 0


if __name__ == "__main__":
    sys.exit(main())
