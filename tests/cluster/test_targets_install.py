"""The targets under test install and run under Pod Security "restricted" on their own node group."""
from __future__ import annotations

import json

import pytest
from scheduling import assert_all_running

from loadtest import paths
from loadtest.capacity import profiles
from loadtest.runtime.cluster import wait_for

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
    # The values file runs both targets: each has its budget.
    assert set(status) == {worker_budget, f"{RELEASE}-backend", f"{RELEASE}-haproxy", f"{RELEASE}-nginx-ingress"}
    assert status[worker_budget]["disruptionsAllowed"] == 0  # a drain waits rather than take a worker mid-run


def can(cluster, user: str, verb: str, resource: str, namespace: str, name: str = "", group: str = "") -> bool:
    """The API server's own answer (a SubjectAccessReview, as `kubectl auth can-i --as` asks): may `user` do it?"""
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
              "spec": {"user": user, "groups": ["system:serviceaccounts", f"system:serviceaccounts:{namespace}"],
                       "resourceAttributes": {"verb": verb, "group": group, "resource": resource,
                                              "namespace": namespace, "name": name}}}
    answer = json.loads(cluster.kubectl("create", "-f", "-", "-o", "json", input=json.dumps(review)))
    return answer["status"].get("allowed", False)


def test_the_ingress_controller_reads_only_its_tls_secret(cluster, node_group, namespace, helm):
    """After a real install, the API server's RBAC lets the NGINX Ingress Controller's ServiceAccount read no Secret
    of the release's namespace (the Locust web UI's password is one), and only its TLS Secret, by name, in the
    namespace the chart made for it. The controller itself does not run here (KWOK runs no containers): that its
    flags make it need nothing more is what its source says (charts/nginx/templates/rbac.yaml)."""
    node_group(PROFILE)
    helm("install", RELEASE, str(paths.CHART), "-n", namespace, "-f", str(paths.VALUES / PROFILE.file),
         *TARGET_SETS["nginx-tls"], "--wait", "--timeout", "120s")
    deployment = cluster.api_get(f"/apis/apps/v1/namespaces/{namespace}/deployments/{RELEASE}-nginx-ingress")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    args = dict(a.lstrip("-").split("=", 1) for a in container["args"])
    secret_namespace, tls_secret = args["wildcard-tls-secret"].split("/")
    # The namespace the chart made: <namespace>-<release>-nginx-tls, shortened with a hash past 63 characters.
    assert secret_namespace == args["watch-secret-namespace"] != namespace and len(secret_namespace) <= 63
    assert tls_secret == f"{RELEASE}-nginx-ingress-tls"
    assert args["default-server-tls-secret"] == args["wildcard-tls-secret"]
    labels = cluster.api_get(f"/api/v1/namespaces/{secret_namespace}")["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
    assert cluster.api_get(f"/api/v1/namespaces/{secret_namespace}/secrets/{tls_secret}")["type"] == "kubernetes.io/tls"
    assert cluster.api.exists(f"/api/v1/namespaces/{namespace}/secrets/{RELEASE}-locust-web-auth")
    controller = f"system:serviceaccount:{namespace}:{RELEASE}-nginx-ingress"
    # What it serves from, in the release's namespace: granted (the account is bound).
    assert can(cluster, controller, "list", "ingresses", namespace, group="networking.k8s.io")
    assert can(cluster, controller, "watch", "endpointslices", namespace, group="discovery.k8s.io")
    # No Secret of the release's namespace, by name or not.
    for verb, name in (("get", f"{RELEASE}-locust-web-auth"), ("get", tls_secret), ("get", ""), ("list", ""),
                       ("watch", "")):
        assert not can(cluster, controller, verb, "secrets", namespace, name), f"{verb} secrets {name}"
    # In its own namespace, its TLS Secret and nothing else.
    assert can(cluster, controller, "get", "secrets", secret_namespace, tls_secret)
    for verb, name in (("get", "another"), ("list", ""), ("watch", ""), ("update", tls_secret)):
        assert not can(cluster, controller, verb, "secrets", secret_namespace, name), f"{verb} secrets {name}"
    # `helm uninstall` takes the namespace and its Secret with it.
    helm("uninstall", RELEASE, "-n", namespace, "--wait", "--timeout", "60s")
    wait_for(f"namespace {secret_namespace} to go",
             lambda: not cluster.api.exists(f"/api/v1/namespaces/{secret_namespace}"), 60,
             lambda: json.dumps(cluster.api_get(f"/api/v1/namespaces/{secret_namespace}").get("status")))
