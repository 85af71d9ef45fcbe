"""How long the local cluster layer takes: tool builds, control-plane start, a chart install, 1,000 pods.

    ~/.cache/loadtest/venv/bin/python benchmarks/cluster.py           # all but builds (≈ 1 min)
    ~/.cache/loadtest/venv/bin/python benchmarks/cluster.py --relink  # + rebuild kube binaries, warm cache
    ~/.cache/loadtest/venv/bin/python benchmarks/cluster.py --cold    # + build them, empty Go cache (≈ 6 min)

Prints figures only; nothing here asserts a time. Without --cold the cold build figure is the last one
scripts/install-cluster-tools recorded, which on a fresh machine is a cold build.
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from loadtest import paths
from loadtest.capacity import profiles
from loadtest.runtime import cluster as localcluster
from loadtest.runtime import tools

INSTALL_TOOLS = paths.HOME / "scripts" / "install-cluster-tools"
INSTALL_PROFILE = "c5-4xlarge.yaml"
MANY_NODES, MANY_PODS, MANY_PODS_NODE_TYPE = 100, 1000, "c5.4xlarge"


def report(what: str, seconds: float, note: str = "") -> None:
    print(f"{what:<60} {seconds:7.1f} s{'  ' + note if note else ''}", flush=True)


def timed(fn) -> float:
    started = time.monotonic()
    fn()
    return time.monotonic() - started


def install_tools(*args: str, env: dict | None = None) -> None:
    subprocess.run(["bash", str(INSTALL_TOOLS), *args], check=True, env=env, stdout=subprocess.DEVNULL)


def bench_builds(relink: bool, cold: bool) -> None:
    if cold:
        with tempfile.TemporaryDirectory(prefix="gocache-") as gocache:
            seconds = timed(lambda: install_tools("--rebuild", env={**os.environ, "GOCACHE": gocache}))
        report("kube binaries: cold build (empty GOCACHE, modules downloaded)", seconds)
    else:
        recorded = paths.BIN / ".k8s.build-seconds"
        if recorded.exists():
            report("kube binaries: last build by install-cluster-tools", float(recorded.read_text()),
                   "(cold on a fresh machine; --cold to measure)")
    if relink:
        report("kube binaries: rebuild with warm GOCACHE", timed(lambda: install_tools("--rebuild")))
    report("install-cluster-tools, everything up to date", timed(install_tools))


def bench_install(cluster: localcluster.Cluster) -> None:
    profile = profiles.by_file(INSTALL_PROFILE)
    report(f"node group for {INSTALL_PROFILE} ({profile.nodes} nodes + add-ons) ready",
           timed(lambda: localcluster.use_node_group(cluster, profile)))
    cluster.kubectl("create", "namespace", "bench-install")
    helm = [tools.find("helm"), "--kubeconfig", str(cluster.kubeconfig)]

    def install() -> None:
        # --wait: every workload the file turns on (Locust, backend, targets, monitoring) ready, however many.
        subprocess.run([*helm, "install", "lt", str(paths.CHART), "-n", "bench-install", "--wait", "--timeout", "5m",
                        "-f", str(paths.VALUES / INSTALL_PROFILE)],
                       check=True, stdout=subprocess.DEVNULL)

    report(f"helm install --wait {INSTALL_PROFILE} -> all workloads ready", timed(install))
    subprocess.run([*helm, "uninstall", "lt", "-n", "bench-install", "--wait"], check=True, stdout=subprocess.DEVNULL)


def bench_many_pods(cluster: localcluster.Cluster) -> None:
    localcluster.delete_nodes(cluster)
    localcluster.delete_addons(cluster)
    profile = localcluster.profile_for(MANY_PODS_NODE_TYPE, MANY_NODES)
    started = time.monotonic()
    names = localcluster.create_nodes(cluster, profile.shape, MANY_NODES, "bench")
    localcluster.wait_nodes_ready(cluster, names)
    report(f"{MANY_NODES} x {MANY_PODS_NODE_TYPE} nodes created -> Ready", time.monotonic() - started)
    localcluster.install_addons(cluster, profile)
    report(f"add-ons on {MANY_NODES} nodes ({len(profile.daemonsets) * MANY_NODES} DaemonSet pods) ready",
           timed(lambda: localcluster.wait_addons_ready(cluster, profile, names, timeout=300)))

    cluster.kubectl("create", "namespace", "bench-pods")
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "workers", "namespace": "bench-pods"},
        "spec": {
            "replicas": MANY_PODS,
            "selector": {"matchLabels": {"app": "workers"}},
            "template": {"metadata": {"labels": {"app": "workers"}}, "spec": {"containers": [{
                "name": "worker", "image": localcluster.PAUSE_IMAGE,
                "resources": {"requests": {"cpu": "1000m", "memory": "512Mi"},
                              "limits": {"cpu": "1000m", "memory": "512Mi"}}}]}},
        },
    }
    started = time.monotonic()
    cluster.apply([deployment])
    scheduled_at = None
    while True:
        pods = localcluster.pods(cluster, "bench-pods", "app=workers")
        scheduled = sum(1 for p in pods if p["spec"].get("nodeName"))
        if scheduled_at is None and scheduled == MANY_PODS:
            scheduled_at = time.monotonic()
        if scheduled_at and all(p["status"].get("phase") == "Running" for p in pods):
            break
        if time.monotonic() - started > 300:
            raise localcluster.ClusterError(f"only {scheduled} of {MANY_PODS} pods scheduled after 300 s")
        time.sleep(0.5)
    report(f"{MANY_PODS} worker pods created -> all bound to nodes", scheduled_at - started)
    report(f"{MANY_PODS} worker pods created -> all Running", time.monotonic() - started)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--relink", action="store_true", help="time a rebuild of the kube binaries (warm cache)")
    parser.add_argument("--cold", action="store_true", help="time a build with an empty Go cache (≈ 6 min)")
    args = parser.parse_args()
    # A plain SIGTERM would skip the finally below and leave the cluster's processes running.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    bench_builds(args.relink, args.cold)
    with tempfile.TemporaryDirectory(prefix="loadtest-cluster-") as state:
        cluster = localcluster.Cluster(Path(state))
        try:
            report("control plane start -> all components ready", timed(lambda: cluster.start()))
            bench_install(cluster)
            bench_many_pods(cluster)
        finally:
            cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
