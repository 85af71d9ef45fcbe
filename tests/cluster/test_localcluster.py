"""The simulated node groups look like EKS to the scheduler, and the fit check explains what does not fit."""
from __future__ import annotations

import pytest
import yaml

from loadtest import commands, paths, profiles, sizing
from loadtest.runtime.cluster import ADDON_LABEL, COMPONENTS, NODE_GROUP_LABEL, pods
from scheduling import assert_all_running, wait_scheduling_settled
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


def _is_cluster_pod(pod: dict) -> bool:
    return any(ref["kind"] == "ReplicaSet" for ref in pod["metadata"].get("ownerReferences", []))


def _one_worker_too_many(values: dict, plan: sizing.WorkerPlan) -> None:
    values["locust"]["worker"]["replicas"] = plan.replicas + 1


def _workers_bigger_than_a_node(values: dict, plan: sizing.WorkerPlan) -> None:
    values["locust"]["worker"]["cpu"] = f"{plan.free_cpu_m + 1}m"


@pytest.mark.parametrize("oversize", [_one_worker_too_many, _workers_bigger_than_a_node],
                         ids=["one-worker-too-many", "worker-cpu-too-big"])
def test_fit_check_names_pending_pods_and_the_scheduler_reason(oversize, cluster, node_group, namespace, helm,
                                                                tmp_path):
    node_group(PROFILE)
    values = yaml.safe_load((paths.VALUES / PROFILE.file).read_text())
    oversize(values, PROFILE.plan)
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
