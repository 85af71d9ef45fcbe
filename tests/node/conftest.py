"""The chart's pods on a real node: one local cluster with a real node (containerd, kubelet, kube-proxy, the CNI
bridge, CoreDNS) for the whole session, the images built by scripts/install-node-tools.

It runs in a pytest temp dir, like the cluster layer's, and needs root; one real node runs per machine, so a
developer's `loadtest cluster up --real-node` must be down first (the bridge is the node's).
"""
from __future__ import annotations

import hashlib
import json
import re
import subprocess
import time

import pytest

from loadtest import paths
from loadtest.runtime import tools
from loadtest.runtime.cluster import Cluster, ClusterError, pods

START_TIMEOUT_S = 240
READY_TIMEOUT_S = 240
VALUES = [paths.VALUES / "local.yaml", paths.HOME / "examples" / "real-node" / "values.yaml"]


@pytest.fixture(scope="session")
def node_cluster(tmp_path_factory) -> Cluster:
    cluster = Cluster(tmp_path_factory.mktemp("node-cluster"))
    try:
        cluster.start(timeout=START_TIMEOUT_S, real_node=True)
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def namespace(node_cluster, request) -> str:
    """A fresh namespace named after the test, enforcing the restricted Pod Security Standard, as in production."""
    slug = re.sub(r"[^a-z0-9-]+", "-", request.node.name.lower()).strip("-")
    name = f"{slug[:54].rstrip('-')}-{hashlib.sha1(slug.encode()).hexdigest()[:8]}"
    node_cluster.kubectl("create", "namespace", name)
    node_cluster.kubectl("label", "namespace", name, "pod-security.kubernetes.io/enforce=restricted")
    yield name
    node_cluster.kubectl("delete", "namespace", name, "--wait=false")


def helm(cluster: Cluster, *args: str, timeout: float = 300) -> str:
    result = subprocess.run([tools.find("helm"), "--kubeconfig", str(cluster.kubeconfig), *args],
                            capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise AssertionError(f"helm {' '.join(args[:3])} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return result.stdout


def install(cluster: Cluster, namespace: str, *sets: str, release: str = "lt") -> None:
    """helm install the local values with the real node's overlay, plus `sets` (--set a=b ...)."""
    files = [arg for f in VALUES for arg in ("-f", str(f))]
    helm(cluster, "install", release, str(paths.CHART), "-n", namespace, *files, *sets)


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
    while time.monotonic() - started < timeout:
        if pods(cluster, namespace) and not not_ready(cluster, namespace):
            return time.monotonic() - started
        time.sleep(1)
    events = cluster.kubectl("get", "events", "-n", namespace, "--sort-by=.lastTimestamp")
    raise ClusterError(f"not ready after {timeout:.0f} s: {not_ready(cluster, namespace)}\n{events[-4000:]}")


def pod_logs(cluster: Cluster, namespace: str, selector: str) -> str:
    names = [p["metadata"]["name"] for p in pods(cluster, namespace, selector)]
    return "\n".join(cluster.kubectl("logs", "-n", namespace, name, "--all-containers", "--tail=50")
                     for name in names)


def as_json(text: str) -> dict:
    return json.loads(text)
