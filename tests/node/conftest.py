"""The chart's pods on a real node: one local cluster with a real node (containerd, kubelet, kube-proxy, the CNI
bridge, CoreDNS) for the whole session, the images built by scripts/install-node-tools.

It runs in a pytest temp dir, like the cluster layer's, and needs root; one real node runs per machine, so a
developer's `loadtest cluster up --real-node` must be down first (the bridge is the node's).
"""
from __future__ import annotations

# Locust (gevent) patches ssl when it is first imported, which only works before anything imported ssl: a module of
# the session that reads Locust's own figures, collected after one that imported urllib3, would fail to import.
import locust  # noqa: F401  isort: skip

import base64
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest
import yaml
from helpers import wait_for

from loadtest import paths
from loadtest.runtime import prom
from loadtest.runtime.cluster import Cluster, ClusterError, pods
from loadtest.runtime.locustweb import LocustWeb

START_TIMEOUT_S = 240
READY_TIMEOUT_S = 240
# The real node's example values also set its short windows (scrape interval, rules window): see that file.
REAL_NODE = paths.HOME / "examples" / "real-node" / "values.yaml"
VALUES = [paths.VALUES / "local.yaml", REAL_NODE]
_MONITORING = yaml.safe_load(REAL_NODE.read_text())["monitoring"]
# The releases' rules window in seconds, and a PromQL range of it: a test's own rates look back as far as the rules'.
WINDOW_S = int(_MONITORING["rules"]["windowSeconds"])
WINDOW = f"[{WINDOW_S}s]"
SCRAPE_S = int(_MONITORING["prometheus"]["scrapeInterval"].rstrip("s"))


@pytest.fixture(scope="session")
def cluster(tmp_path_factory) -> Cluster:
    cluster = Cluster(tmp_path_factory.mktemp("node-cluster"))
    try:
        cluster.start(timeout=START_TIMEOUT_S, real_node=True)
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def wait_for_namespace_deletion() -> bool:
    # On a 2-CPU node the next test's pods fit only once the last test's are gone.
    return True


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test's report carries its namespace's pods and the Locust pods' last log lines: on a real node the
    why (a worker that never connected, a master that stopped the swarm) is in the logs, gone with the namespace."""
    outcome = yield
    report = outcome.get_result()
    cluster = item.funcargs.get("cluster")
    namespace = item.funcargs.get("namespace") or item.funcargs.get("module_namespace")
    if report.when != "call" or not report.failed or not isinstance(cluster, Cluster) or not namespace:
        return
    try:
        text = cluster.kubectl("get", "pods", "-n", namespace, "-o", "wide")
        for component in ("locust-master", "locust-worker"):
            text += f"\n--- {component}\n" + cluster.kubectl(
                "logs", "-n", namespace, "-l", f"app.kubernetes.io/component={component}", "--tail=40",
                "--prefix", "--all-containers", "--ignore-errors")
    except ClusterError as error:
        text = str(error)
    report.sections.append(("namespace at failure", text))


def install(helm, namespace: str, *sets: str, release: str = "lt") -> None:
    """helm install the local values with the real node's overlay, plus `sets` (--set a=b ...)."""
    files = [arg for f in VALUES for arg in ("-f", str(f))]
    helm("install", release, str(paths.CHART), "-n", namespace, *files, *sets)


def not_ready(cluster: Cluster, namespace: str) -> list[str]:
    """Pods of the namespace that are not Running with every container ready (by their real probes)."""
    waiting = []
    for pod in pods(cluster, namespace):
        if pod["metadata"].get("annotations", {}).get("helm.sh/hook"):
            continue
        statuses = pod["status"].get("containerStatuses", [])
        if pod["status"].get("phase") != "Running" or not statuses or not all(s["ready"] for s in statuses):
            states = [f"{s['name']}={next(iter(s.get('state', {})), '?')}" for s in statuses]
            waiting.append(f"{pod['metadata']['name']} {pod['status'].get('phase')} {' '.join(states)}")
    return waiting


def wait_ready(cluster: Cluster, namespace: str, timeout: float = READY_TIMEOUT_S) -> float:
    """Seconds until every pod of the namespace is Running and ready; fails with what is missing and the events."""
    started = time.monotonic()
    wait_for(f"every pod of {namespace} Running and ready",
             lambda: not_ready(cluster, namespace) if pods(cluster, namespace) else ["no pod yet"], timeout, every=1,
             until=lambda waiting: not waiting,
             detail=lambda: cluster.kubectl("get", "events", "-n", namespace, "--sort-by=.lastTimestamp")[-4000:])
    return time.monotonic() - started


def pod_ip(cluster: Cluster, namespace: str, component: str) -> str:
    """The address of the component's one Running pod: this machine reaches the node's pods directly."""
    running = [p for p in pods(cluster, namespace, f"app.kubernetes.io/component={component}")
               if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")]
    assert len(running) == 1, f"{component}: {len(running)} running pods"
    return running[0]["status"]["podIP"]


def master(cluster: Cluster, namespace: str, release: str = "lt") -> LocustWeb:
    """The master's web API at its pod's address, with the credentials of the Secret the chart made."""
    encoded = cluster.kubectl("get", "secret", "-n", namespace, f"{release}-locust-web-auth",
                              "-o", "jsonpath={.data.credentials}")
    return LocustWeb(f"http://{pod_ip(cluster, namespace, 'locust-master')}:8089",
                     base64.b64decode(encoded).decode())


def port_forwards(kubeconfig) -> list[psutil.Process]:
    """The kubectl port-forwards still running with this kubeconfig (a run leaves none behind)."""
    return [p for p in psutil.process_iter(["cmdline"])
            if "port-forward" in (p.info["cmdline"] or []) and str(kubeconfig) in p.info["cmdline"]]


def aggregated(web: LocustWeb) -> dict:
    """The master's Aggregated row: num_requests, num_failures, ..."""
    return next(s for s in web.status()["stats"] if s["name"] == "Aggregated")


def haproxy_served(cluster: Cluster, namespace: str) -> float:
    """What the HAProxy pod's backends counted (its own Prometheus endpoint)."""
    url = f"http://{pod_ip(cluster, namespace, 'haproxy')}:8404/metrics"
    with urllib.request.urlopen(url, timeout=10) as response:
        lines = response.read().decode().splitlines()
    return sum(float(line.rsplit(" ", 1)[1]) for line in lines
               if line.startswith('haproxy_backend_http_requests_total{proxy="be_http_'))


def container_processes(pod_uid: str, argument: str) -> list[psutil.Process]:
    """The processes of a pod's containers on this machine (the real node) with an argument that starts with
    `argument` (`--worker`, `--config.file`): those in its cgroup, named by its uid (`pod<uid>` under cgroupfs,
    `pod<uid with underscores>` under systemd). One that ends while looked at is left out."""
    names = (f"pod{pod_uid}", f"pod{pod_uid.replace('-', '_')}")
    found = []
    for process in psutil.process_iter():
        try:
            in_the_pod = any(name in Path(f"/proc/{process.pid}/cgroup").read_text() for name in names)
            if in_the_pod and any(arg.startswith(argument) for arg in process.cmdline()):
                found.append(process)
        except (OSError, psutil.Error):
            continue
    return found


def claim_folder(cluster: Cluster, namespace: str, folder: Path, release: str = "lt") -> str:
    """The PersistentVolume of the release's results claim (`locust.results.pvc`), a folder of this machine (the
    node's disk, owned by the pods' user): the real node has no volume provisioner. Returns its storage class, for
    `--set locust.results.pvc.storageClass=`; the volume outlives the namespace, so the caller deletes it (by that
    name)."""
    folder.mkdir()
    os.chown(folder, 1000, 1000)  # the pods' user (fsGroup does not apply to a hostPath volume)
    volume = f"{namespace}-results"
    cluster.apply([{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": volume},
                    "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                             "persistentVolumeReclaimPolicy": "Retain", "storageClassName": volume,
                             "hostPath": {"path": str(folder), "type": "Directory"},
                             "claimRef": {"namespace": namespace, "name": f"{release}-locust-results"}}}])
    return volume


def job_pods(cluster: Cluster, namespace: str, job: str) -> list[dict]:
    return pods(cluster, namespace, f"batch.kubernetes.io/job-name={job}")


def master_jobs(cluster: Cluster, namespace: str, release: str = "lt") -> list[dict]:
    """The release's master Jobs (`locust.mode: run`), the oldest first: `<release>-locust-master`, or one a
    scheduled run, `<release>-locust-master-<minute>`."""
    jobs = json.loads(cluster.kubectl("get", "jobs", "-n", namespace, "-o", "json"))["items"]
    return sorted((j for j in jobs if j["metadata"]["name"].startswith(f"{release}-locust-master")),
                  key=lambda j: j["metadata"]["creationTimestamp"])


def finished(job: dict) -> str | None:
    """"Complete" or "Failed" once the Job ended, else None."""
    for condition in job.get("status", {}).get("conditions", []):
        if condition["type"] in ("Complete", "Failed") and condition["status"] == "True":
            return condition["type"]
    return None


def loadtest_history(cluster: Cluster, namespace: str, cwd, *args: str,
                     release: str = "lt") -> subprocess.CompletedProcess:
    result = subprocess.run(
        [sys.executable, "-m", "loadtest", "history", "--release", release, "--namespace", namespace,
         "--kubeconfig", str(cluster.kubeconfig), *args], capture_output=True, text=True, timeout=300, cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(paths.HOME)}, stdin=subprocess.DEVNULL)
    print(result.stdout, result.stderr)
    return result


class Prometheus(prom.Prometheus):
    """The release's in-cluster Prometheus, reached at its pod's address."""

    def __init__(self, cluster: Cluster, namespace: str):
        super().__init__(f"http://{pod_ip(cluster, namespace, 'prometheus')}:9090")

    def value(self, promql: str) -> float | None:
        result = self.query(promql)
        return float(result[0]["value"][1]) if result else None

    def wait_for_data(self, promql: str, what: str, timeout: float = 90) -> list[dict]:
        """Poll until the query has a series; returns them (no NaN nor infinity), or fails naming `what`."""
        result = wait_for(f"{what}: data for {promql}", lambda: self.query(promql), timeout, every=3)
        assert all(s["value"][1] not in ("NaN", "+Inf", "-Inf") for s in result), (promql, result)
        return result

    def wait(self, promql: str, ok, timeout: float = 120) -> float:
        """Poll until ok(value) (value None: no series); returns the value, or fails naming the query."""
        return wait_for(promql, lambda: self.value(promql), timeout, every=2, until=ok,
                        ignoring=(prom.PrometheusError,))
