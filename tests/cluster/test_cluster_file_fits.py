"""A plan written as an eksctl ClusterConfig makes node groups its values file fits, as the real scheduler places it.

`loadtest plan --target-rps 200000 --write-values … --write-cluster …` as a new user types it; the local cluster's
KWOK nodes are made from the written file's managed node groups (their instance type, node count, labels and taints
as written; capacity, allocatable and max pods from the catalog), kube-system gets the add-ons the plan counts, and the
values file the same plan wrote installs with nothing Pending: Locust on the generator's group, everything else on
the targets'. One install, the cluster layer's budget being tight (tests/cluster/test_values_fit.py proves each
shipped file tight as well).
"""
from __future__ import annotations

import yaml
from scheduling import assert_all_running

from loadtest import commands, paths
from loadtest.capacity import clusterfiles, profiles
from loadtest.runtime.cluster import pods

RELEASE = "lt"
RELEASE_SELECTOR = f"app.kubernetes.io/instance={RELEASE}"
WORKER_SELECTOR = f"{RELEASE_SELECTOR},app.kubernetes.io/component=locust-worker"


def test_a_200000_rps_plan_written_as_a_cluster_config_schedules_its_values_file(cluster, node_group, namespace,
                                                                                  helm, tmp_path):
    eks, values = tmp_path / "eks.yaml", tmp_path / "values.yaml"
    assert commands.main(["plan", "--target-rps", "200000", "--write-values", str(values),
                          "--write-cluster", str(eks)]) == 0
    groups = clusterfiles.read_node_groups(eks.read_text())
    written = yaml.safe_load(values.read_text())
    generator, targets = groups
    assert (generator.instance_type, targets.instance_type) == (written["locust"]["nodeType"],
                                                                written["nginx"]["nodeType"])
    # The add-ons the plan counts (DaemonSets on every node, CoreDNS), as on EKS.
    profile = profiles.eks(generator.instance_type, generator.nodes, "the plan's")
    generator_nodes = node_group(profile, groups)
    assert len(generator_nodes) == generator.nodes

    helm("install", RELEASE, str(paths.CHART), "-n", namespace, "-f", str(values), "--wait", "--timeout", "120s")
    running = assert_all_running(cluster, namespace, RELEASE_SELECTOR)  # 0 Pending, or each one with its reason
    assert len(pods(cluster, namespace, WORKER_SELECTOR)) == written["locust"]["worker"]["replicas"]
    by_node = {n["metadata"]["name"]: n["metadata"]["labels"] for n in cluster.api_get("/api/v1/nodes")["items"]}
    for pod in running:
        group = by_node[pod["spec"]["nodeName"]][profiles.NODE_GROUP_LABEL]
        locust = pod["metadata"]["labels"].get("app.kubernetes.io/name") == "locust"
        assert group == (generator.name if locust else targets.name), f"{pod['metadata']['name']} on {group}"
    helm("uninstall", RELEASE, "-n", namespace, "--wait", "--timeout", "60s")
