"""Cluster capacity from kube-state-metrics (built from the pinned Go module) against the local control plane.

The chart is installed with its monitoring (mode inChart) into a restricted namespace of a c5.xlarge node group, with
one worker more than the nodes hold. kube-state-metrics then runs on this machine with the arguments of the chart's
own Deployment, Prometheus scrapes it with the chart's own scrape job and evaluates the saturation rules, and the
capacity panels of the dashboards are asked for data: nodes CPU-requested to the brim, the worker left Pending,
WorkersMissing pending. cAdvisor needs real kubelets (KWOK has none), so its panels stay unverified here.
"""
from __future__ import annotations

import json
import subprocess
import time
import urllib.parse
import urllib.request

import pytest
import yaml
from helpers import wait_for
from scheduling import wait_scheduling_settled

from loadtest import paths
from loadtest.capacity import profiles
from loadtest.generate import dashboards
from loadtest.runtime.processes import free_port, stop

RELEASE = "lt"
PROFILE = profiles.by_file("c5-xlarge.yaml")
SCRAPE_TIMEOUT_S = 60


def query(url: str, expr: str) -> list[dict]:
    with urllib.request.urlopen(f"{url}/api/v1/query?{urllib.parse.urlencode({'query': expr})}", timeout=10) as r:
        body = json.load(r)
    assert body["status"] == "success", body
    return body["data"]["result"]


def start(argv: list[str], log) -> subprocess.Popen:
    return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def capacity(cluster, node_group, helm, tmp_path_factory):
    """Prometheus URL once it has scraped kube-state-metrics about the installed release."""
    tmp_path = tmp_path_factory.mktemp("kube-state-metrics")
    # A namespace of this module's own (the conftest's one lives for one test), restricted as in production.
    namespace = "kube-state-metrics-capacity"
    cluster.kubectl("create", "namespace", namespace)
    cluster.kubectl("label", "namespace", namespace, "pod-security.kubernetes.io/enforce=restricted")
    nodes = node_group(PROFILE)
    replicas = PROFILE.plan.replicas + 1
    helm("install", RELEASE, str(paths.CHART), "-n", namespace, "-f", str(paths.VALUES / PROFILE.file),
         "--set", "monitoring.enabled=true", "--set", f"locust.worker.replicas={replicas}")
    wait_scheduling_settled(cluster, namespace, f"app.kubernetes.io/instance={RELEASE}")

    deployment = cluster.api_get(f"/apis/apps/v1/namespaces/{namespace}/deployments/{RELEASE}-kube-state-metrics")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    ksm_port = free_port()
    ksm_args = [a for a in container["args"] if not a.startswith(("--port=", "--telemetry-port="))]
    ksm_argv = [str(paths.BIN / "kube-state-metrics"), *ksm_args, f"--kubeconfig={cluster.kubeconfig}",
                "--host=127.0.0.1", f"--port={ksm_port}", "--telemetry-host=127.0.0.1",
                f"--telemetry-port={free_port()}"]

    config = cluster.api_get(f"/api/v1/namespaces/{namespace}/configmaps/{RELEASE}-prometheus")["data"]
    (job,) = [j for j in yaml.safe_load(config["prometheus.yml"])["scrape_configs"]
              if j["job_name"] == "kube-state-metrics"]
    job["static_configs"] = [{"targets": [f"127.0.0.1:{ksm_port}"]}]
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump({
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(paths.RULES_FILE)], "scrape_configs": [job]}))
    prometheus_port = free_port()
    prometheus_argv = ["prometheus", f"--config.file={tmp_path / 'prometheus.yml'}",
                       f"--storage.tsdb.path={tmp_path / 'data'}", f"--web.listen-address=127.0.0.1:{prometheus_port}"]

    url = f"http://127.0.0.1:{prometheus_port}"
    with open(tmp_path / "kube-state-metrics.log", "wb") as ksm_log, open(tmp_path / "prometheus.log", "wb") as log:
        procs = [start(ksm_argv, ksm_log), start(prometheus_argv, log)]
    try:
        def scraped() -> list:
            assert all(p.poll() is None for p in procs), f"kube-state-metrics or Prometheus exited; logs in {tmp_path}"
            return query(url, f'kube_deployment_spec_replicas{{namespace="{namespace}"}}')

        wait_for(f"kube-state-metrics data in Prometheus (logs in {tmp_path})", scraped, SCRAPE_TIMEOUT_S, every=1,
                 ignoring=(OSError,))
        time.sleep(3)  # a few rule evaluations
        yield url, namespace, nodes, replicas
    finally:
        for proc in procs:
            stop(proc)
        helm("uninstall", RELEASE, "-n", namespace)
        cluster.kubectl("delete", "namespace", namespace, "--wait=false")


CAPACITY_QUERIES = [(board, title, expr) for board, title, expr in dashboards.all_panel_queries()
                    if board in ("Cluster capacity", "Load test overview") and "kube_" in expr]


def test_capacity_panels_return_data(capacity):
    url, namespace, _, _ = capacity
    unverified = []
    for board, title, expr in CAPACITY_QUERIES:
        result = query(url, dashboards.resolve(expr, namespace, RELEASE))
        if not result and "container_" in expr:
            unverified.append(f"{board} / {title}")  # cAdvisor: no kubelets under KWOK (the node layer has one)
            continue
        assert result, f"{board} / {title}: no data for {expr}"
    assert unverified == ["Cluster capacity / Node CPU used"]


def test_generator_nodes_are_requested_to_the_brim_and_a_worker_waits(capacity):
    """The "Node CPU requested" panel shows nodes with less room than one more worker requests."""
    url, namespace, nodes, replicas = capacity
    (requested,) = [q for b, t, q in CAPACITY_QUERIES if (b, t) == ("Cluster capacity", "Node CPU requested")]
    share = {s["metric"]["node"]: float(s["value"][1]) for s in query(url, requested)}
    cores = {s["metric"]["node"]: float(s["value"][1])
             for s in query(url, 'kube_node_status_allocatable{resource="cpu"}')}
    worker_cores = PROFILE.plan.worker_cpu_m / 1000
    assert set(nodes) <= set(share)
    assert all(cores[n] * (1 - share[n]) < worker_cores for n in nodes), (share, cores)
    pending = query(url, f'sum(kube_pod_status_phase{{namespace="{namespace}", phase="Pending"}})')
    assert float(pending[0]["value"][1]) >= 1
    wanted = query(url, f'kube_deployment_spec_replicas{{namespace="{namespace}", deployment="{RELEASE}-locust-worker"}}')
    assert float(wanted[0]["value"][1]) == replicas


def test_workers_missing_alert_sees_the_pending_worker(capacity):
    url, _, _, _ = capacity
    alerts = query(url, f'ALERTS{{alertname="WorkersMissing", release="{RELEASE}"}}')
    assert alerts and alerts[0]["metric"]["alertstate"] in ("pending", "firing"), alerts
