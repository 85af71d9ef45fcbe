"""The local stack a sweep drives: the chart's backend and target (loadtest.targets), a Locust master (web API,
metrics plugin) and workers, the target's exporter, and Prometheus with the chart's saturation rules, all on
127.0.0.1, all stopped by PID when the sweep ends.

Prometheus scrapes every second and labels the series as the chart's scrape configs do (release, namespace, pod,
loadtest_role), so the sweep's queries are the cluster's. What Prometheus cannot see here, the CPU of an nginx target
and of the whole machine (there is no cAdvisor), the driver measures from the processes.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import locust
import psutil
import yaml

from . import local, paths, rules, targets
from .calibrate import cpu_model
from .locustweb import LocustWeb, LocustWebError
from .prom import Prometheus, PrometheusError
from .sweep import Spec, SweepError

RELEASE = "local"
SCRAPE_INTERVAL = "1s"
STARTUP_TIMEOUT_S = 30
VERSION = re.compile(r"\d+\.\d+(\.\d+)?")
# --set keys the local stack owns: where things listen and what they forward to.
OWNED_KEYS = ("bindAddress", "ports", "upstream", "hostname")


class LocalStackError(RuntimeError):
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


def find_tool(name: str) -> str:
    found = shutil.which(paths.tool(name)) or shutil.which(name, path="/usr/sbin:/usr/bin")
    if not found:
        raise LocalStackError(f"{name} not found: run scripts/setup (it installs the sweep's tools)")
    return found


@dataclass(frozen=True)
class ScrapeJob:
    name: str
    url: str  # the metrics endpoint, http://host:port/path
    pod: str
    role: str  # loadtest_role: generator or target


def prometheus_config(release: str, jobs: list[ScrapeJob]) -> dict:
    """Scrape every second, evaluate the chart's rules, label every series as the chart's scrape configs do."""
    def job(j: ScrapeJob) -> dict:
        address, _, path = j.url.removeprefix("http://").partition("/")
        labels = {"release": release, "namespace": release, "pod": j.pod, "loadtest_role": j.role}
        return {"job_name": j.name, "metrics_path": f"/{path}",
                "static_configs": [{"targets": [address], "labels": labels}]}

    return {"global": {"scrape_interval": SCRAPE_INTERVAL, "evaluation_interval": SCRAPE_INTERVAL},
            "rule_files": [str(rules.RULES_FILE)], "scrape_configs": [job(j) for j in jobs]}


class LocalDriver:
    release = RELEASE

    def __init__(self, workdir: Path, *, scenario: str, target: str, tls_mode: str | None, workers: int,
                 wait_s: float, values: dict[str, str], spec: Spec, progress=print):
        if spec.kind == "target-cpus":
            raise SweepError("--sweep target-cpus needs a cluster: on one machine the target's extra CPUs are taken "
                             "from the generator, so the steps would not compare")
        if workers < 1 or wait_s < 0:
            raise SweepError("--workers must be at least 1 and --wait not negative")
        self.tls_mode = tls_mode or local.default_tls_mode(scenario)
        try:
            local.check_tls_mode(scenario, target, self.tls_mode)
        except local.LocalRunError as e:
            raise SweepError(str(e)) from None
        self.workdir, self.scenario, self.target, self.wait_s = workdir, scenario, target, wait_s
        self.values, self.progress = values, progress
        self.workers = spec.loads[0] if spec.kind == "workers" else workers
        self.target_cpus = 1
        self.stack: targets.Stack | None = None
        self.host_samples: list[float] = []
        self.window_open = False

    # --- lifecycle ---------------------------------------------------------------------------------------------

    def __enter__(self) -> LocalDriver:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.stack = targets.Stack(self.workdir, overrides=self.values)
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
        self.progress(f"starting the local stack: {local.describe(self.target, self.tls_mode)}, Prometheus, "
                      f"a Locust master and {self.workers} worker(s)")
        try:
            _, self.server = self.stack.target(self.target, self.tls_mode)
        except targets.TargetError as e:
            raise LocalStackError(str(e)) from None
        if self.target == "haproxy":
            target_metrics = self.server.status_url  # HAProxy's built-in exporter
        else:
            port = targets.free_port()
            exporter = procs.start("nginx-exporter", [
                find_tool("nginx-prometheus-exporter"), f"--nginx.scrape-uri={self.server.status_url}",
                f"--web.listen-address={targets.LOCAL_HOST}:{port}"])
            target_metrics = f"http://{targets.LOCAL_HOST}:{port}/metrics"
            self._wait(target_metrics, exporter, "nginx-exporter")

        locust_metrics, master_port, web_port, prom_port = (targets.free_port() for _ in range(4))
        config = self.stack.runtime / "prometheus.yml"
        config.write_text(yaml.safe_dump(prometheus_config(RELEASE, [
            ScrapeJob("locust", f"http://{targets.LOCAL_HOST}:{locust_metrics}/metrics", "locust-master", "generator"),
            ScrapeJob(self.target, target_metrics, self.target, "target"),
        ])))
        prometheus = procs.start("prometheus", [
            find_tool("prometheus"), f"--config.file={config}",
            f"--storage.tsdb.path={self.stack.runtime / 'prometheus-data'}",
            f"--web.listen-address={targets.LOCAL_HOST}:{prom_port}"])
        self.prometheus = Prometheus(f"http://{targets.LOCAL_HOST}:{prom_port}")
        self._wait(f"{self.prometheus.url}/-/ready", prometheus, "prometheus")

        self.locust_cmd = [sys.executable, "-m", "locust", "-f", str(local.scenario_file(self.scenario))]
        self.locust_env = {"LOADTEST_WAIT": f"{self.wait_s:g}"}
        self.master_port = master_port
        master = procs.start("locust-master", self.locust_cmd + [
            "--master", "--master-bind-host", targets.LOCAL_HOST, "--master-bind-port", str(master_port),
            "--web-host", targets.LOCAL_HOST, "--web-port", str(web_port), "--enable-rebalancing",
            "--host", self.server.url(tls=self.tls_mode != "none")],
            env={**self.locust_env, "LOADTEST_METRICS_PORT": str(locust_metrics)})
        self.locust = LocustWeb(f"http://{targets.LOCAL_HOST}:{web_port}")
        self._wait(f"{self.locust.url}/stats/requests", master, "locust-master")
        self.started_workers = 0
        self._start_workers(self.workers)
        try:
            self.prometheus.wait_for(f'locust_users{{release="{RELEASE}"}}', STARTUP_TIMEOUT_S, "Locust series")
        except PrometheusError as e:
            raise LocalStackError(f"{e}\n{procs.log_tail('prometheus')}") from None
        self.target_meter = local.CpuMeter(self.server.proc.pid)

    def _wait(self, url: str, proc, name: str) -> None:
        try:
            targets.wait_http(url, proc, self.stack.procs, name)
        except targets.TargetError as e:
            raise LocalStackError(str(e)) from None

    def _start_workers(self, count: int) -> None:
        for i in range(self.started_workers, count):
            self.stack.procs.start(f"locust-worker-{i}", self.locust_cmd + [
                "--worker", "--master-host", targets.LOCAL_HOST, "--master-port", str(self.master_port)],
                env=self.locust_env)
        self.started_workers = max(self.started_workers, count)
        try:
            self.locust.wait_workers(count, STARTUP_TIMEOUT_S)
        except LocustWebError as e:
            raise LocalStackError(f"{e}\n{self.stack.procs.log_tail('locust-master')}") from None

    # --- the sweep's calls -------------------------------------------------------------------------------------

    def conditions(self) -> dict[str, str]:
        versions = {name: tool_version(find_tool(name)) for name in ("nginx", "haproxy")}
        return {
            "scenario": self.scenario, "target": f"{self.target} (local stack, TLS {self.tls_mode})",
            "where": f"this machine: {cpu_model()}, {os.cpu_count()} cores shared by generator "
                     "and target",
            "node types": "none (local stack)",
            "versions": f"Locust {locust.__version__}, nginx {versions['nginx']}, HAProxy {versions['haproxy']}",
            "think time per user": f"{self.wait_s:g} s",
            "chart values set": ", ".join(f"{k}={v}" for k, v in self.values.items()) or "none",
            "target CPU from": "HAProxy's busy time (Prometheus)" if self.target == "haproxy"
            else "the target's processes (psutil; no cAdvisor here)",
        }

    def set_workers(self, count: int) -> None:
        if count < self.started_workers:
            raise SweepError("a local workers sweep only adds workers")
        self._start_workers(count)
        self.workers = count

    def set_target_cpus(self, cpus: int) -> None:
        raise SweepError("--sweep target-cpus needs a cluster")

    def sample(self) -> None:
        if not self.window_open:  # the first call of a window only starts the CPU counters
            psutil.cpu_percent(None)
            self.target_meter.sample(keep=False)
            self.window_open = True
            return
        self.target_meter.sample(keep=True)
        self.host_samples.append(psutil.cpu_percent(None) / 100)

    def window_cpu(self) -> tuple[float | None, float | None]:
        target, host = self.target_meter.mean, self.host_samples
        self.host_samples, self.target_meter.samples, self.window_open = [], [], False
        return target, (sum(host) / len(host) if host else None)


def tool_version(binary: str) -> str:
    out = subprocess.run([binary, "-v"], capture_output=True, text=True, timeout=10)
    found = VERSION.search(out.stdout + out.stderr)
    return found.group(0) if found else "unknown"
