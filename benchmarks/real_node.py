"""How long the real node takes: up, a chart install until every container is ready, a swarm until its first RPS in
the in-cluster Prometheus. Needs root and scripts/install-node-tools (the images).

    ~/.cache/loadtest/venv/bin/python benchmarks/real_node.py      # ≈ 2 min

Prints figures only; nothing here asserts a time.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import urllib.parse
import urllib.request

from loadtest_shared import checks

from loadtest import paths
from loadtest.errors import RunFailed
from loadtest.runtime import tools
from loadtest.runtime.cluster import Cluster, pods

NAMESPACE = "bench"
VALUES = [paths.VALUES / "local.yaml", paths.HOME / "examples" / "real-node" / "values.yaml"]


def report(what: str, seconds: float) -> None:
    print(f"{what:<50} {seconds:7.1f} s", flush=True)


def until(done, timeout: float = 300) -> float:
    started = time.monotonic()
    while not done():
        if time.monotonic() - started > timeout:
            raise RunFailed(f"gave up after {timeout:.0f} s")
        time.sleep(0.5)
    return time.monotonic() - started


def all_ready(cluster: Cluster) -> bool:
    found = pods(cluster, NAMESPACE)
    return bool(found) and all(p["status"].get("phase") == "Running" and p["status"].get("containerStatuses")
                               and all(c["ready"] for c in p["status"]["containerStatuses"]) for p in found)


def first_rps(cluster: Cluster) -> bool:
    prometheus = [p for p in pods(cluster, NAMESPACE, "app.kubernetes.io/component=prometheus")
                  if p["status"].get("podIP")]
    query = urllib.parse.urlencode({"query": "sum(rate(locust_requests_total[30s])) > 0"})
    try:
        with urllib.request.urlopen(f"http://{prometheus[0]['status']['podIP']}:9090/api/v1/query?{query}",
                                    timeout=5) as response:
            return bool(json.load(response)["data"]["result"])
    except (OSError, IndexError):
        return False


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="loadtest-bench-node-") as state:
        cluster = Cluster(state)
        try:
            report("real node up (control plane, node, CoreDNS ready)",
                   until(lambda: cluster.start(timeout=240, real_node=True) or True))
            cluster.kubectl("create", "namespace", NAMESPACE)
            install = ["--kubeconfig", str(cluster.kubeconfig), "install", "lt", str(paths.CHART), "-n", NAMESPACE,
                       *[a for v in VALUES for a in ("-f", str(v))],
                       "--set", "haproxy.enabled=true", "--set", "locust.target=haproxy"]
            started = time.monotonic()
            tools.run("helm", *install, shown=3)
            until(lambda: all_ready(cluster))
            report("chart install -> all containers ready", time.monotonic() - started)
            upgrade = [*install[:2], "upgrade", "lt", str(paths.CHART), "-n", NAMESPACE, "--reuse-values",
                       "--set", "locust.mode=autostart", "--set", "locust.autostart.users=20",
                       "--set", "locust.autostart.spawnRate=20", "--set", "locust.autostart.runTime=120s"]
            started = time.monotonic()
            tools.run("helm", *upgrade, shown=3)
            until(lambda: first_rps(cluster))
            report("swarm start (helm upgrade) -> first RPS in Prometheus", time.monotonic() - started)
        except RunFailed as e:  # ClusterError too: the node's set-up (root, scripts/install-node-tools) says what
            print(f"real node benchmark: {e}", file=sys.stderr)
            return checks.RUN_FAILED
        finally:
            cluster.stop()
    return checks.PASSED


if __name__ == "__main__":
    sys.exit(main())
