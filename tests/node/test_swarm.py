"""An autostarted swarm on the real node, watched as a user watches it: every container started by the kubelet from
the images built here and ready by its own probes, and `helm test` passes; the in-cluster Prometheus scrapes the
master, kube-state-metrics and the kubelet's cAdvisor; every dashboard panel has data; the pods send on through a
restart of containerd and of the kubelet; and when the run stops, Locust's count agrees with the target's own. The
tests share one release and run in order. (The used-by line as typed, an interactive release, helm install and helm
test, is docs/cluster.md's real-node block in the journeys layer; worker CPU tuned with `helm upgrade` beside a CPU
hog is test_tune's, through `loadtest tune --apply`.)"""
from __future__ import annotations

import json
import time

import pytest
from conftest import WINDOW, Prometheus, aggregated, haproxy_served, install, master, wait_ready
from helpers import wait_for

from loadtest.generate import dashboards, images
from loadtest.runtime.cluster import pods

# Series no query can have on this machine, and why.
NGINX_TARGET = ("the NGINX target (the NGINX Ingress Controller) exports these, and it has no image here (its Go "
                "module is refused): the target is HAProxy, whose query of the panel has data")
NO_DATA_HERE = {"nginx_connections_active": NGINX_TARGET, "nginx_ingress_nginx_": NGINX_TARGET,
                "nginx_ingress_controller_": NGINX_TARGET}
PANEL_QUERIES = dashboards.all_panel_queries()
USERS = 20


@pytest.fixture(scope="module")
def swarm(cluster, module_namespace, helm) -> Prometheus:
    namespace = module_namespace
    install(helm, namespace, "--set", "haproxy.enabled=true", "--set", "locust.target=haproxy",
            "--set", "locust.mode=autostart", "--set", f"locust.autostart.users={USERS}",
            "--set", f"locust.autostart.spawnRate={USERS}")
    print(f"install -> all containers ready: {wait_ready(cluster, namespace):.0f} s")
    # A pod no node can take, as when a worker too many is asked for: the "Pending pods" panels show it.
    cluster.kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(unschedulable_pod()))
    return Prometheus(cluster, namespace)


def unschedulable_pod() -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "too-big"},
            "spec": {"securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
                     "containers": [{"name": "pause", "image": images.PAUSE,
                                     "resources": {"requests": {"cpu": "64"}},
                                     "securityContext": {"allowPrivilegeEscalation": False,
                                                         "capabilities": {"drop": ["ALL"]}}}]}}


def test_every_container_started_and_helm_test_passes(swarm, module_namespace, helm):
    out = helm("test", "lt", "-n", module_namespace, "--timeout", "180s")
    # The test pods ran for real and passed: the master's web UI counted every worker and the target answered
    # (lt-test-locust), the backend served its 1 KB payload (lt-test-backend); each exits non-zero otherwise.
    assert out.count("Phase:          Succeeded") == 2, out


# From inside a pod: connect to an address, report how the attempt ended and how long it took.
CONNECT = """
import socket, sys, time
started = time.monotonic()
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=20).close()
    outcome = "connected"
except OSError as e:
    outcome = type(e).__name__
print(outcome, round(time.monotonic() - started, 2))
"""


def test_a_pods_connect_that_kube_proxy_cannot_translate_is_refused_at_once(cluster, swarm, module_namespace):
    """A Service with no ready endpoint, and an address off the node: a pod's connect fails within a second, as in a
    cluster, instead of hanging until its SYN retries give up (a worker's first connect to a master not ready yet
    did, for about 2 min); nothing is routed off this machine."""
    cluster.kubectl("apply", "-n", module_namespace, "-f", "-", input=json.dumps(
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "no-endpoints"},
         "spec": {"selector": {"app": "no-such-pod"}, "ports": [{"port": 80}]}}))
    address = cluster.kubectl("get", "service", "-n", module_namespace, "no-endpoints",
                              "-o", "jsonpath={.spec.clusterIP}")
    for host in (address, "203.0.113.99"):  # TEST-NET-3: documentation only, never a host
        out = cluster.kubectl("exec", "-n", module_namespace, "deploy/lt-locust-worker", "--", "python3", "-c",
                              CONNECT, host, "80")
        outcome, seconds = out.split()
        assert outcome != "connected" and float(seconds) < 2, (host, out)


def test_workers_master_kube_state_metrics_and_cadvisor_are_scraped(swarm, module_namespace):
    namespace = module_namespace
    # The worker connected and runs users; Prometheus scrapes the master (through the Service's pod).
    swarm.wait(f'locust_workers{{namespace="{namespace}",state="running"}}', lambda v: v == 1)
    swarm.wait(f'sum(rate(locust_requests_total{{namespace="{namespace}"}}{WINDOW}))', lambda v: v and v > 10)
    # kube-state-metrics, and the real kubelet's cAdvisor for the worker's container.
    swarm.wait(f'kube_pod_container_resource_limits{{namespace="{namespace}",resource="cpu",container="worker"}}',
               lambda v: v == 0.5)
    worker = f'namespace="{namespace}",pod=~"lt-locust-worker-.*",container="worker"'
    swarm.wait(f"rate(container_cpu_usage_seconds_total{{{worker}}}{WINDOW})", lambda v: v and v > 0.05)
    swarm.wait(f"container_cpu_cfs_throttled_periods_total{{{worker}}}", lambda v: v is not None)


@pytest.mark.parametrize("board, panel, expr", PANEL_QUERIES, ids=[f"{b}: {p}" for b, p, _ in PANEL_QUERIES])
def test_dashboard_panel_has_data(swarm, module_namespace, board, panel, expr):
    promql = dashboards.resolve(expr, module_namespace, "lt")
    if why := next((why for series, why in NO_DATA_HERE.items() if series in expr), None):
        # Prometheus runs the query (valid PromQL); its series cannot exist here.
        assert swarm.query(promql) == [], why
        return
    if dashboards.needs_open_model(expr):
        # This swarm is the closed model, which exports none of the open model's series: the panel is empty, as it
        # is for a user's closed-model run. test_open_model_node.py checks these panels with a rate.
        assert swarm.query(promql) == [], promql
        return
    swarm.wait_for_data(promql, f"{board} / {panel}")


def containers(cluster, namespace: str) -> dict[str, tuple[str, int, bool]]:
    """Each container of the namespace: its container ID, restart count and readiness."""
    return {f"{pod['metadata']['name']}/{c['name']}": (c.get("containerID"), c["restartCount"], c["ready"])
            for pod in pods(cluster, namespace) for c in pod["status"].get("containerStatuses", [])}


def test_the_pods_send_on_through_a_containerd_and_a_kubelet_restart(cluster, swarm, module_namespace):
    """containerd, then the kubelet, stopped and started again mid-run (a node's upgrade, a crash of either): the
    containers run on, none is started again, and the requests keep coming. The next test holds Locust's count of
    the whole run, restarts and all, to HAProxy's."""
    web = master(cluster, module_namespace)
    before = containers(cluster, module_namespace)
    for component in ("containerd", "kubelet"):
        counted = aggregated(web)["num_requests"]
        started = time.monotonic()
        cluster.node.restart(component)
        print(f"{component} restarted and serving in {time.monotonic() - started:.1f} s")
        wait_for(f"requests counted after {component} came back", lambda: aggregated(web)["num_requests"], 30,
                 every=1, until=lambda count: count > counted + 100)
    # The same containers, none started again, all ready by their probes (the kubelet probes them afresh).
    wait_for("every container as it was before", lambda: containers(cluster, module_namespace), 60, every=1,
             until=lambda now: now == before)
    assert web.status()["state"] == "running"


def test_locust_and_the_target_count_the_same_requests(cluster, swarm, module_namespace):
    web = master(cluster, module_namespace)
    web.stop()
    # Stopped, the worker's last report is in (loadtest_metrics sends it before the worker answers the stop).
    wait_for("the run stops", lambda: web.status()["state"] == "stopped", 30)
    total = aggregated(web)["num_requests"]
    served = haproxy_served(cluster, module_namespace)
    print(f"Locust counted {total} requests, HAProxy {served:.0f}")
    assert total > 1000
    assert abs(served - total) <= 0.005 * total
