"""An installed release a sweep drives: `helm upgrade --reuse-values --wait` for the worker count or the target's
CPUs, Locust's web API for the users, and the release's own Prometheus for the figures (reach both through
`kubectl port-forward`, as NOTES.txt shows). The values a sweep changed are set back when it ends, however it ends.

The target's CPU count is what its chart value sets: `nginx.workerProcesses` or `haproxy.threads`, each giving the
container as many CPUs (request = limit), so a step is one more core for the target, as in NGINX's method.
"""
from __future__ import annotations

from pathlib import Path

from .. import paths
from ..workload import targets
from ..workload.sweep import Spec, SweepError, check_open_model
from .locustweb import LocustWeb, LocustWebError
from .prom import Prometheus
from .release import Release, ReleaseError, value_at

WORKERS_TIMEOUT_S = 300


class ClusterDriver:
    def __init__(self, installed: Release, chart: Path, locust: LocustWeb | None, prometheus: Prometheus | None, *,
                 spec: Spec, progress=print):
        """`locust` and `prometheus`: the release's master's web UI and its Prometheus, reached (port-forwards)."""
        release = installed.name
        if spec.open_model:  # before anything reads the release
            check_open_model(users_per_worker=None, wait_s=0, release=release)
        self.installed, self.release, self.chart = installed, release, chart
        self.spec, self.progress = spec, progress
        self.locust, self.prometheus = locust, prometheus
        self.values = self.installed.values()
        locust = self.values.get("locust", {})
        self.target = locust.get("target", "backend")
        self.workers = int(locust.get("worker", {}).get("replicas", 0))
        if spec.kind == "target-cpus":
            if self.target in ("backend", targets.URL):
                raise SweepError(f"release {release} sends the load to {self.target}; a target-cpus sweep needs "
                                 "locust.target nginx or haproxy")
            if self.target == "haproxy" and self.values["haproxy"].get("cpuSet"):
                raise SweepError("haproxy.cpuSet pins a fixed set of CPUs: clear it for a target-cpus sweep")
        if self.workers < 1 and spec.kind != "workers":
            raise SweepError(f"release {release} has locust.worker.replicas 0: no worker would send the steps' load; "
                             f"`helm upgrade {release} charts/loadtest --reuse-values --set locust.worker.replicas=N` "
                             "(`loadtest size` says how many the nodes hold)")
        if locust.get("mode") == "run":
            raise SweepError(f"release {release} runs locust.mode run: one judged run that ends by itself; install "
                             "it with locust.mode=interactive for a sweep")
        if spec.kind == "workers" and locust.get("mode") == "autostart":
            raise SweepError(f"release {release} runs locust.mode autostart: the master's arguments carry the worker "
                             "count, so each workers step would recreate the master and reset its statistics; "
                             "upgrade it with locust.mode=interactive for the sweep")
        self.target_cpus = self.current_target_cpus()
        self.changed: dict[str, object] = {}  # chart value -> what it was before the sweep set it

    def __enter__(self) -> ClusterDriver:
        return self

    def __exit__(self, *exc):
        if not self.changed:
            return
        self.progress("restoring the values the sweep changed")
        try:
            self.upgrade(self.changed)
        except ReleaseError as e:
            restore = " ".join(f"--set {k}={v}" for k, v in self.changed.items())
            self.progress(f"could not restore them ({e}); run: helm upgrade {self.release} {self.chart} "
                          f"--reuse-values {restore}")

    def cpu_value(self) -> tuple[str, str]:
        """(section, key) of the chart value that sets the loaded target's CPUs; the backend's for an outside URL."""
        section, _, key = targets.TARGETS.get(self.target, targets.TARGETS["backend"]).cpu_value.partition(".")
        return section, key

    def current_target_cpus(self) -> int:
        section, key = self.cpu_value()
        return int(self.values.get(section, {}).get(key, 1))

    def change(self, settings: dict[str, int]) -> None:
        """Upgrade to `settings`, remembering each value's first state to restore it at the end."""
        for key in settings:
            self.changed.setdefault(key, value_at(self.values, key))
        self.upgrade(settings)

    def upgrade(self, settings: dict[str, object]) -> None:
        """helm upgrade --reuse-values with `settings`, waiting until every changed Deployment is rolled out."""
        sets = [arg for key, value in settings.items() for arg in ("--set", f"{key}={value}")]
        self.progress(f"  helm upgrade {self.release} {' '.join(sets)} (waiting for the rollout)")
        self.installed.upgrade(self.chart, settings)
        self.values = self.installed.values()

    def conditions(self) -> dict[str, str]:
        v = self.values
        node_types = {part: v.get(part, {}).get("nodeType") or "any" for part in ("locust", self.target)}
        return {
            "scenario": v.get("locust", {}).get("scenario", "?"),
            "target": f"{self.target} ({self.installed})",
            "node types": ", ".join(f"{part}: {t}" for part, t in node_types.items()),
            "versions": f"chart {paths.chart_version(self.chart)}, Locust image {v.get('locust', {}).get('image', {}).get('tag')}",
            "workers": f"{self.workers} at {v.get('locust', {}).get('worker', {}).get('cpu')} each",
            "target CPU from": "cAdvisor over the pod's CPU limit (Prometheus)",
        }

    def set_workers(self, count: int) -> None:
        self.change({"locust.worker.replicas": count})
        self.workers = count
        try:
            self.locust.wait_workers(count, WORKERS_TIMEOUT_S)
        except LocustWebError as e:
            raise ReleaseError(f"{e}: are there nodes with CPU for {count} workers? (`loadtest size`)") from None

    def set_target_cpus(self, cpus: int) -> None:
        section, key = self.cpu_value()
        self.change({f"{section}.{key}": cpus})
        self.target_cpus = cpus

    def set_arrival_rate(self, rate: int) -> None:
        check_open_model(users_per_worker=None, wait_s=0, release=self.release)

    def sample(self) -> None:
        """Every CPU figure of a release comes from its Prometheus."""

    def window_target_cores(self) -> list[float]:
        return []
