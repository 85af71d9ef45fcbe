"""A sweep's steps on a release: `helm upgrade --reuse-values --wait` against the real API server and scheduler.

KWOK nodes run no containers, so there is no Locust or Prometheus to read here (the dataplane layer runs the sweep
itself); this proves that a step changes what it says (worker replicas, the target's CPUs and its config), that the
new pods are scheduled and running before the step goes on, and that the other values survive.
"""
from __future__ import annotations

import json

import pytest
from scheduling import assert_all_running

from loadtest import paths
from loadtest.capacity import profiles
from loadtest.runtime import release, sweep_cluster
from loadtest.workload import sweep

RELEASE = "lt"
PROFILE = profiles.by_file("c5-xlarge.yaml")
# The values file runs both targets on one c5n.2xlarge; its header says a target-cpus step (the new pod beside the
# old one) has room there only with the other target off.
HAPROXY = ("--set", "haproxy.enabled=true", "--set", "locust.target=haproxy", "--set", "nginx.enabled=false")


def driver(cluster, namespace, kind: str) -> sweep_cluster.ClusterDriver:
    spec = sweep.Spec(kind, [1, 2], warmup_s=15, hold_s=180, users_per_worker=50, spawn_rate=0)
    return sweep_cluster.ClusterDriver(release.Release(RELEASE, namespace, cluster.kubeconfig), paths.CHART, None,
                                       None, spec=spec, progress=lambda line: None)


def deployment(cluster, namespace, component) -> dict:
    return json.loads(cluster.kubectl("get", "deployment", "-n", namespace, "-o", "json", "-l",
                                      f"app.kubernetes.io/component={component}"))["items"][0]


def test_steps_upgrade_workers_and_target_cpus(cluster, node_group, namespace, helm):
    node_group(PROFILE)
    helm("install", RELEASE, str(paths.CHART), "-n", namespace, "-f", str(paths.VALUES / PROFILE.file), *HAPROXY,
         "--set", "locust.worker.replicas=2", "--wait", "--timeout", "120s")
    d = driver(cluster, namespace, "target-cpus")
    assert (d.target, d.workers, d.target_cpus) == ("haproxy", 2, 1)
    assert d.conditions()["node types"] == f"locust: {PROFILE.node_type}, haproxy: c5n.2xlarge"

    d.set_target_cpus(2)
    haproxy = deployment(cluster, namespace, "haproxy")
    container = haproxy["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"]["cpu"] == "2"
    config = json.loads(cluster.kubectl("get", "configmap", "-n", namespace, f"{RELEASE}-haproxy", "-o", "json"))
    assert "    nbthread 2\n" in config["data"]["haproxy.cfg"]
    assert haproxy["status"].get("updatedReplicas") == haproxy["status"].get("readyReplicas") == 1

    d.upgrade({"locust.worker.replicas": 4})
    workers = deployment(cluster, namespace, "locust-worker")
    assert workers["spec"]["replicas"] == 4 and workers["status"].get("readyReplicas") == 4
    assert_all_running(cluster, namespace, f"app.kubernetes.io/instance={RELEASE}")
    # --reuse-values: the earlier step and the install's values are still there.
    assert d.values["haproxy"]["threads"] == 2 and d.values["locust"]["nodeType"] == PROFILE.node_type


def test_a_target_cpu_sweep_needs_an_nginx_or_haproxy_target(cluster, node_group, namespace, helm):
    node_group(PROFILE)
    # The values file points Locust at nginx; the backend alone has no CPUs a sweep steps.
    helm("install", RELEASE, str(paths.CHART), "-n", namespace, "-f", str(paths.VALUES / PROFILE.file),
         "--set", "locust.target=backend", "--wait", "--timeout", "120s")
    with pytest.raises(sweep.SweepError, match="needs locust.target nginx or haproxy"):
        driver(cluster, namespace, "target-cpus")
    with pytest.raises(release.ReleaseError, match="no release 'missing' in namespace"):
        sweep_cluster.ClusterDriver(release.Release("missing", namespace, cluster.kubeconfig), paths.CHART, None,
                                    None, spec=sweep.Spec("users", [1], 15, 180, 50, 0))


def test_the_sweep_sets_back_the_values_it_changed_when_it_ends(cluster, node_group, namespace, helm):
    node_group(PROFILE)
    helm("install", RELEASE, str(paths.CHART), "-n", namespace, "-f", str(paths.VALUES / PROFILE.file), *HAPROXY,
         "--set", "locust.worker.replicas=2", "--wait", "--timeout", "120s")
    with pytest.raises(KeyboardInterrupt), driver(cluster, namespace, "target-cpus") as d:
        d.set_target_cpus(2)
        d.set_target_cpus(2)  # a second step remembers the value from before the first
        raise KeyboardInterrupt  # Ctrl-C in the middle of the sweep
    values = json.loads(helm("get", "values", RELEASE, "-n", namespace, "--all", "-o", "json"))
    assert values["haproxy"]["threads"] == 1 and values["locust"]["worker"]["replicas"] == 2
    container = deployment(cluster, namespace, "haproxy")["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"]["cpu"] == "1"


def test_a_workers_sweep_against_an_autostart_release_is_refused_with_the_reason(cluster, node_group, namespace,
                                                                                 helm):
    node_group(PROFILE)
    helm("install", RELEASE, str(paths.CHART), "-n", namespace, "-f", str(paths.VALUES / PROFILE.file),
         "--set", "locust.mode=autostart", "--wait", "--timeout", "120s")
    with pytest.raises(sweep.SweepError, match="each workers step would recreate the master and reset its stat"):
        driver(cluster, namespace, "workers")
