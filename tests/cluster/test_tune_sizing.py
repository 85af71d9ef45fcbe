"""`loadtest tune`'s reading of a cluster, on the real API server and scheduler with EC2-shaped KWOK node groups:
the worker nodes, their DaemonSets, CoreDNS and the master as tune finds them; the replica count it proposes for
thin workers equals `loadtest size` and schedules with nothing Pending; a group too small for the workers asked is
told to add nodes, priced from the catalog.

The steady window is the one thing given here: KWOK pods run no process, so no Prometheus records one. The node
layer (tests/node/test_tune.py) reads it from a real run.
"""
from __future__ import annotations

import re
import subprocess
import sys

import pytest
from scheduling import assert_all_running, wait_scheduling_settled

from loadtest_shared import verdict

from loadtest import paths, units
from loadtest.capacity import catalog, profiles
from loadtest.judging import tuning
from loadtest.runtime import tune
from loadtest.runtime.release import Release

RELEASE = "lt"
SELECTOR = f"app.kubernetes.io/instance={RELEASE}"
# What tune's Prometheus shows of thin workers: at their 100m quota, throttled in most CFS periods.
THIN_WINDOW = verdict.Window(samples=4, generator_share=1.0, target_share=0.0, busiest_worker=0.99,
                             target_cpu=0.2, worker_throttling=0.85)


def loadtest_size(node_type: str, nodes: int) -> int:
    """The workers `loadtest size` prints for the group, as a user reads them."""
    out = subprocess.run([sys.executable, "-m", "loadtest", "size", "--node-type", node_type, "--nodes", str(nodes)],
                         capture_output=True, text=True, check=True).stdout
    return int(re.match(rf"{nodes} x {re.escape(node_type)}: (\d+) workers at 1000m", out).group(1))


def read(cluster, namespace: str, window: verdict.Window | None) -> tuning.Snapshot:
    release = Release(RELEASE, namespace, cluster.kubeconfig)
    worker = release.labelled("deployment", "locust-worker")
    values = release.values()["locust"]
    return tuning.Snapshot(RELEASE, "interactive", units.parse_cpu_m(values["worker"]["cpu"]), 512,
                           int(worker["spec"]["replicas"]), tune.pending_workers(release), 500, 230.0, 0.0, 40.0,
                           window, tune.node_group(release, worker))


@pytest.mark.parametrize("values_file", ["c5-xlarge.yaml", "c5-4xlarge.yaml"])
def test_thin_workers_get_the_count_loadtest_size_gives_and_it_schedules(values_file, cluster, node_group, namespace,
                                                                          helm):
    profile = profiles.by_file(values_file)
    node_group(profile)
    values = str(paths.VALUES / values_file)
    helm("install", RELEASE, str(paths.CHART), "-n", namespace, "-f", values, "--set", "locust.worker.cpu=100m",
         "--set", "locust.worker.replicas=5", "--wait", "--timeout", "120s")

    snapshot = read(cluster, namespace, THIN_WINDOW)
    group = snapshot.group
    assert (group.node_type, group.nodes) == (profile.node_type, profile.nodes)
    assert {d.name for d in group.daemonsets} == {"aws-node", "kube-proxy", "cloudwatch-agent", "fluentd"}
    assert group.master.cpu_m == 200
    advice = tuning.advise(snapshot)
    print(advice.summary, *advice.figures, sep="\n  ")
    size = loadtest_size(profile.node_type, profile.nodes)
    assert advice.diagnosis == tuning.WHOLE_CORE
    assert advice.changes == {"locust.worker.cpu": "1000m", "locust.worker.replicas": str(size)}

    helm(*tuning.upgrade_command(RELEASE, namespace, str(paths.CHART), advice.changes)[1:], "--wait",
         "--timeout", "120s")
    settled = wait_scheduling_settled(cluster, namespace, SELECTOR)
    assert_all_running(cluster, namespace, SELECTOR)
    workers = [p for p in settled if p["metadata"]["labels"]["app.kubernetes.io/component"] == "locust-worker"]
    assert len(workers) == size
    after = read(cluster, namespace, None)
    assert after.pending == 0 and after.replicas == size


def test_a_group_too_small_for_the_workers_is_told_the_nodes_to_add_and_their_cost(cluster, node_group, namespace,
                                                                                   helm):
    profile = profiles.by_file("c5-xlarge.yaml")
    node_group(profile)
    fit = profile.plan.replicas
    helm("install", RELEASE, str(paths.CHART), "-n", namespace, "-f", str(paths.VALUES / profile.file),
         "--set", f"locust.worker.replicas={fit + 2}")
    wait_scheduling_settled(cluster, namespace, SELECTOR)

    snapshot = read(cluster, namespace, THIN_WINDOW)
    assert snapshot.pending == 2
    advice = tuning.advise(snapshot)
    print(advice.summary)
    price = catalog.get(profile.node_type).price_usd_hour
    assert advice.diagnosis == tuning.WORKERS_PENDING
    assert advice.changes == {"locust.worker.replicas": str(fit)}
    assert (advice.nodes_to_add, advice.usd_per_hour) == (1, price)
    assert f"add 1 node(s) to the worker node group, 3 in all (+{price:.3f} USD/h" in advice.summary


@pytest.mark.parametrize("sets, says", [
    (("--set", "monitoring.enabled=false"), "has monitoring.enabled false: tune reads the steady window from the "
                                            "release's Prometheus"),
    (("--set", "locust.mode=run", "--set", "locust.autostart.runTime=1m"), "runs locust.mode run: its master and "
                                                                           "workers are Jobs"),
], ids=["no-monitoring", "mode-run"])
def test_a_release_tune_cannot_read_or_change_is_refused_naming_the_fix(sets, says, cluster, node_group, namespace,
                                                                       helm):
    profile = profiles.by_file("c5-xlarge.yaml")
    node_group(profile)
    helm("install", RELEASE, str(paths.CHART), "-n", namespace, "-f", str(paths.VALUES / profile.file), *sets)
    revision = helm("history", RELEASE, "-n", namespace, "-o", "json")
    result = subprocess.run([sys.executable, "-m", "loadtest", "tune", "--release", RELEASE, "--namespace", namespace,
                             "--kubeconfig", str(cluster.kubeconfig), "--apply", "--yes"],
                            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert result.returncode == 2, result.stdout + result.stderr
    assert says in result.stderr and "Traceback" not in result.stderr
    assert helm("history", RELEASE, "-n", namespace, "-o", "json") == revision
