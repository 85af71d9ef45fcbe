"""The targets under test install and run under Pod Security "restricted" on their own node group."""
from __future__ import annotations

import pytest

from loadtest import paths, profiles
from loadtest.runtime.cluster import wait_for
from scheduling import assert_all_running

RELEASE = "lt"
PROFILE = profiles.by_file("c5-xlarge.yaml")

TARGET_SETS = {
    "nginx-tls": ("--set", "nginx.enabled=true", "--set", "locust.target=nginx", "--set", "locust.https=true"),
    "haproxy-reencrypt": ("--set", "haproxy.enabled=true", "--set", "haproxy.tls.mode=reencrypt",
                          "--set", "backend.tls.enabled=true", "--set", "locust.target=haproxy",
                          "--set", "locust.scenario=tls_handshake"),
    "haproxy-passthrough-close": ("--set", "haproxy.enabled=true", "--set", "haproxy.tls.mode=passthrough",
                                  "--set", "haproxy.keepAlive=false", "--set", "backend.tls.enabled=true",
                                  "--set", "locust.target=haproxy", "--set", "locust.scenario=http_close"),
}


@pytest.mark.parametrize("targets", TARGET_SETS)
def test_targets_run_restricted_and_off_the_generator_nodes(targets, cluster, node_group, namespace, helm):
    generator_nodes = set(node_group(PROFILE))
    helm("install", RELEASE, str(paths.CHART), "-n", namespace, "-f", str(paths.VALUES / PROFILE.file),
         *TARGET_SETS[targets], "--wait", "--timeout", "120s")
    running = assert_all_running(cluster, namespace, f"app.kubernetes.io/instance={RELEASE}")
    by_name = {}
    for pod in running:
        by_name.setdefault(pod["metadata"]["labels"]["app.kubernetes.io/name"], set()).add(pod["spec"]["nodeName"])
    target = targets.split("-")[0]
    assert target in by_name, f"no {target} pod running: {sorted(by_name)}"
    assert not by_name[target] & generator_nodes, f"{target} shares a node with the Locust workers"
    helm("test", RELEASE, "-n", namespace, "--timeout", "60s")


def test_security_objects_are_accepted_and_select_the_release_pods(cluster, node_group, namespace, helm):
    """The NetworkPolicies, the workers' own Service and the PodDisruptionBudgets pass the real API server's
    validation and select the pods they are meant for. No enforcing CNI runs here (KWOK nodes have no network), so
    what the policies admit is checked as objects, not as packets."""
    node_group(PROFILE)
    helm("install", RELEASE, str(paths.CHART), "-n", namespace, "-f", str(paths.VALUES / PROFILE.file),
         *TARGET_SETS["haproxy-reencrypt"], "--wait", "--timeout", "120s")
    pods = assert_all_running(cluster, namespace, f"app.kubernetes.io/instance={RELEASE}")
    components = {p["metadata"]["labels"]["app.kubernetes.io/component"] for p in pods}
    policies = cluster.api_get(f"/apis/networking.k8s.io/v1/namespaces/{namespace}/networkpolicies")["items"]
    by_name = {p["metadata"]["name"]: p["spec"] for p in policies}
    assert by_name[f"{RELEASE}-default-deny"]["podSelector"] == {"matchLabels": {"app.kubernetes.io/instance": RELEASE}}
    selected = {spec["podSelector"]["matchLabels"].get("app.kubernetes.io/component") for spec in by_name.values()}
    assert {"locust-master", "backend", "haproxy", "prometheus", "kube-state-metrics"} <= selected <= components | {None}
    master = by_name[f"{RELEASE}-locust-master"]["ingress"]
    (workers,) = [rule for rule in master if rule["ports"] == [{"protocol": "TCP", "port": "workers"}]]
    assert workers["from"] == [{"podSelector": {"matchLabels": {"app.kubernetes.io/instance": RELEASE,
                                                                "app.kubernetes.io/component": "locust-worker"}}}]
    service = cluster.api_get(f"/api/v1/namespaces/{namespace}/services/{RELEASE}-locust-workers")["spec"]
    assert service["type"] == "ClusterIP" and [p["port"] for p in service["ports"]] == [5557]
    def budgets() -> dict[str, dict]:
        found = cluster.api_get(f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets")["items"]
        return {b["metadata"]["name"]: b.get("status", {}) for b in found}

    worker_budget = f"{RELEASE}-locust-worker"
    # The disruption controller fills in a budget's status a moment after its pods run.
    wait_for("the workers' PodDisruptionBudget to count them",
             lambda: budgets()[worker_budget].get("expectedPods") == PROFILE.plan.replicas, 30,
             lambda: str(budgets()[worker_budget]))
    status = budgets()
    assert set(status) == {worker_budget, f"{RELEASE}-backend", f"{RELEASE}-haproxy"}
    assert status[worker_budget]["disruptionsAllowed"] == 0  # a drain waits rather than take a worker mid-run
