"""Every values file fits the node groups it is sized for, as the real scheduler places it, and tightly; installed as a
registry user installs it.

The chart is published by scripts/publish-chart to a real OCI registry on 127.0.0.1 and pulled into a folder with
nothing from the checkout; every install below is `helm install lt oci://…/loadtest --version X -f
loadtest/values/<file>`, the node-type file from the pulled chart. For each values/<file>: its node group (catalog
capacity and allocatable, EKS DaemonSets, CoreDNS) and, for a node type's file, the target node group with as many nodes
as its header states; a restricted namespace, `helm install --wait`: all pods Running (the backend, both targets and the
monitoring included), Locust's on the generator nodes and the others on the target nodes, requesting there what the
header counts; the planned workers; `helm test` passes; one worker more stays Pending for lack of CPU; `helm uninstall`
leaves nothing behind.
"""
from __future__ import annotations

import re
import subprocess

import pytest
import yaml
from helpers import manifests, wait_for
from registry import publish
from scheduling import assert_all_running, failed_scheduling_events, wait_scheduling_settled

from loadtest import paths
from loadtest.capacity import profiles
from loadtest.runtime import tune
from loadtest.capacity.profiles import NODE_GROUP_LABEL
from loadtest.runtime.cluster import pods

RELEASE = "lt"
RELEASE_SELECTOR = f"app.kubernetes.io/instance={RELEASE}"

VALUES_FILES = sorted(p.name for p in paths.VALUES.glob("*.yaml"))
WORKER_SELECTOR = f"{RELEASE_SELECTOR},app.kubernetes.io/component=locust-worker"
# Kinds a release may leave behind; helm's own release record is a Secret too, but not labelled with the instance.
RELEASE_KINDS = "pods,services,configmaps,secrets,deployments"


def planned_workers(values_file: str) -> int:
    return yaml.safe_load((paths.VALUES / values_file).read_text())["locust"]["worker"]["replicas"]


def header_target_group(values_file: str) -> tuple[int, str] | None:
    """(nodes, node type) of the target node group the file's header states, None if it states none."""
    found = re.search(r"^# Target node group: (\d+) x ([\w.]+):", (paths.VALUES / values_file).read_text(), re.M)
    return (int(found.group(1)), found.group(2)) if found else None


def leftovers(cluster, namespace: str) -> list[str]:
    out = cluster.kubectl("get", RELEASE_KINDS, "-n", namespace, "-l", RELEASE_SELECTOR, "-o", "name")
    return out.split()


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    yield from publish(tmp_path_factory.mktemp("registry"))


def test_there_are_values_files():
    assert VALUES_FILES, f"no values files in {paths.VALUES}"


def test_the_registry_serves_the_chart_with_its_readme_and_node_type_files(published, helm):
    readme = helm("show", "readme", *published.install_args())
    assert readme.strip() == (paths.CHART / "README.md").read_text().strip()
    assert f"Version: {published.version} ·" in readme and "| locust.worker.replicas | int |" in readme
    chart = yaml.safe_load(helm("show", "chart", *published.install_args()))
    assert chart["version"] == published.version and chart["kubeVersion"] and chart["annotations"]
    shipped = sorted(p.name for p in (published.pulled / "values").glob("*.yaml"))
    assert shipped == VALUES_FILES
    assert all((published.pulled / "values" / f).read_text() == (paths.VALUES / f).read_text() for f in shipped)
    assert (published.pulled / "CHANGELOG.md").is_file()
    assert not list(published.pulled.rglob("__pycache__")), "the package carries build output"


@pytest.mark.parametrize("values_file", VALUES_FILES)
def test_values_file_fits_its_node_type(values_file, cluster, node_group, namespace, helm, published):
    profile = profiles.by_file(values_file)
    planned = planned_workers(values_file)
    assert planned == profile.plan.replicas, "values file is stale: run `loadtest values`"
    nodes = node_group(profile)
    values = str(published.pulled / "values" / values_file)
    stated = header_target_group(values_file)
    target_nodes = [n["metadata"]["name"] for n in
                    cluster.api_get("/api/v1/nodes", labelSelector=f"{NODE_GROUP_LABEL}=targets")["items"]]
    if profile.target_node_type:
        assert stated == (profile.target_nodes, profile.target_node_type), "values file is stale: run `loadtest values`"
        assert len(target_nodes) == profile.target_nodes, "the target node group must have the nodes the header states"
    else:
        assert stated is None and not target_nodes

    helm("install", RELEASE, *published.install_args(), "-n", namespace, "-f", values, "--wait", "--timeout", "120s")
    running = assert_all_running(cluster, namespace, RELEASE_SELECTOR)
    assert len(pods(cluster, namespace, WORKER_SELECTOR)) == planned
    locust = [p for p in running if p["metadata"]["labels"].get("app.kubernetes.io/name") == "locust"]
    assert {p["spec"]["nodeName"] for p in locust} <= set(nodes), "Locust must run on the generator node group"
    if profile.target_node_type:
        others = [p for p in running if p not in locust]
        components = {p["metadata"]["labels"]["app.kubernetes.io/component"] for p in others}
        assert {p.name for p in profile.target_plan.pods} == components, "the header counts other pods than run"
        assert {"nginx-ingress", "haproxy", "backend", "prometheus"} <= components
        misplaced = sorted(p["metadata"]["name"] for p in others if p["spec"]["nodeName"] not in target_nodes)
        assert not misplaced, f"{misplaced} must run on the target node group"
        requested = sum(tune.pod_request(p).cpu_m for p in others)
        assert requested == profile.target_plan.pods_cpu_m, "the header's sum differs from what the pods request"

    helm("test", RELEASE, "-n", namespace, "--timeout", "60s")

    # Tight, not lucky: one worker more than planned finds no node with the CPU for it.
    helm("upgrade", RELEASE, *published.install_args(), "-n", namespace, "-f", values,
         "--set", f"locust.worker.replicas={planned + 1}")
    settled = wait_scheduling_settled(cluster, namespace, RELEASE_SELECTOR)
    pending = [p["metadata"]["name"] for p in settled if p["status"].get("phase") != "Running"]
    assert len(pending) == 1, f"expected exactly one Pending pod with {planned + 1} workers, got {pending}"
    assert pending[0] in {p["metadata"]["name"] for p in pods(cluster, namespace, WORKER_SELECTOR)}
    # Events are recorded asynchronously.
    wait_for(f"a FailedScheduling event of {pending[0]} for Insufficient cpu",
             lambda: failed_scheduling_events(cluster, namespace, pending[0]), 15, every=0.2,
             until=lambda messages: any("Insufficient cpu" in m for m in messages))

    helm("uninstall", RELEASE, "-n", namespace, "--wait", "--timeout", "60s")
    # Pods go after their Deployment, through the garbage collector and KWOK.
    wait_for("nothing of the release left", lambda: leftovers(cluster, namespace), 30, until=lambda left: left == [])


def strict_apply(cluster, namespace: str, objects: list[dict], *dry_run: str) -> None:
    result = subprocess.run(
        cluster.kubectl_argv("apply", "-n", namespace, *dry_run, "--validate=strict", "-f", "-"),
        input=yaml.safe_dump_all(objects), capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 0, result.stderr
    # Warnings include Pod Security violations of Deployments, which are only enforced on their pods.
    assert "Warning" not in result.stderr, result.stderr


@pytest.mark.parametrize("values_file", VALUES_FILES)
def test_rendered_chart_passes_strict_server_side_validation(values_file, cluster, namespace, helm):
    manifest = helm("template", RELEASE, str(paths.CHART), "-n", namespace, "-f", str(paths.VALUES / values_file))
    docs = manifests(manifest)
    # The NGINX Ingress Controller's TLS Secret lives in a namespace the release creates, which a dry run would not:
    # the chart's Namespace objects are applied for real first (strictly too), and go at the end.
    namespaces = [d for d in docs if d["kind"] == "Namespace"]
    by_namespace: dict[str, list[dict]] = {}
    for d in docs:
        if d["kind"] != "Namespace":
            by_namespace.setdefault(d["metadata"].get("namespace", namespace), []).append(d)
    try:
        if namespaces:
            strict_apply(cluster, namespace, namespaces)
        for objects_namespace, objects in by_namespace.items():
            strict_apply(cluster, objects_namespace, objects, "--dry-run=server")
    finally:
        for d in namespaces:
            cluster.kubectl("delete", "namespace", d["metadata"]["name"], "--ignore-not-found", "--wait=false")
