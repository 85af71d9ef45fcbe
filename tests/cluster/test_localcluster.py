"""The simulated node groups look like EKS to the scheduler, and the fit check explains what does not fit."""
from __future__ import annotations

import json
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
import yaml
from scheduling import assert_all_running, wait_scheduling_settled

from loadtest import commands, paths
from loadtest.capacity import profiles, sizing
from loadtest.capacity.profiles import NODE_GROUP_LABEL
from loadtest.runtime.cluster import ADDON_LABEL, COMPONENTS, pods, simulated_nodes, use_node_group
from loadtest.runtime.cluster.nodegroups import LEASES
from loadtest.units import parse_cpu_m, parse_memory_mi

RELEASE = "lt"
RELEASE_SELECTOR = f"app.kubernetes.io/instance={RELEASE}"

PROFILE = profiles.by_file("c5-xlarge.yaml")


def test_nodes_are_built_from_the_catalog(cluster, node_group):
    names = node_group(PROFILE)
    shape = PROFILE.shape
    group = f"{NODE_GROUP_LABEL}={PROFILE.file.removesuffix('.yaml')}"
    nodes = {n["metadata"]["name"]: n for n in cluster.api_get("/api/v1/nodes", labelSelector=group)["items"]}
    assert sorted(nodes) == sorted(names) and len(names) == PROFILE.nodes
    for i, name in enumerate(sorted(names)):
        node = nodes[name]
        expected_labels = {
            "node.kubernetes.io/instance-type": "c5.xlarge",
            "kubernetes.io/arch": "amd64",
            "kubernetes.io/os": "linux",
            "kubernetes.io/hostname": name,
            "topology.kubernetes.io/zone": sizing.ZONES[i],
        }
        assert expected_labels.items() <= node["metadata"]["labels"].items()
        capacity, allocatable = node["status"]["capacity"], node["status"]["allocatable"]
        assert (parse_cpu_m(capacity["cpu"]), parse_memory_mi(capacity["memory"])) == (shape.cpu_m, shape.memory_mi)
        assert (parse_cpu_m(allocatable["cpu"]), parse_memory_mi(allocatable["memory"])) == \
            (shape.allocatable_cpu_m, shape.allocatable_memory_mi)
        assert capacity["pods"] == allocatable["pods"] == str(shape.max_pods)


def test_every_node_carries_the_daemonset_overhead_the_sizing_assumes(cluster, node_group):
    names = node_group(PROFILE)
    system_pods = pods(cluster, "kube-system", ADDON_LABEL)
    assert all(p["status"]["phase"] == "Running" for p in system_pods)
    for name in names:
        requested = sum(parse_cpu_m(c["resources"]["requests"]["cpu"])
                        for p in system_pods if p["spec"]["nodeName"] == name and not _is_cluster_pod(p)
                        for c in p["spec"]["containers"])
        assert requested == PROFILE.plan.daemonset_cpu_m, name
    coredns = [p for p in system_pods if _is_cluster_pod(p)]
    assert len(coredns) == sum(p.replicas for p in PROFILE.cluster_pods)


def test_add_ons_go_on_a_node_only_after_its_lease_is_made(cluster, node_group):
    """A node group switch makes each node's lease, then the add-ons (why: wait_nodes_ready). The apiserver's
    events, in etcd's order, show every add-on pod meant for a node after the lease made for it, and the lease is
    owned by that node."""
    node_group(PROFILE)
    since = {path: cluster.api_get(path)["metadata"]["resourceVersion"] for path in (LEASES, ADDON_PODS)}
    with ThreadPoolExecutor(2) as pool:
        watches = {path: pool.submit(_events, cluster, path, rv) for path, rv in since.items()}
        use_node_group(cluster, PROFILE)  # the same names again, as when a test switches back to a node group
        lease_events, pod_events = watches[LEASES].result(), watches[ADDON_PODS].result()
    nodes = {n["metadata"]["name"]: n["metadata"]["uid"] for n in simulated_nodes(cluster)}
    lease_made = {lease["metadata"]["name"]: int(lease["metadata"]["resourceVersion"])
                  for kind, lease in lease_events if kind == "ADDED"}
    assert sorted(lease_made) == sorted(nodes), "every node made anew gets a lease made anew"
    made = {pod["metadata"]["uid"] for kind, pod in pod_events if kind == "ADDED"}  # not the old nodes' pods
    first_meant = {}
    for _, pod in pod_events:
        node = _node_meant(pod)
        if node in nodes and pod["metadata"]["uid"] in made:
            first_meant.setdefault((pod["metadata"]["name"], node), int(pod["metadata"]["resourceVersion"]))
    assert first_meant, "the switch made no add-on pods"
    early = [f"{pod} on {node}" for (pod, node), rv in first_meant.items() if rv < lease_made[node]]
    assert early == [], "add-on pods meant for a node before its lease was made"
    leases = {lease["metadata"]["name"]: lease for lease in cluster.api_get(LEASES)["items"]}
    for name, uid in nodes.items():
        assert [o["uid"] for o in leases[name]["metadata"].get("ownerReferences", [])] == [uid], name


def test_the_addons_stay_off_a_node_no_group_simulates(cluster, node_group):
    """A real node beside the simulated ones (`loadtest cluster up --real-node`) runs its own kube-system."""
    other = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "not-simulated"},
             "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                        "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}
    node_group(PROFILE)
    cluster.apply([other])
    try:
        use_node_group(cluster, PROFILE)  # the add-ons made anew with that node there
        meant = [p["metadata"]["name"] for p in pods(cluster, "kube-system", ADDON_LABEL)
                 if _node_meant(p) == "not-simulated"]
        assert meant == []
    finally:
        cluster.kubectl("delete", "node", "not-simulated", "--wait=true")
        cluster.kubectl("delete", "pod", "-n", "kube-system", "-l", ADDON_LABEL, "--field-selector",
                        "spec.nodeName=not-simulated", "--force", "--grace-period=0", "--ignore-not-found")


ADDON_PODS = f"/api/v1/namespaces/kube-system/pods?labelSelector={ADDON_LABEL}"


def _events(cluster, path: str, since: str, seconds: int = 15) -> list[tuple[str, dict]]:
    """The apiserver's events on `path` after resourceVersion `since`, for `seconds`, in their order."""
    separator = "&" if "?" in path else "?"
    url = f"{cluster.api.server}{path}{separator}watch=1&resourceVersion={since}&timeoutSeconds={seconds}"
    with urllib.request.urlopen(url, context=cluster.api.tls, timeout=seconds + 15) as stream:
        return [(event["type"], event["object"]) for event in map(json.loads, stream)]


def _node_meant(pod: dict) -> str | None:
    """The node a pod is bound to, or the one its DaemonSet means it for (the scheduler binds it there)."""
    if node := pod["spec"].get("nodeName"):
        return node
    terms = pod["spec"].get("affinity", {}).get("nodeAffinity", {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution", {}).get("nodeSelectorTerms", [])
    names = [v for t in terms for f in t.get("matchFields", []) if f["key"] == "metadata.name" for v in f["values"]]
    return names[0] if names else None


def _is_cluster_pod(pod: dict) -> bool:
    return any(ref["kind"] == "ReplicaSet" for ref in pod["metadata"].get("ownerReferences", []))


def _one_worker_too_many(values: dict, plan: sizing.WorkerPlan) -> None:
    values["locust"]["worker"]["replicas"] = plan.replicas + 1


def _workers_bigger_than_a_node(values: dict, plan: sizing.WorkerPlan) -> None:
    values["locust"]["worker"]["cpu"] = f"{plan.free_cpu_m + 1}m"


# A worker bigger than a node's free CPU on a 2-vCPU type: on larger types that CPU is above the 2 cores the
# schema allows a worker, and helm refuses it before anything is scheduled.
@pytest.mark.parametrize("profile, oversize", [(PROFILE, _one_worker_too_many),
                                               (profiles.by_file("c5-large.yaml"), _workers_bigger_than_a_node)],
                         ids=["one-worker-too-many", "worker-cpu-too-big"])
def test_fit_check_names_pending_pods_and_the_scheduler_reason(profile, oversize, cluster, node_group, namespace,
                                                                helm, tmp_path):
    node_group(profile)
    values = yaml.safe_load((paths.VALUES / profile.file).read_text())
    oversize(values, profile.plan)
    oversized = tmp_path / "oversized.yaml"
    oversized.write_text(yaml.safe_dump(values))

    helm("install", RELEASE, str(paths.CHART), "-n", namespace, "-f", str(oversized))
    settled = wait_scheduling_settled(cluster, namespace, RELEASE_SELECTOR)
    pending = [p["metadata"]["name"] for p in settled if p["status"].get("phase") != "Running"]
    assert pending

    with pytest.raises(AssertionError) as failure:
        assert_all_running(cluster, namespace, RELEASE_SELECTOR)
    message = str(failure.value)
    assert f"{len(pending)} of {len(settled)} pods in namespace {namespace} are not Running" in message
    for name in pending:
        assert name in message
    assert message.count("Insufficient cpu") == len(pending), message
    helm("uninstall", RELEASE, "-n", namespace)


def test_cli_status_lists_components_and_nodes(cluster, node_group, capsys):
    names = node_group(PROFILE)
    assert commands.main(["cluster", "status", "--state-dir", str(cluster.state_dir)]) == 0
    out = capsys.readouterr().out
    for component in COMPONENTS:
        assert f"{component} " in out and "not running" not in out
    for name in names:
        assert name in out


def test_cli_nodes_rejects_an_unknown_node_type(cluster, capsys):
    assert commands.main(["cluster", "nodes", "c9.huge", "--state-dir", str(cluster.state_dir)]) == 2
    assert "unknown node type 'c9.huge'" in capsys.readouterr().err
