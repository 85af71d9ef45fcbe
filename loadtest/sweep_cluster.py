"""An installed release a sweep drives: `helm upgrade --reuse-values --wait` for the worker count or the target's
CPUs, Locust's web API for the users, and the release's own Prometheus for the figures (reach both through
`kubectl port-forward`, as NOTES.txt shows).

The target's CPU count is what its chart value sets: `nginx.workerProcesses` or `haproxy.threads`, each giving the
container as many CPUs (request = limit), so a step is one more core for the target, as in NGINX's method.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

from . import paths
from .locustweb import LocustWeb, LocustWebError
from .prom import Prometheus
from .sweep import Spec, SweepError

# The chart value that sets a target's CPUs.
TARGET_CPU_VALUE = {"nginx": ("nginx", "workerProcesses"), "haproxy": ("haproxy", "threads")}
UPGRADE_TIMEOUT = "10m"
WORKERS_TIMEOUT_S = 300


class ClusterError(RuntimeError):
    pass


class ClusterDriver:
    def __init__(self, release: str, namespace: str, chart: Path, locust_url: str | None,
                 prometheus_url: str | None, *, spec: Spec, kubeconfig: Path | None = None, progress=print):
        self.release, self.namespace, self.chart, self.kubeconfig = release, namespace, chart, kubeconfig
        self.spec, self.progress = spec, progress
        self.locust = LocustWeb(locust_url) if locust_url else None
        self.prometheus = Prometheus(prometheus_url) if prometheus_url else None
        self.values = self.release_values()
        locust = self.values.get("locust", {})
        self.target = locust.get("target", "backend")
        self.workers = int(locust.get("worker", {}).get("replicas", 0))
        if spec.kind == "target-cpus":
            if self.target not in TARGET_CPU_VALUE:
                raise SweepError(f"release {release} sends the load to {self.target}; a target-cpus sweep needs "
                                 "locust.target nginx or haproxy")
            if self.target == "haproxy" and self.values["haproxy"].get("cpuSet"):
                raise SweepError("haproxy.cpuSet pins a fixed set of CPUs: clear it for a target-cpus sweep")
        self.target_cpus = self.current_target_cpus()

    def __enter__(self) -> ClusterDriver:
        return self

    def __exit__(self, *exc):
        pass

    def helm(self, *args: str, timeout: float = 900) -> str:
        cmd = [paths.tool("helm"), *args, "-n", self.namespace]
        if self.kubeconfig:
            cmd += ["--kubeconfig", str(self.kubeconfig)]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except FileNotFoundError:
            raise ClusterError("helm not found: run scripts/setup or put helm on PATH") from None
        if out.returncode != 0:
            raise ClusterError(f"helm {' '.join(args[:2])} failed:\n{out.stderr.strip()}")
        return out.stdout

    def release_values(self) -> dict:
        try:
            return json.loads(self.helm("get", "values", self.release, "--all", "-o", "json") or "{}")
        except ClusterError as e:
            if "not found" in str(e):
                raise ClusterError(f"no release {self.release!r} in namespace {self.namespace}: install it first, "
                                   f"or see `helm list -A`") from None
            raise

    def current_target_cpus(self) -> int:
        section, key = TARGET_CPU_VALUE.get(self.target, ("backend", "workerProcesses"))
        return int(self.values.get(section, {}).get(key, 1))

    def upgrade(self, settings: dict[str, int]) -> None:
        """helm upgrade --reuse-values with `settings`, waiting until every changed Deployment is rolled out."""
        sets = [arg for key, value in settings.items() for arg in ("--set", f"{key}={value}")]
        self.progress(f"  helm upgrade {self.release} {' '.join(sets)} (waiting for the rollout)")
        self.helm("upgrade", self.release, str(self.chart), "--reuse-values", *sets, "--wait",
                  "--timeout", UPGRADE_TIMEOUT)
        self.values = self.release_values()

    def conditions(self) -> dict[str, str]:
        v = self.values
        node_types = {part: v.get(part, {}).get("nodeType") or "any" for part in ("locust", self.target)}
        return {
            "scenario": v.get("locust", {}).get("scenario", "?"),
            "target": f"{self.target} (release {self.release}, namespace {self.namespace})",
            "node types": ", ".join(f"{part}: {t}" for part, t in node_types.items()),
            "versions": f"chart {self.chart_version()}, Locust image {v.get('locust', {}).get('image', {}).get('tag')}",
            "workers": f"{self.workers} at {v.get('locust', {}).get('worker', {}).get('cpu')} each",
            "target CPU from": "cAdvisor over the pod's CPU limit (Prometheus)",
        }

    def chart_version(self) -> str:
        for line in (self.chart / "Chart.yaml").read_text().splitlines():
            if line.startswith("version:"):
                return line.split(":", 1)[1].strip()
        return "unknown"

    def set_workers(self, count: int) -> None:
        self.upgrade({"locust.worker.replicas": count})
        self.workers = count
        try:
            self.locust.wait_workers(count, WORKERS_TIMEOUT_S)
        except LocustWebError as e:
            raise ClusterError(f"{e}: are there nodes with CPU for {count} workers? (`loadtest size`)") from None

    def set_target_cpus(self, cpus: int) -> None:
        section, key = TARGET_CPU_VALUE[self.target]
        self.upgrade({f"{section}.{key}": cpus})
        self.target_cpus = cpus

    def sample(self) -> None:
        """Every CPU figure of a release comes from its Prometheus."""

    def window_cpu(self) -> tuple[float | None, float | None]:
        return None, None
