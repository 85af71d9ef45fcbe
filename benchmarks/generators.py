"""Requests per generator core: wrk, raw client loops and Locust's user classes against the same local nginx.

    ~/.cache/loadtest/venv/bin/python benchmarks/generators.py [--duration 10] [--connections 50] [--runs 3]

nginx (one process, 1 KB file, keep-alive) runs on CPU 0, each generator in turn on CPU 1, with the same number of
connections. Each generator warms up, then is measured over --duration seconds: requests from nginx's stub_status
(the same count for every generator, whatever it reports itself) and the generator's own CPU time. RPS per core is
requests / generator CPU seconds, so it holds whether the generator or the target was the limit (wrk is the
target-bound one). Every generator runs --runs times in turn; the end prints min / median / max of its RPS per core
and of its ratio to wrk's in the same run. The "other" column is CPU 1 time used by processes this script did not
start: anything above a few percent means the figures were disturbed. Each run starts with the host's CPUs'
steadiness (benchmarks/steadiness.py): a CPU slowed for stretches of tens of ms lowers that run's every figure. For
the benchmark's time the host's idle CPUs poll before they halt (benchmarks/host_idle.py), as for arrival.py.
When both are among the generators, each run then measures LeanHttpUser and its own connection loop (leanhttp-loop)
side by side, both on CPU 1 at once, each against an nginx of its own on CPU 0: the end prints that ratio, of the
same seconds, per run. No assertions: this prints figures for docs/own-test.md ("Which Locust user class") and for
sizing.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import host_idle  # sibling scripts
import psutil
from steadiness import measure as cpu_steadiness

from loadtest_shared import checks

from loadtest import paths
from loadtest.errors import RunFailed
from loadtest.runtime.cpu import cpu_seconds, process_tree
from loadtest.runtime.locust import command as locust_command
from loadtest.runtime.locust import with_plugin
from loadtest.runtime.processes import free_port, stop
from loadtest.workload import scenarios

TARGET_CPU, GENERATOR_CPU = 0, 1
STARTUP_TIMEOUT_S = 30
WARMUP_S = 2.0

# A connection per user: the open model's pool is half a second of its rate (8,000 users at 16,000/s), and nginx's
# 4,096 connections left the rest waiting in its backlog, capping benchmarks/arrival.py near 8,000/s.
NGINX_CONF = """
master_process off;
daemon off;
pid {run}/nginx.pid;
error_log stderr warn;
worker_rlimit_nofile 65536;
events {{ worker_connections 32768; }}
http {{
    access_log off;
    keepalive_requests 1000000;
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        root {run}/html;
        location = /stub_status {{ stub_status; }}
    }}
}}
"""

FAST_HTTP_USER = """
from locust import FastHttpUser, task


class Fast(FastHttpUser):
    @task
    def get_1kb(self):
        self.client.get("/1kb")
"""

HTTP_USER = """
from locust import HttpUser, task


class Requests(HttpUser):
    @task
    def get_1kb(self):
        self.client.get("/1kb")
"""

GENERATORS = ("wrk", "geventhttpclient-loop", "leanhttp-loop", "FastHttpUser", "HttpUser", "LeanHttpUser")
# Measured again at the same time, sharing the generator's CPU, each against an nginx of its own: their ratio is
# then one of the same seconds. One after the other, the host's own speed moved it by tens of percent between runs
# minutes apart (the connection loop alone: 36,000-75,000 a core in three runs, 2026-11-30).
SIDE_BY_SIDE = ("leanhttp-loop", "LeanHttpUser")


def raw_loop(client: str, url: str, connections: int, seconds: float) -> None:
    """Without Locust: `connections` greenlets, each with its own connection, GET the URL until time is up."""
    from gevent import monkey

    monkey.patch_all()
    import gevent

    parts = urlsplit(url)
    stop_at = time.monotonic() + seconds
    if client == "geventhttpclient":
        from geventhttpclient import HTTPClient

        def run():
            http = HTTPClient(parts.hostname, parts.port, concurrency=1)
            while time.monotonic() < stop_at:
                response = http.get(parts.path)
                response.read()
                assert response.status_code == 200
    else:
        sys.path.insert(0, str(paths.PLUGIN))
        from leanhttp import HttpConnection

        request = f"GET {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nUser-Agent: loadtest-lean\r\n\r\n".encode()

        def run():
            connection = HttpConnection(parts.hostname, parts.port)
            while time.monotonic() < stop_at:
                status, _ = connection.exchange(request)
                assert status == 200

    gevent.joinall([gevent.spawn(run) for _ in range(connections)], raise_error=True)


@dataclass
class Measurement:
    generator: str
    rps: float
    generator_cpu: float  # cores used by the generator
    target_cpu: float  # cores used by nginx
    other_cpu: float  # share of CPU 1 used by processes this script did not start

    @property
    def rps_per_core(self) -> float:
        return self.rps / self.generator_cpu if self.generator_cpu else 0.0


class Target:
    """The local nginx every generator runs against, on its own CPU."""

    def __init__(self, run: Path):
        (run / "html").mkdir(parents=True)
        (run / "html" / "1kb").write_bytes(b"x" * 1023 + b"\n")
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        (run / "nginx.conf").write_text(NGINX_CONF.format(run=run, port=port))
        with open(run / "nginx.log", "wb") as log:
            self.proc = subprocess.Popen(
                ["taskset", "-c", str(TARGET_CPU), "nginx", "-p", f"{run}/", "-c", str(run / "nginx.conf")],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        wait_until(lambda: self.requests() is not None, self.proc, f"nginx did not start; see {run}/nginx.log")

    def requests(self) -> int | None:
        """Requests served so far (this one included), None while nginx does not answer."""
        try:
            with urllib.request.urlopen(f"{self.url}/stub_status", timeout=2) as response:
                return int(response.read().decode().splitlines()[2].split()[2])
        except OSError:
            return None


def wait_until(condition, proc: subprocess.Popen, message: str) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while not condition():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RunFailed(message)
        time.sleep(0.1)


def busy_seconds(cpu: int) -> float:
    """CPU time spent on one CPU by processes (and taken by the hypervisor). Interrupt time is left out: on loopback
    it is mostly the generator's own packets, accounted to no process."""
    times = psutil.cpu_times(percpu=True)[cpu]
    return times.user + times.nice + times.system + times.steal


def generator_command(name: str, url: str, connections: int, seconds: float, workdir: Path) -> list[str]:
    options = ["--headless", "-u", str(connections), "-r", str(connections), "-t", f"{int(seconds)}s", "--host", url,
               "--only-summary"]
    if name == "wrk":
        return ["wrk", "-t", "1", "-c", str(connections), "-d", f"{int(seconds)}s", f"{url}/1kb"]
    if name.endswith("-loop"):
        return [sys.executable, __file__, "--raw-loop", name.removesuffix("-loop"), "--url", f"{url}/1kb",
                "--connections", str(connections), "--duration", str(seconds)]
    if name == "LeanHttpUser":
        return [*locust_command(scenarios.get("keepalive_1kb").locustfile), *options]
    locustfile = workdir / f"{name}.py"
    locustfile.write_text(FAST_HTTP_USER if name == "FastHttpUser" else HTTP_USER)
    return [*locust_command(locustfile), *options]


def measure(name: str, target: Target, connections: int, duration: float, workdir: Path) -> Measurement:
    return measure_together([name], [target], connections, duration, workdir)[0]


def measure_together(names: list[str], targets: list[Target], connections: int, duration: float,
                     workdir: Path) -> list[Measurement]:
    """The generators at once, all on the generator's CPU, each against its own target, measured over the same
    seconds."""
    run_s = STARTUP_TIMEOUT_S + WARMUP_S + duration  # an upper bound: the generator is stopped after the window
    procs = []
    try:
        for name, target in zip(names, targets):
            cmd = ["taskset", "-c", str(GENERATOR_CPU), *generator_command(name, target.url, connections, run_s,
                                                                             workdir)]
            with open(workdir / f"{name}.log", "wb") as log:
                procs.append(subprocess.Popen(  # the scenarios import the plugin's leanhttp
                    cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    env=with_plugin(dict(os.environ))))
        for name, target, proc in zip(names, targets, procs):
            first = target.requests()
            wait_until(lambda: (target.requests() or 0) > first + 1000, proc,
                       f"{name} sent no requests; see {workdir / name}.log")
        time.sleep(WARMUP_S)
        trees = [(process_tree(proc.pid), process_tree(target.proc.pid)) for proc, target in zip(procs, targets)]

        def sample():
            return (time.monotonic(), [target.requests() for target in targets],
                    [(cpu_seconds(generator), cpu_seconds(nginx)) for generator, nginx in trees],
                    busy_seconds(GENERATOR_CPU))

        before = sample()
        time.sleep(duration)
        after = sample()
        for name, proc in zip(names, procs):
            if proc.poll() is not None:
                raise RunFailed(f"{name} exited during the measurement; see {workdir / name}.log")
    finally:
        for proc in procs:
            stop(proc)
    elapsed = after[0] - before[0]
    generators_cpu = sum(a[0] - b[0] for a, b in zip(after[2], before[2]))
    other = max(0.0, after[3] - before[3] - generators_cpu) / elapsed
    return [Measurement(name, (after[1][i] - before[1][i]) / elapsed, (after[2][i][0] - before[2][i][0]) / elapsed,
                        (after[2][i][1] - before[2][i][1]) / elapsed, other) for i, name in enumerate(names)]


def ratio(value: float, base: Measurement | None) -> str:
    return f"{value / base.rps_per_core:.2f}x" if base and base.rps_per_core else "-"


def print_table(results: list[Measurement], connections: int, duration: float) -> None:
    by_name = {m.generator: m for m in results}
    fast, raw, wrk = by_name.get("FastHttpUser"), by_name.get("geventhttpclient-loop"), by_name.get("wrk")
    print(f"\n1 KB GET, keep-alive, {connections} connections, nginx on CPU {TARGET_CPU}, generator on CPU "
          f"{GENERATOR_CPU}, {duration:g} s each")
    header = (f"{'generator':<22} {'RPS':>9} {'gen CPU':>8} {'RPS/core':>9} {'vs Fast':>8} {'vs raw':>7} "
              f"{'vs wrk':>7} {'nginx CPU':>9} {'other':>6}")
    print(header)
    print("-" * len(header))
    for m in results:
        print(f"{m.generator:<22} {m.rps:>9,.0f} {m.generator_cpu:>8.2f} {m.rps_per_core:>9,.0f} "
              f"{ratio(m.rps_per_core, fast):>8} {ratio(m.rps_per_core, raw):>7} {ratio(m.rps_per_core, wrk):>7} "
              f"{m.target_cpu:>9.2f} {m.other_cpu:>6.0%}")
    print("\nvs raw = against the raw geventhttpclient loop; leanhttp-loop is LeanHttpUser's connection code "
          "without Locust. other = CPU 1 time of processes not started here (disturbance).")
    load = psutil.getloadavg()
    print(f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {psutil.cpu_count()} CPUs")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=10, help="measured seconds per generator (default 10)")
    parser.add_argument("--connections", type=int, default=50, help="connections (Locust users) (default 50)")
    parser.add_argument("--runs", type=int, default=3, help="runs of every generator (default 3)")
    parser.add_argument("--generators", default=",".join(GENERATORS),
                        help=f"comma-separated subset of {', '.join(GENERATORS)}")
    host_idle.add_option(parser)
    parser.add_argument("--raw-loop", choices=("geventhttpclient", "leanhttp"), help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.raw_loop:
        raw_loop(args.raw_loop, args.url, args.connections, args.duration)
        return 0
    if not 1 <= args.duration <= 120 or not 1 <= args.connections <= 1000 or not 1 <= args.runs <= 10:
        parser.error("--duration must be 1..120 s, --connections 1..1000 and --runs 1..10")
    names = [n for n in args.generators.split(",") if n]
    unknown = set(names) - set(GENERATORS)
    if unknown:
        parser.error(f"unknown generators: {', '.join(sorted(unknown))}")
    missing = [tool for tool in ("nginx", "taskset") if not shutil.which(tool)]
    if missing or psutil.cpu_count() < 2:
        parser.error(f"needs nginx, taskset and two CPUs (missing: {', '.join(missing) or 'a second CPU'})")
    if "wrk" in names and not shutil.which("wrk"):
        print("generators: wrk not found, skipping it", file=sys.stderr)
        names.remove("wrk")

    workdir = Path(tempfile.mkdtemp(prefix="loadtest-generators-"))
    with host_idle.for_benchmark(args.host_as_is) as idle:
        print(f"the host: {idle}", flush=True)
        result = measure_all(names, args, workdir)
    if result is None:
        return checks.RUN_FAILED  # 4: the measurement could not be made (1 means a check failed)
    runs, pairs = result
    if len(runs) > 1:
        print_spread(runs)
    if pairs:
        print(f"\nLeanHttpUser / its own connection loop (leanhttp-loop), side by side, each run's: "
              f"{spread(own_loop_ratios(pairs), '{:.2f}')} (a ratio inside the project, both measured over the same "
              "seconds, so the host's speed is the same for both; it moves less from host to host than a ratio to "
              "wrk, not nothing: docs/own-test.md)")
    print(f"the host: {idle}")
    shutil.rmtree(workdir)
    return 0


def measure_all(names: list[str], args: argparse.Namespace,
                workdir: Path) -> tuple[list[list[Measurement]], list[list[Measurement]]] | None:
    """Each run of every generator, and of the side-by-side pair; None when a measurement could not be made (the
    reason printed)."""
    runs: list[list[Measurement]] = []
    pairs: list[list[Measurement]] = []  # per run: the connection loop and LeanHttpUser side by side
    targets: list[Target] = []
    try:
        targets.append(Target(workdir / "nginx"))
        if set(SIDE_BY_SIDE) <= set(names):
            targets.append(Target(workdir / "nginx-2"))
        for run in range(1, args.runs + 1):
            runs.append([])
            print(f"run {run}/{args.runs}: the host's CPUs: "
                  f"{'; '.join(map(str, cpu_steadiness([TARGET_CPU, GENERATOR_CPU])))}", flush=True)
            for name in names:
                print(f"run {run}/{args.runs}: measuring {name} ...", flush=True)
                runs[-1].append(measure(name, targets[0], args.connections, args.duration, workdir))
            print_table(runs[-1], args.connections, args.duration)
            if len(targets) > 1:
                print(f"run {run}/{args.runs}: measuring {' and '.join(SIDE_BY_SIDE)} side by side ...", flush=True)
                pairs.append(measure_together(list(SIDE_BY_SIDE), targets, args.connections, args.duration, workdir))
                print_side_by_side(pairs[-1])
    except RunFailed as e:
        print(f"generators: {e}", file=sys.stderr)
        return None
    finally:
        for target in targets:
            stop(target.proc)
    return runs, pairs


def min_median_max(values) -> tuple:
    """A figure's spread over runs: its lowest, median (one of the values: median_low) and highest."""
    ordered = sorted(values)
    return ordered[0], statistics.median_low(ordered), ordered[-1]


def spread(values, form: str) -> str:
    """min / median / max, each written with `form` (e.g. "{:,.0f}")."""
    return " / ".join(form.format(v) for v in min_median_max(values))


def print_spread(runs: list[list[Measurement]]) -> None:
    """Each generator's RPS per core, and its ratio to wrk's in the same run, as min / median / max over the runs."""
    print(f"\nover {len(runs)} runs, min / median / max")
    print(f"{'generator':<22} {'RPS/core':>26} {'vs wrk':>20}")
    for i, name in enumerate(m.generator for m in runs[0]):
        wrk = [next((m for m in run if m.generator == "wrk"), None) for run in runs]
        ratios = [run[i].rps_per_core / w.rps_per_core for run, w in zip(runs, wrk) if w and w.rps_per_core]
        per_core = spread((run[i].rps_per_core for run in runs), "{:,.0f}")
        print(f"{name:<22} {per_core:>26} {spread(ratios, '{:.2f}') if ratios else '-':>20}")
    if own := own_loop_ratios(runs):
        print(f"\nLeanHttpUser / its own connection loop (leanhttp-loop), one after the other, each run's: "
              f"{spread(own, '{:.2f}')} (the host's speed may differ between the two)")


def print_side_by_side(pair: list[Measurement]) -> None:
    for m in pair:
        print(f"  side by side: {m.generator:<14} {m.rps_per_core:>9,.0f} RPS a core ({m.generator_cpu:.2f} of the "
              f"core, nginx {m.target_cpu:.2f})")
    if ratios := own_loop_ratios([pair]):
        print(f"  LeanHttpUser / its own connection loop: {ratios[0]:.2f}", flush=True)


def own_loop_ratios(runs: list[list[Measurement]]) -> list[float]:
    """Per run, LeanHttpUser's RPS per core over its own connection code's without Locust (leanhttp-loop): what
    Locust's per-request machinery (task loop, request event, statistics) leaves of the connection's rate."""
    ratios = []
    for run in runs:
        by_name = {m.generator: m for m in run}
        lean, loop = by_name.get("LeanHttpUser"), by_name.get("leanhttp-loop")
        if lean and loop and loop.rps_per_core:
            ratios.append(lean.rps_per_core / loop.rps_per_core)
    return ratios


if __name__ == "__main__":
    sys.exit(main())
