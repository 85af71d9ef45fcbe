"""Every values file fits the node group it is sized for, as the real scheduler places it, and tightly.

For each values/<file>: its node group (catalog capacity and allocatable, EKS DaemonSets, CoreDNS), a restricted
namespace, `helm install --wait`: all pods Running and the planned workers; one worker more stays Pending for lack
of CPU; `helm test` passes; `helm uninstall` leaves nothing behind.
"""
from __future__ import annotations

import subprocess
import time

import pytest
import yaml

from loadtest import paths, profiles
from loadtest.runtime.cluster import pods
from scheduling import assert_all_running, failed_scheduling_events, wait_scheduling_settled

RELEASE = "lt"
RELEASE_SELECTOR = f"app.kubernetes.io/instance={RELEASE}"

VALUES_FILES = sorted(p.name for p in paths.VALUES.glob("*.yaml"))
WORKER_SELECTOR = f"{RELEASE_SELECTOR},app.kubernetes.io/component=locust-worker"
# Kinds a release may leave behind; helm's own release record is a Secret too, but not labelled with the instance.
RELEASE_KINDS = "pods,services,configmaps,secrets,deployments"


def planned_workers(values_file: str) -> int:
    return yaml.safe_load((paths.VALUES / values_file).read_text())["locust"]["worker"]["replicas"]


def wait_for_event(cluster, namespace: str, pod: str, text: str, timeout: float = 15) -> list[str]:
    """FailedScheduling messages for the pod once one contains text (events are recorded asynchronously)."""
    deadline = time.monotonic() + timeout
    while True:
        messages = failed_scheduling_events(cluster, namespace, pod)
        if any(text in m for m in messages) or time.monotonic() > deadline:
            return messages
        time.sleep(0.2)


def leftovers(cluster, namespace: str) -> list[str]:
    out = cluster.kubectl("get", RELEASE_KINDS, "-n", namespace, "-l", RELEASE_SELECTOR, "-o", "name")
    return out.split()


def test_there_are_values_files():
    assert VALUES_FILES, f"no values files in {paths.VALUES}"


@pytest.mark.parametrize("values_file", VALUES_FILES)
def test_values_file_fits_its_node_type(values_file, cluster, node_group, namespace, helm):
    profile = profiles.by_file(values_file)
    planned = planned_workers(values_file)
    assert planned == profile.plan.replicas, "values file is stale: run `loadtest values`"
    nodes = node_group(profile)
    values = str(paths.VALUES / values_file)

    helm("install", RELEASE, str(paths.CHART), "-n", namespace, "-f", values,
         "--wait", "--timeout", "120s")
    running = assert_all_running(cluster, namespace, RELEASE_SELECTOR)
    assert len(pods(cluster, namespace, WORKER_SELECTOR)) == planned
    workers = pods(cluster, namespace, WORKER_SELECTOR)
    assert {p["spec"]["nodeName"] for p in workers} <= set(nodes), "workers must run on the generator node group"
    if profile.target_node_type:
        others = [p for p in running if p["metadata"]["labels"].get("app.kubernetes.io/name") != "locust"]
        assert others and not {p["spec"]["nodeName"] for p in others} & set(nodes), \
            "backend pods must stay off the generator nodes"

    # Tight, not lucky: one worker more than planned finds no node with the CPU for it.
    helm("upgrade", RELEASE, str(paths.CHART), "-n", namespace, "-f", values,
         "--set", f"locust.worker.replicas={planned + 1}")
    settled = wait_scheduling_settled(cluster, namespace, RELEASE_SELECTOR)
    pending = [p["metadata"]["name"] for p in settled if p["status"].get("phase") != "Running"]
    assert len(pending) == 1, f"expected exactly one Pending pod with {planned + 1} workers, got {pending}"
    assert pending[0] in {p["metadata"]["name"] for p in pods(cluster, namespace, WORKER_SELECTOR)}
    messages = wait_for_event(cluster, namespace, pending[0], "Insufficient cpu")
    assert any("Insufficient cpu" in m for m in messages), f"FailedScheduling events of {pending[0]}: {messages}"

    helm("rollback", RELEASE, "-n", namespace, "--wait", "--timeout", "60s")
    assert_all_running(cluster, namespace, RELEASE_SELECTOR)
    assert len(pods(cluster, namespace, WORKER_SELECTOR)) == planned

    helm("test", RELEASE, "-n", namespace, "--timeout", "60s")

    helm("uninstall", RELEASE, "-n", namespace, "--wait", "--timeout", "60s")
    deadline = time.monotonic() + 30
    while leftovers(cluster, namespace) and time.monotonic() < deadline:
        time.sleep(0.5)  # pods go after their Deployment, through the garbage collector and KWOK
    assert leftovers(cluster, namespace) == []


@pytest.mark.parametrize("values_file", VALUES_FILES)
def test_rendered_chart_passes_strict_server_side_validation(values_file, cluster, namespace, helm):
    manifest = helm("template", RELEASE, str(paths.CHART), "-n", namespace, "-f", str(paths.VALUES / values_file))
    result = subprocess.run(
        cluster.kubectl_argv("apply", "-n", namespace, "--dry-run=server", "--validate=strict", "-f", "-"),
        input=manifest, capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 0, result.stderr
    # Warnings include Pod Security violations of Deployments, which are only enforced on their pods.
    assert "Warning" not in result.stderr, result.stderr
