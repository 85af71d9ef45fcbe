"""Secure and hard to misuse by default: the objects that decide who may start a load and what a fault costs, and
the values that cannot work, refused with the value to change."""
from __future__ import annotations

import pytest
from helpers import manifests

RELEASE = "lt"
MONITORING = ("--set", "monitoring.enabled=true")
HAPROXY = ("--set", "haproxy.enabled=true", "--set", "locust.target=haproxy")
NGINX = ("--set", "nginx.enabled=true", "--set", "locust.target=nginx")
NAMESPACE = "loadtest"  # conftest.NAMESPACE

# id: (helm arguments, what the refusal must say)
REFUSED = {
    "routes-differ": ([*HAPROXY, "--set", "haproxy.routes=3"],
                      "locust.routes (1) and haproxy.routes (3) differ"),
    "master-request-above-limit": (["--set", "locust.master.resources.requests.cpu=1500m"],
                                   "locust.master.resources.requests.cpu 1500m is above limits.cpu 1"),
    "master-memory-request-above-limit": (["--set", "locust.master.resources.requests.memory=1Gi"],
                                          "locust.master.resources.requests.memory 1Gi is above limits.memory 512Mi"),
    "backend-request-above-limit": (["--set", "backend.resources.requests.memory=1G"],
                                    "backend.resources.requests.memory 1G is above limits.memory 128Mi"),
    "prometheus-request-above-limit": ([*MONITORING, "--set", "monitoring.prometheus.resources.requests.cpu=8"],
                                       "monitoring.prometheus.resources.requests.cpu 8 is above limits.cpu"),
    "test-main-without-files": (["--set", "locust.test.main=shop"],
                                "locust.test.main \"shop\" names a module of your own test, but neither"),
    "autostart-without-workers": (["--set", "locust.mode=autostart", "--set", "locust.worker.replicas=0"],
                                  "locust.mode autostart with locust.worker.replicas 0"),
    "no-host-no-backend": (["--set", "backend.enabled=false"],
                           "locust.target backend with backend.enabled false: nothing to load"),
    # Who may start a load: a UI outside the cluster needs its password.
    "load-balancer-ui-without-auth": (["--set", "locust.master.service.type=LoadBalancer",
                                       "--set", "locust.webAuth.enabled=false"],
                                      "locust.master.service.type LoadBalancer with locust.webAuth.enabled false"),
    "node-port-ui-without-auth": (["--set", "locust.master.service.type=NodePort",
                                   "--set", "locust.webAuth.enabled=false"],
                                  "locust.master.service.type NodePort with locust.webAuth.enabled false"),
    "haproxy-without-backend": (["--set", "haproxy.enabled=true", "--set", "backend.enabled=false",
                                 "--set", "locust.host=http://198.18.0.1"], "haproxy.upstream.http=<host:port>"),
    "haproxy-ports-clash": (["--set", "haproxy.enabled=true", "--set", "haproxy.ports.metrics=8443"],
                            "haproxy.ports.https and haproxy.ports.metrics are both 8443"),
    "nginx-ports-clash": (["--set", "nginx.enabled=true", "--set", "nginx.ports.status=8081"],
                          "are both 8081: each listener needs its own port"),
    "backend-ports-clash": (["--set", "backend.tls.enabled=true", "--set", "backend.tls.port=8080"],
                            "backend.port and backend.tls.port are both 8080"),
    "nginx-secrets-in-the-release-namespace": ([*NGINX, "--set", "nginx.tls.secretNamespace=loadtest"],
                                               "nginx.tls.secretNamespace loadtest is the release's namespace"),
    "nginx-existing-secret-without-its-namespace": ([*NGINX, "--set", "nginx.tls.existingSecret=my-cert"],
                                                    "nginx.tls.existingSecret my-cert needs nginx.tls.secretNamespace"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_values_that_cannot_work_are_refused_naming_the_fix(helm, case):
    helm.assert_refused(*REFUSED[case])


def test_requests_equal_to_limits_in_other_units_render(helm):
    # 0.5Gi is the limit's 512Mi (a memory takes a unit: a bare 536870912 is refused with a bare 512, #40).
    assert helm.template("--set", "locust.master.resources.requests.memory=0.5Gi",
                         "--set", "locust.master.resources.requests.cpu=1000m").returncode == 0


def test_matching_routes_render(helm):
    assert helm.template(*HAPROXY, "--set", "haproxy.routes=3", "--set", "locust.routes=3").returncode == 0


def policies(rendered) -> dict[str, dict]:
    return {p["metadata"]["name"]: p["spec"] for p in rendered.of_kind("NetworkPolicy")}


def peers(rule) -> set[str]:
    return {p["podSelector"]["matchLabels"]["app.kubernetes.io/component"] for p in rule.get("from", [])
            if "podSelector" in p and "matchLabels" in p["podSelector"]}


def test_every_release_pod_denies_ingress_but_what_a_test_needs(helm):
    rendered = helm.render(None, *MONITORING, *HAPROXY)
    found = policies(rendered)
    assert found[f"{RELEASE}-default-deny"] == {"podSelector": {"matchLabels": {"app.kubernetes.io/instance": RELEASE}},
                                                "policyTypes": ["Ingress"]}
    master = {rule["ports"][0]["port"]: peers(rule) for rule in found[f"{RELEASE}-locust-master"]["ingress"]}
    assert master == {"workers": {"locust-worker"}, "web": {"test-locust"}, "metrics": {"prometheus"}}
    haproxy = {rule["ports"][0]["port"]: peers(rule) for rule in found[f"{RELEASE}-haproxy"]["ingress"]}
    assert haproxy == {"http": {"locust-worker", "test-locust"}, "metrics": {"prometheus"}}
    backend = {rule["ports"][0]["port"]: peers(rule) for rule in found[f"{RELEASE}-backend"]["ingress"]}
    assert backend["http"] == {"locust-worker", "test-locust", "test-backend", "nginx-ingress", "haproxy"}
    assert peers(found[f"{RELEASE}-prometheus"]["ingress"][0]) == {"grafana"}
    assert peers(found[f"{RELEASE}-kube-state-metrics"]["ingress"][0]) == {"prometheus"}
    assert f"{RELEASE}-grafana" not in found  # port-forward only
    # A judged run's master writes its series.csv from Prometheus: admitted in mode run, and in no other.
    judged = policies(helm.render(None, *MONITORING, "--set", "locust.mode=run", "--set", "locust.autostart.runTime=1m"))
    assert peers(judged[f"{RELEASE}-prometheus"]["ingress"][0]) == {"grafana", "locust-master"}


def test_an_exposed_ui_admits_only_its_source_ranges(helm):
    rendered = helm.render(None, "--set", "locust.master.service.type=LoadBalancer",
                           "--set", "locust.master.service.loadBalancerSourceRanges={203.0.113.0/24,198.18.0.0/15}")
    service = rendered.get("Service", f"{RELEASE}-locust-master")["spec"]
    assert service["loadBalancerSourceRanges"] == ["203.0.113.0/24", "198.18.0.0/15"]
    assert [p["name"] for p in service["ports"]] == ["web"]
    web = [rule for rule in policies(rendered)[f"{RELEASE}-locust-master"]["ingress"]
           if rule["ports"] == [{"port": "web"}] and "ipBlock" in str(rule)]
    assert web == [{"ports": [{"port": "web"}], "from": [{"ipBlock": {"cidr": "203.0.113.0/24"}},
                                                           {"ipBlock": {"cidr": "198.18.0.0/15"}}]}]


def test_operator_mode_admits_the_named_scrapers(helm):
    rendered = helm.render(None, *MONITORING, "--set", "monitoring.mode=operator")
    master = policies(rendered)[f"{RELEASE}-locust-master"]["ingress"]
    (metrics,) = [rule for rule in master if rule["ports"] == [{"port": "metrics"}]]
    assert metrics["from"] == [{"namespaceSelector": {},
                                "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}}]


def test_network_policies_can_be_switched_off(helm):
    assert helm.render(None, "--set", "networkPolicy.enabled=false").of_kind("NetworkPolicy") == []


def test_disruption_budgets_hold_the_workers_and_the_target(helm):
    rendered = helm.render(None, *HAPROXY)
    budgets = {b["metadata"]["name"]: b["spec"] for b in rendered.of_kind("PodDisruptionBudget")}
    assert set(budgets) == {f"{RELEASE}-locust-worker", f"{RELEASE}-backend", f"{RELEASE}-haproxy"}
    assert all(b["maxUnavailable"] == 0 for b in budgets.values())
    assert budgets[f"{RELEASE}-locust-worker"]["selector"]["matchLabels"]["app.kubernetes.io/component"] == \
        "locust-worker"
    assert helm.render(None, "--set", "disruptionBudgets.enabled=false").of_kind("PodDisruptionBudget") == []


def test_long_release_names_never_collide(helm):
    release = "a-release-name-as-long-as-helm-allows-fifty-three-chr"
    assert len(release) == 53
    result = helm.run("template", release, "charts/loadtest", *MONITORING, "--set", "nginx.enabled=true",
                      "--set", "haproxy.enabled=true")
    assert result.returncode == 0, result.stderr
    docs = manifests(result.stdout)
    names = [(d["kind"], d["metadata"]["name"]) for d in docs]
    assert len(names) == len(set(names)), "two objects of one kind share a name"
    namespaced = [n for kind, n in names if kind not in ("ClusterRole", "ClusterRoleBinding", "IngressClass",
                                                         "Namespace")]
    assert max(len(n) for n in namespaced) <= 63
    assert all(n.startswith(release[:20]) for n in namespaced)
    (namespace,) = [n for kind, n in names if kind == "Namespace"]  # the controller's TLS Secret's: a DNS label
    assert len(namespace) <= 63 and namespace.startswith(f"default-{release[:20]}")


def test_thin_workers_get_the_fields_numbers_in_notes(helm, tmp_path):
    text = helm.notes(tmp_path / "thin", "--set-string", "locust.worker.cpu=500m")
    (warning,) = [line for line in text.splitlines() if line.startswith("WARNING: workers at 500m")]
    assert "5 workers at 100m gave ~230 RPS" in warning and "give each worker 1000m" in warning
    assert "WARNING: workers" not in helm.notes(tmp_path / "whole")


def secret_rules(rendered) -> list[tuple[str, dict]]:
    """(namespace, rule) of every RBAC rule that grants anything on Secrets; the release's namespace is NAMESPACE."""
    return [(role["metadata"].get("namespace", NAMESPACE), rule)
            for role in rendered.of_kind("Role") + rendered.of_kind("ClusterRole") for rule in role["rules"]
            if {"secrets", "*"} & set(rule["resources"])]


@pytest.mark.parametrize("tls, secret_namespace, secret", [
    ((), f"{NAMESPACE}-{RELEASE}-nginx-tls", f"{RELEASE}-nginx-ingress-tls"),
    (("--set", "nginx.tls.existingSecret=my-cert", "--set", "nginx.tls.secretNamespace=ingress-certs"),
     "ingress-certs", "my-cert"),
])
def test_the_ingress_controller_reads_no_secret_of_the_release(helm, tls, secret_namespace, secret):
    """No Role lets anyone read the release's Secrets (the Locust web UI's and Grafana's passwords): the NGINX
    Ingress Controller gets its own TLS Secret, by name, in a namespace of its own, and no other Secret anywhere."""
    rendered = helm.render(None, *NGINX, *MONITORING, *tls)
    assert secret_rules(rendered) == [(secret_namespace, {"apiGroups": [""], "resources": ["secrets"],
                                                          "resourceNames": [secret], "verbs": ["get"]})]
    (controller,) = rendered.get("Deployment", f"{RELEASE}-nginx-ingress")["spec"]["template"]["spec"]["containers"]
    for flag in (f"-watch-secret-namespace={secret_namespace}", "-watch-namespace=$(POD_NAMESPACE)",
                 f"-wildcard-tls-secret={secret_namespace}/{secret}",
                 f"-default-server-tls-secret={secret_namespace}/{secret}"):
        assert flag in controller["args"]
    secrets = {s["metadata"]["name"]: s["metadata"].get("namespace", NAMESPACE) for s in rendered.of_kind("Secret")}
    assert secrets[f"{RELEASE}-locust-web-auth"] == secrets[f"{RELEASE}-grafana-admin"] == NAMESPACE
    created = [n["metadata"]["name"] for n in rendered.of_kind("Namespace")]
    if tls:  # the user's Secret, in the user's namespace
        assert secret not in secrets and created == []
    else:  # generated into the namespace the chart makes for it, where no pod may run
        assert secrets[secret] == secret_namespace and created == [secret_namespace]
        labels = rendered.get("Namespace", secret_namespace)["metadata"]["labels"]
        assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
