"""The local stack a sweep drives: the chart's backend and target (runtime.stack), a Locust master (web API,
metrics plugin) and workers, the target's exporter, node-exporter for the machine's CPU, and Prometheus with the
chart's saturation rules, all on 127.0.0.1, all stopped by PID when the sweep ends.

Prometheus scrapes every second and labels the series as the chart's scrape configs do (release, namespace, pod,
loadtest_role), so the sweep's queries and the verdict the rules record are the cluster's. Here generator and target
share one machine: node-exporter's series carry loadtest_role="host", which the rules read as that machine's CPU.
The CPU of an nginx target, which Prometheus cannot see here (no cAdvisor), the driver measures from the processes
for the report.

An arrival-rate sweep (the open model) starts the master and workers with the step's LOADTEST_ARRIVAL_RATE. The
master reads the rate once, when it starts (plugin/loadtest_arrival.py), so each step with a new rate stops the
master and its workers by PID and starts them again with it, on the same metrics port: Prometheus scrapes the new
master as the same series, whose counters start afresh before the step's warm-up, never inside its window. Each
earlier step's Locust logs are kept beside the new ones, named after their rate.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import yaml
from loadtest_shared import settings

from .. import paths
from ..errors import RunFailed
from ..workload import scenarios, targets
from ..workload.sweep import Spec, SweepError
from . import tools
from .cpu import CpuMeter, cpu_model
from .localrun import describe, versions
from .locust import MASTER, Locust
from .locustweb import LocustWeb, LocustWebError
from .processes import LOCAL_HOST, STARTUP_TIMEOUT_S, free_port, stop
from .prom import Prometheus, PrometheusError
from .stack import Stack

RELEASE = "local"
SCRAPE_S = 1  # Prometheus scrapes (and evaluates the rules) every second here
# --set keys the local stack owns: where things listen and what they forward to.
OWNED_KEYS = ("bindAddress", "ports", "upstream", "hostname")


class LocalStackError(RunFailed):
    pass


def parse_set(items: list[str]) -> dict[str, str]:
    values = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SweepError(f"--set {item!r}: KEY=VALUE, e.g. haproxy.sessionRateLimit=2000")
        if any(part in OWNED_KEYS for part in key.split(".")):
            raise SweepError(f"--set {key}: the local stack sets addresses, ports and upstreams itself")
        values[key] = value
    return values


@dataclass(frozen=True)
class ScrapeJob:
    name: str
    url: str  # the metrics endpoint, http://host:port/path
    pod: str
    role: str  # loadtest_role: generator, target, or host (a machine both share)


def prometheus_config(release: str, jobs: list[ScrapeJob]) -> dict:
    """Scrape every second, evaluate the chart's rules, label every series as the chart's scrape configs do."""
    def job(j: ScrapeJob) -> dict:
        address, _, path = j.url.removeprefix("http://").partition("/")
        labels = {"release": release, "namespace": release, "pod": j.pod, "loadtest_role": j.role}
        return {"job_name": j.name, "metrics_path": f"/{path}",
                "static_configs": [{"targets": [address], "labels": labels}]}

    return {"global": {"scrape_interval": f"{SCRAPE_S}s", "evaluation_interval": f"{SCRAPE_S}s"},
            "rule_files": [str(paths.RULES_FILE)], "scrape_configs": [job(j) for j in jobs]}


class LocalDriver:
    release = RELEASE

    def __init__(self, workdir: Path, *, scenario: str, target: str, tls_mode: str | None, workers: int,
                 wait_s: float, values: dict[str, str], spec: Spec, progress=print):
        if spec.kind == "target-cpus":
            raise SweepError("--sweep target-cpus needs a cluster: on one machine the target's extra CPUs are taken "
                             "from the generator, so the steps would not compare")
        if workers < 1 or wait_s < 0:
            raise SweepError("--workers must be at least 1 and --wait not negative")
        self.scenario = scenarios.get(scenario)
        self.tls_mode = tls_mode or self.scenario.default_tls_mode
        targets.check_tls_mode(self.scenario, targets.get(target), self.tls_mode)
        self.workdir, self.target, self.wait_s = workdir, target, wait_s
        self.values, self.progress = values, progress
        self.workers = spec.loads[0] if spec.kind == "workers" else workers
        # The open model's rate the running master sends (the first step's from the start); None: the closed model.
        self.arrival_rate: int | None = spec.loads[0] if spec.open_model else None
        self.target_cpus = 1
        self.stack: Stack | None = None
        self.window_open = False

    # --- lifecycle ---------------------------------------------------------------------------------------------

    def __enter__(self) -> LocalDriver:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.stack = Stack(self.workdir, overrides=self.values)
        self.stack.__enter__()
        try:
            self._start()
        except BaseException:
            self.stack.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        self.stack.__exit__(*exc)

    def _start(self) -> None:
        procs = self.stack.procs
        self.progress(f"starting the local stack: {describe(self.target, self.tls_mode)}, Prometheus, "
                      f"a Locust master and {self.workers} worker(s)")
        _, self.server = self.stack.target(self.target, self.tls_mode)
        if self.target == "haproxy":
            target_metrics = self.server.status_url  # HAProxy's built-in exporter
        else:
            port = free_port()
            procs.start("nginx-exporter", [
                tools.find("nginx-prometheus-exporter"), f"--nginx.scrape-uri={self.server.status_url}",
                f"--web.listen-address={LOCAL_HOST}:{port}"])
            target_metrics = f"http://{LOCAL_HOST}:{port}/metrics"
            procs.wait_http("nginx-exporter", target_metrics)
        host_port = free_port()
        procs.start("node-exporter", [
            tools.find("prometheus-node-exporter"), "--collector.disable-defaults", "--collector.cpu",
            f"--web.listen-address={LOCAL_HOST}:{host_port}"])
        host_metrics = f"http://{LOCAL_HOST}:{host_port}/metrics"
        procs.wait_http("node-exporter", host_metrics)

        self.metrics_port, prom_port = free_port(), free_port()
        config = self.stack.runtime / "prometheus.yml"
        config.write_text(yaml.safe_dump(prometheus_config(RELEASE, [
            ScrapeJob("locust", f"http://{LOCAL_HOST}:{self.metrics_port}/metrics", "locust-master", "generator"),
            ScrapeJob(self.target, target_metrics, self.target, "target"),
            ScrapeJob("node", host_metrics, "this-machine", "host"),
        ])))
        procs.start("prometheus", [
            tools.find("prometheus"), f"--config.file={config}",
            f"--storage.tsdb.path={self.stack.runtime / 'prometheus-data'}",
            f"--web.listen-address={LOCAL_HOST}:{prom_port}"])
        self.prometheus = Prometheus(f"http://{LOCAL_HOST}:{prom_port}")
        procs.wait_http("prometheus", f"{self.prometheus.url}/-/ready")

        self._start_locust()
        try:
            self.prometheus.wait_for(f'locust_users{{release="{RELEASE}"}}', STARTUP_TIMEOUT_S * 2, "Locust series")
        except PrometheusError as e:
            raise LocalStackError(f"{e}\n{procs.log_tail('prometheus')}") from None
        self.target_meter = CpuMeter(self.server.proc.pid)

    def _start_locust(self) -> None:
        """A master (the web API, the metrics plugin on the one metrics port Prometheus scrapes) and the workers; in
        the open model both with the current rate."""
        env = {settings.WAIT.env: f"{self.wait_s:g}"}
        if self.arrival_rate is not None:
            env[settings.ARRIVAL_RATE.env] = str(self.arrival_rate)
        self.launcher = Locust(self.stack.procs, self.scenario.locustfile, env=env)
        self.master = self.launcher.start_master(
            "--enable-rebalancing", "--host", self.server.url(tls=self.tls_mode != "none"),
            env={settings.METRICS_PORT.env: str(self.metrics_port)})
        self.locust = LocustWeb(self.launcher.web_url, self.launcher.web_credentials)
        self.stack.procs.wait_http(MASTER, f"{self.locust.url}/stats/requests")
        self._start_workers(self.workers)

    def _stop_locust(self, logs_suffix: str) -> None:
        """Stop the master (it tells its workers to quit), then the workers, by PID; keep their logs under
        <name>.<logs_suffix>.log."""
        procs = self.stack.procs
        ours = [self.master, *self.launcher.workers]
        for proc in ours:
            stop(proc)
        for name, proc in list(procs.procs.items()):
            if any(proc is p for p in ours):
                del procs.procs[name]
                log = procs.logs / f"{name}.log"
                if log.exists():
                    log.rename(procs.logs / f"{name}.{logs_suffix}.log")

    def _start_workers(self, count: int) -> None:
        self.launcher.start_workers(count)
        try:
            self.locust.wait_workers(count, STARTUP_TIMEOUT_S * 2)
        except LocustWebError as e:
            raise LocalStackError(f"{e}\n{self.stack.procs.log_tail(MASTER)}") from None

    # --- the sweep's calls -------------------------------------------------------------------------------------

    def conditions(self) -> dict[str, str]:
        return {
            "scenario": self.scenario.name, "target": f"{self.target} (local stack, TLS {self.tls_mode})",
            "where": f"this machine: {cpu_model()}, {os.cpu_count()} cores shared by generator "
                     "and target",
            "node types": "none (local stack)",
            "versions": versions(self.target, None),
            "think time per user": "none: the rate sets each send (open model)" if self.arrival_rate is not None
            else f"{self.wait_s:g} s",
            "chart values set": ", ".join(f"{k}={v}" for k, v in self.values.items()) or "none",
            "target CPU from": "HAProxy's busy time (Prometheus)" if self.target == "haproxy"
            else "the target's processes (psutil; no cAdvisor here)",
        }

    def set_workers(self, count: int) -> None:
        if count < len(self.launcher.workers):
            raise SweepError("a local workers sweep only adds workers")
        self._start_workers(count)
        self.workers = count

    def set_target_cpus(self, cpus: int) -> None:
        raise SweepError("--sweep target-cpus needs a cluster")

    def set_arrival_rate(self, rate: int) -> None:
        """Start Locust again with `rate`: its master reads the rate once, when it starts."""
        if rate == self.arrival_rate:
            return
        self.progress(f"  restarting the Locust master and {self.workers} worker(s) to offer {rate:,} requests/s")
        self._stop_locust(f"rate-{self.arrival_rate}")
        self.arrival_rate = rate
        self._start_locust()

    def sample(self) -> None:
        if not self.window_open:  # the first call of a window only starts the CPU counters
            self.target_meter.sample(keep=False)
            self.window_open = True
            return
        self.target_meter.sample(keep=True)

    def window_target_cores(self) -> list[float]:
        target = self.target_meter.samples
        self.target_meter.samples, self.window_open = [], False
        return target
